"""The live engine: watch the market within the search limit, decide with the rules, buy
exactly once, and reconcile every purchase to the end. Backtests run the same code."""

from ._budget import budget_state, caps_for_rule
from ._buyer import Buyer, BuyerSettings
from ._engine import Engine, EngineSettings, TradingRefused
from ._orders import Exposure, OrderManager
from ._reconciler import Reconciler, ReconcilerSettings
from ._schedule import MAX_NAMES_PER_SEARCH, SearchSchedule
from ._status import EngineMode, EngineStatus, Outcome, PurchaseRecord
from ._view import EngineView, status_line

__all__ = [
    "MAX_NAMES_PER_SEARCH",
    "Buyer",
    "BuyerSettings",
    "Engine",
    "EngineMode",
    "EngineSettings",
    "EngineStatus",
    "EngineView",
    "Exposure",
    "OrderManager",
    "Outcome",
    "PurchaseRecord",
    "Reconciler",
    "ReconcilerSettings",
    "SearchSchedule",
    "TradingRefused",
    "budget_state",
    "caps_for_rule",
    "status_line",
]
