"""The live engine: watch the market within the search limit, decide with the rules, buy
exactly once, and reconcile every purchase to the end. Backtests run the same code."""

from . import _controls as controls
from ._bandwidth import daily_estimate, format_bytes
from ._budget import budget_state, caps_for_rule
from ._buyer import Buyer, BuyerSettings
from ._daily import daily_summary
from ._engine import Engine, EngineSettings, TradingRefused
from ._feedrun import AUTO_ATTEMPTS
from ._feedwatch import FeedSettings, FeedView, FeedWatch
from ._guard import describe
from ._heap import HeapPolicy, HeapSettings, freeze_heap
from ._orders import Exposure, OrderManager, describe_orders
from ._reconciler import Reconciler, ReconcilerSettings
from ._schedule import MAX_NAMES_PER_SEARCH, SearchSchedule
from ._session import SessionOptions, feed_client, open_engine
from ._status import EngineMode, EngineStatus, Outcome, PurchaseRecord
from ._statusfile import (
    read_status_file,
    status_document,
    status_file_problem,
    status_path_for,
    write_status_file,
)
from ._view import EngineView, feed_words, status_line

__all__ = [
    "AUTO_ATTEMPTS",
    "MAX_NAMES_PER_SEARCH",
    "Buyer",
    "BuyerSettings",
    "Engine",
    "EngineMode",
    "EngineSettings",
    "EngineStatus",
    "EngineView",
    "Exposure",
    "FeedSettings",
    "FeedView",
    "FeedWatch",
    "HeapPolicy",
    "HeapSettings",
    "OrderManager",
    "Outcome",
    "PurchaseRecord",
    "Reconciler",
    "ReconcilerSettings",
    "SearchSchedule",
    "SessionOptions",
    "TradingRefused",
    "budget_state",
    "caps_for_rule",
    "controls",
    "daily_estimate",
    "daily_summary",
    "describe",
    "describe_orders",
    "feed_client",
    "feed_words",
    "format_bytes",
    "freeze_heap",
    "open_engine",
    "read_status_file",
    "status_document",
    "status_file_problem",
    "status_line",
    "status_path_for",
    "write_status_file",
]
