"""The rule language: what to buy, written in YAML, compiled once, evaluated purely.

- :func:`load_rules` / :func:`check_rules_file`: a rules file -> :class:`RuleSet` (or
  every problem, each with ``file:line:column`` and field);
- :func:`evaluate`: ``(rule set, listings, context) -> [Decision]``, pure and fast;
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
    RuleContext,
    RuleSpend,
    Test,
)
from ._evaluate import Decision, evaluate, explain, summarize_rejections
from ._load import LoadResult, check_rules_file, check_rules_text, load_rules, load_rules_text
from ._names import NameParts, doppler_phases, known_phases, split_name
from ._schema import Account, ApiSettings, Budgets, RateLimits, StrictModel
from ._values import USD, Duration, Percent, Wear, parse_duration, parse_percent

__all__ = [
    "USD",
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
    "LoadResult",
    "NameFilter",
    "NameParts",
    "NameView",
    "Percent",
    "Predicate",
    "PriceSource",
    "Problem",
    "Quote",
    "RateLimits",
    "RuleContext",
    "RuleSet",
    "RuleSpend",
    "StrictModel",
    "Test",
    "Wear",
    "check_rules_file",
    "check_rules_text",
    "doppler_phases",
    "evaluate",
    "explain",
    "known_phases",
    "load_rules",
    "load_rules_text",
    "parse_duration",
    "parse_percent",
    "split_name",
    "summarize_rejections",
]
