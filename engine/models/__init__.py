"""Typed models of every marketplace resource and response.

Parsing is lenient (every variant wire-notes.md records is accepted) and the result is one
normalised, immutable form: ids are ``str``, money is ``int`` USD x 1000, instants are ``int``
epoch seconds, ``""`` phases are ``None``.

Answers that carry many items (searches, catalogue pages, trades, history, buy orders) are
decoded item by item with :func:`decode_per_item`: an unreadable item is set aside
(:class:`SetAside`, on the answer's ``set_aside``) and the others kept. docs/wire.md lists
every variant read.
"""

from ._account import (
    DepositRecord,
    DepositsPage,
    InventoryItem,
    InventoryPrice,
    InventoryResponse,
    OwnListing,
    OwnListingsResponse,
    PlatformTokenResult,
    SimpleResult,
    StatusResult,
    TradeLinkCheck,
    TronRentResult,
    User,
    UserCreated,
    UserResponse,
    WebhookAttempt,
    WebhookPage,
    WebhookRecord,
    WebhookResponse,
)
from ._feed import FeedListing, FeedRemoval
from ._market import (
    CataloguePage,
    Listing,
    PlatformItem,
    PlatformItemsResponse,
    SearchResponse,
    SearchResponseV1,
    Snapshot,
    SnapshotRow,
    Sticker,
)
from ._per_item import PerItem, SetAside, decode_item, decode_per_item
from ._prices import PriceItem
from ._raw import RAW_FIELDS, RawListing, RawSticker, read_plain, split_answer
from ._search import ListingMemo, Prefilter, Screen, decode_search
from ._trading import (
    BulkBuyItemResult,
    BulkBuyResponse,
    BuyOrder,
    BuyOrderResult,
    BuyOrdersResponse,
    BuyResult,
    ForceCheckResult,
    HistoryPage,
    HistoryTrade,
    ProjectTrade,
    ProjectTradesResponse,
    RemoveAllResult,
    RemoveBuyOrderResult,
    Trade,
    TradeItem,
    TradeParty,
    TradesResponse,
    TradeStatus,
)
from ._types import PHASES, WireModel, join_image_url, parse_epoch

__all__ = [
    "PHASES",
    "RAW_FIELDS",
    "BulkBuyItemResult",
    "BulkBuyResponse",
    "BuyOrder",
    "BuyOrderResult",
    "BuyOrdersResponse",
    "BuyResult",
    "CataloguePage",
    "DepositRecord",
    "DepositsPage",
    "FeedListing",
    "FeedRemoval",
    "ForceCheckResult",
    "HistoryPage",
    "HistoryTrade",
    "InventoryItem",
    "InventoryPrice",
    "InventoryResponse",
    "Listing",
    "ListingMemo",
    "OwnListing",
    "OwnListingsResponse",
    "PerItem",
    "PlatformItem",
    "PlatformItemsResponse",
    "PlatformTokenResult",
    "Prefilter",
    "PriceItem",
    "ProjectTrade",
    "ProjectTradesResponse",
    "RawListing",
    "RawSticker",
    "RemoveAllResult",
    "RemoveBuyOrderResult",
    "Screen",
    "SearchResponse",
    "SearchResponseV1",
    "SetAside",
    "SimpleResult",
    "Snapshot",
    "SnapshotRow",
    "StatusResult",
    "Sticker",
    "Trade",
    "TradeItem",
    "TradeLinkCheck",
    "TradeParty",
    "TradeStatus",
    "TradesResponse",
    "TronRentResult",
    "User",
    "UserCreated",
    "UserResponse",
    "WebhookAttempt",
    "WebhookPage",
    "WebhookRecord",
    "WebhookResponse",
    "WireModel",
    "decode_item",
    "decode_per_item",
    "decode_search",
    "join_image_url",
    "parse_epoch",
    "read_plain",
    "split_answer",
]
