"""The rule language: what to buy, written in YAML, compiled once, evaluated purely.

- :func:`load_rules` / :func:`check_rules_file`: a rules file -> :class:`RuleSet` (or
  every problem, each with ``file:line:column`` and field);
- :func:`evaluate`: ``(rule set, listings, context) -> [Decision]``, pure and fast;
- :func:`scan`: the same, building decisions only for what passes the rules' checks
  (the rest on demand);
- :func:`explain`: why nothing (or what) is bought for a name;
- :class:`Criterion`, :class:`Compiled`, :class:`PriceSource`: what plugins contribute.
"""

from ._compile import CompiledRule, RuleSet
from ._contract import (
    BudgetState,
    Compiled,
    Criterion,
    EvalContext,
    NameFilter,
    NameView,
    Predicate,
    PriceSource,
    Problem,
    Quote,
    ReasonKind,
    RuleContext,
    RuleSpend,
    Test,
    eval_context_of,
)
from ._evaluate import (
    NO_REASON,
    Decision,
    Scan,
    evaluate,
    explain,
    rejection_kinds,
    rejection_reasons,
    scan,
    summarize_rejections,
    turned_down,
    watching,
)
from ._judge import Judge
from ._kinds import blank_numbers
from ._load import LoadResult, check_rules_file, check_rules_text, load_rules, load_rules_text
from ._names import NameParts, doppler_phases, known_phases, split_name
from ._plan import Plan
from ._portfolio import VALUE_SOURCES, PortfolioSettings
from ._prefilter import RawScreen, raw_judged
from ._prices import ListSettings, PricesSettings
from ._schema import (
    CORE_RULE_KEYS,
    NOTIFY_CORE_KEYS,
    Account,
    ApiSettings,
    Budgets,
    NotifyCore,
    RateLimits,
    closest,
    criterion_values,
)
from ._strict import StrictModel
from ._values import (
    BASIS_POINTS,
    USD,
    Duration,
    Percent,
    Wear,
    duration_shape,
    format_duration,
    format_percent,
    parse_duration,
    parse_percent,
)

__all__ = [
    "BASIS_POINTS",
    "CORE_RULE_KEYS",
    "NOTIFY_CORE_KEYS",
    "NO_REASON",
    "USD",
    "VALUE_SOURCES",
    "Account",
    "ApiSettings",
    "BudgetState",
    "Budgets",
    "Compiled",
    "CompiledRule",
    "Criterion",
    "Decision",
    "Duration",
    "EvalContext",
    "Judge",
    "ListSettings",
    "LoadResult",
    "NameFilter",
    "NameParts",
    "NameView",
    "NotifyCore",
    "Percent",
    "Plan",
    "PortfolioSettings",
    "Predicate",
    "PriceSource",
    "PricesSettings",
    "Problem",
    "Quote",
    "RateLimits",
    "RawScreen",
    "ReasonKind",
    "RuleContext",
    "RuleSet",
    "RuleSpend",
    "Scan",
    "StrictModel",
    "Test",
    "Wear",
    "blank_numbers",
    "check_rules_file",
    "check_rules_text",
    "closest",
    "criterion_values",
    "doppler_phases",
    "duration_shape",
    "eval_context_of",
    "evaluate",
    "explain",
    "format_duration",
    "format_percent",
    "known_phases",
    "load_rules",
    "load_rules_text",
    "parse_duration",
    "parse_percent",
    "raw_judged",
    "rejection_kinds",
    "rejection_reasons",
    "scan",
    "split_name",
    "summarize_rejections",
    "turned_down",
    "watching",
]
