"""snipe: a headless, rule-driven buying engine for a peer-to-peer game-item marketplace.

The public API is re-exported here; everything else lives in private modules.
"""

from ._clock import Clock, ScaledClock, SystemClock, VirtualClock
from ._errors import (
    APIError,
    ConfigError,
    IntentRefusal,
    IntentRefused,
    InvalidRequest,
    InvalidTradeLink,
    KeyRejected,
    LedgerError,
    MalformedResponse,
    OutcomeUnknown,
    PurchaseRefusal,
    PurchaseRefused,
    RateLimited,
    Refused,
    SnipeError,
    Unavailable,
)
from ._limiter import DEFAULT_LIMITS, Lane, Limit, RateLimiter
from ._money import MILLS_PER_USD, Money, format_usd, parse_usd
from ._plugins import PluginHost, make_plugin_host
from .client import (
    APIKey,
    BulkItem,
    BulkPurchase,
    BulkStatus,
    MarketClient,
    Secret,
    TradeLink,
)
from .rules import BudgetState, Decision, EvalContext, RuleSet, evaluate, explain, load_rules

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_LIMITS",
    "MILLS_PER_USD",
    "APIError",
    "APIKey",
    "BudgetState",
    "BulkItem",
    "BulkPurchase",
    "BulkStatus",
    "Clock",
    "ConfigError",
    "Decision",
    "EvalContext",
    "IntentRefusal",
    "IntentRefused",
    "InvalidRequest",
    "InvalidTradeLink",
    "KeyRejected",
    "Lane",
    "LedgerError",
    "Limit",
    "MalformedResponse",
    "MarketClient",
    "Money",
    "OutcomeUnknown",
    "PluginHost",
    "PurchaseRefusal",
    "PurchaseRefused",
    "RateLimited",
    "RateLimiter",
    "Refused",
    "RuleSet",
    "ScaledClock",
    "Secret",
    "SnipeError",
    "SystemClock",
    "TradeLink",
    "Unavailable",
    "VirtualClock",
    "__version__",
    "evaluate",
    "explain",
    "format_usd",
    "load_rules",
    "make_plugin_host",
    "parse_usd",
]
