"""Loading a rules file: YAML -> validated models -> compiled :class:`RuleSet`.

:func:`check_rules_text` never raises on bad input: it returns every problem found (each
with ``file:line:column`` and field). :func:`load_rules` raises one
:class:`~engine.ConfigError` listing them all when there is any error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path as FilePath
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from .._errors import ConfigError
from .._money import format_usd
from ._compile import CompiledRule, RuleSet, compile_rule
from ._contract import Problem
from ._prices import ListSource, PricesSettings
from ._schema import build_config_model, criterion_values, problems_from_validation_error
from ._yaml import Document, load_yaml

if TYPE_CHECKING:
    from .._plugins import PluginHost

__all__ = ["LoadResult", "check_rules_file", "check_rules_text", "load_rules", "load_rules_text"]


@dataclass
class LoadResult:
    """What loading a rules file found: the rule set (``None`` when there are errors) and
    every problem, errors first."""

    ruleset: RuleSet | None
    problems: list[Problem] = field(default_factory=list)

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "warning"]


def _default_host() -> PluginHost:
    from .._plugins import make_plugin_host

    return make_plugin_host()


def check_rules_file(path: str | FilePath, *, host: PluginHost | None = None) -> LoadResult:
    """Load the rules file at ``path`` and report every problem (never raises for bad
    content; an unreadable file is reported as a problem too)."""
    try:
        text = FilePath(path).read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        return LoadResult(None, [Problem("error", f"cannot read the file: {reason}", str(path))])
    return check_rules_text(text, str(path), host=host)


def check_rules_text(
    text: str, filename: str = "<rules>", *, host: PluginHost | None = None
) -> LoadResult:
    """Like :func:`check_rules_file`, for rules given as text."""
    host = host or _default_host()
    try:
        doc = load_yaml(text, filename)
    except ConfigError as exc:
        return LoadResult(None, [Problem("error", exc.message, exc.location, exc.field)])
    criteria = host.criteria()
    host.price_sources()  # registration failures are known after both calls
    plugin_notes = [Problem("warning", str(f), filename) for f in host.failures]
    model = build_config_model(criteria, [(k.key, k.schema) for k in host.notifiers()])
    try:
        # top-level `x-...` keys hold YAML anchors shared by rules; they are not settings
        data = {k: v for k, v in doc.data.items() if not str(k).startswith("x-")}
        config = model.model_validate(data)
    except ValidationError as exc:
        problems = problems_from_validation_error(exc, doc, model)
        if host.failures:
            failed = ", ".join(sorted({f.plugin for f in host.failures}))
            problems = [_note_failed_plugins(p, failed) for p in problems]
        return LoadResult(None, _ordered([*problems, *plugin_notes]))
    problems = list(plugin_notes)
    ruleset = _compile(config, doc, host, problems)
    if any(p.severity == "error" for p in problems):
        return LoadResult(None, _ordered(problems))
    return LoadResult(ruleset, _ordered(problems))


def _compile(config: Any, doc: Document, host: PluginHost, problems: list[Problem]) -> RuleSet:
    criteria = {c.key: c for c in host.criteria()}
    sources = dict(host.price_sources())
    prices = config.prices or PricesSettings()
    for list_name in prices.lists:
        source = ListSource(list_name)
        if source.name in sources:
            problems.append(
                Problem(
                    "error",
                    f"price list {list_name!r}: the source name {source.name!r} is taken by a "
                    "plugin",
                    location=doc.where(("prices", "lists", list_name)),
                    field=f"prices.lists.{list_name}",
                )
            )
            continue
        sources[source.name] = source
    compiled: list[CompiledRule] = []
    disabled: list[str] = []
    seen: dict[str, int] = {}
    for index, rule in enumerate(config.rules):
        if rule.name in seen:
            problems.append(
                Problem(
                    "error",
                    f"rule name {rule.name!r} is used twice (first by rules[{seen[rule.name]}]);"
                    " budgets are counted per rule name, so names must be unique",
                    location=doc.where(("rules", index, "name")),
                    field=f"rules[{index}].name",
                )
            )
            continue
        seen[rule.name] = index
        if not rule.enabled:
            disabled.append(rule.name)
            continue
        result, found = compile_rule(
            index=index,
            core=rule,
            values=criterion_values(rule),
            criteria=criteria,
            price_sources=sources,
            where=doc.where,
        )
        problems.extend(found)
        compiled.append(result)
        problems.extend(_budget_warnings(config, rule, index, doc))
    budgets = config.budgets
    if budgets.per_day > budgets.total:
        problems.append(
            Problem(
                "warning",
                f"budgets.per_day {format_usd(budgets.per_day)} is above budgets.total "
                f"{format_usd(budgets.total)}; the total wins",
                location=doc.where(("budgets", "per_day")),
                field="budgets.per_day",
            )
        )
    return RuleSet(
        filename=doc.filename,
        account=config.account,
        budgets=budgets,
        rules=compiled,
        disabled=disabled,
        problems=[p for p in problems if p.severity == "warning"],
        notify=config.notify,
        prices=prices,
        orders=config.orders,
        portfolio=config.portfolio,
        api=config.api,
    )


def _budget_warnings(config: Any, rule: Any, index: int, doc: Document) -> list[Problem]:
    out = []
    cap = min(config.budgets.per_day, config.budgets.total)
    if rule.max_price > cap:
        out.append(
            Problem(
                "warning",
                f"rule {rule.name!r}: max_price {format_usd(rule.max_price)} is above the "
                f"daily/total budget {format_usd(cap)}; such a listing can never be bought",
                location=doc.where(("rules", index, "max_price")),
                field=f"rules[{index}].max_price",
            )
        )
    if rule.max_spend is not None and rule.max_spend < rule.max_price:
        out.append(
            Problem(
                "warning",
                f"rule {rule.name!r}: max_spend {format_usd(rule.max_spend)} is below "
                f"max_price {format_usd(rule.max_price)}; listings priced between them can "
                "never be bought",
                location=doc.where(("rules", index, "max_spend")),
                field=f"rules[{index}].max_spend",
            )
        )
    return out


def _note_failed_plugins(problem: Problem, failed: str) -> Problem:
    if not problem.message.startswith("unknown key"):
        return problem
    message = f"{problem.message} (plugins that failed to load: {failed})"
    return Problem(problem.severity, message, problem.location, problem.field)


def _ordered(problems: list[Problem]) -> list[Problem]:
    return sorted(problems, key=lambda p: p.severity != "error")


def load_rules_text(
    text: str, filename: str = "<rules>", *, host: PluginHost | None = None
) -> RuleSet:
    """Load rules given as text; raise :class:`~engine.ConfigError` listing every error."""
    return _raise_or_return(check_rules_text(text, filename, host=host))


def load_rules(path: str | FilePath, *, host: PluginHost | None = None) -> RuleSet:
    """Load the rules file at ``path``; raise :class:`~engine.ConfigError` listing every
    error (warnings are kept in ``RuleSet.problems``)."""
    return _raise_or_return(check_rules_file(path, host=host))


def _raise_or_return(result: LoadResult) -> RuleSet:
    if result.ruleset is not None:
        return result.ruleset
    errors = result.errors
    first = errors[0]
    if len(errors) == 1:
        raise ConfigError(first.message, location=first.location, field=first.field)
    listing = "\n".join(f"  {p}" for p in errors)
    raise ConfigError(f"{len(errors)} errors in the rules file:\n{listing}")
