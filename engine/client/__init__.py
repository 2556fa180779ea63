"""The async marketplace client.

One method per endpoint (:class:`MarketClient`), arguments checked against the documented
limits before anything is sent, answers parsed into :mod:`engine.models`, and every failure
translated into the :mod:`engine` error tree. The API key lives in an :class:`APIKey` and
is added to each request by :class:`KeyInjectingTransport` just before it is sent, so no
log line, exception or repr ever shows it.
"""

from ._bulk import BulkItem, BulkItemResult, BulkPurchase, BulkStatus
from ._client import MarketClient
from ._core import DEFAULT_TIMEOUT, SnapshotStream
from ._feed import BATCH as FEED_BATCH
from ._feed import FEED_ENDPOINT, FeedBatch, FeedClient
from ._feed_events import (
    Backoff,
    FeedConnected,
    FeedDisconnected,
    FeedEvent,
    FeedHealth,
    FeedListingEvent,
    FeedRemovalEvent,
)
from ._params import GAMES, Exterior, Game, Order, OrderBy, Sort
from ._prices import PriceListStream, PricesDecoder
from ._responses import DEFAULT_RETRY_AFTER, classify_refusal
from ._secret import APIKey, Secret
from ._tradelink import TradeLink
from ._transport import KeyInjectingTransport
from ._wsread import MAX_MESSAGE as FEED_MAX_MESSAGE
from ._wsread import check_max_message as check_feed_max_message

__all__ = [
    "DEFAULT_RETRY_AFTER",
    "DEFAULT_TIMEOUT",
    "FEED_BATCH",
    "FEED_ENDPOINT",
    "FEED_MAX_MESSAGE",
    "GAMES",
    "APIKey",
    "Backoff",
    "BulkItem",
    "BulkItemResult",
    "BulkPurchase",
    "BulkStatus",
    "Exterior",
    "FeedBatch",
    "FeedClient",
    "FeedConnected",
    "FeedDisconnected",
    "FeedEvent",
    "FeedHealth",
    "FeedListingEvent",
    "FeedRemovalEvent",
    "Game",
    "KeyInjectingTransport",
    "MarketClient",
    "Order",
    "OrderBy",
    "PriceListStream",
    "PricesDecoder",
    "Secret",
    "SnapshotStream",
    "Sort",
    "TradeLink",
    "check_feed_max_message",
    "classify_refusal",
]
