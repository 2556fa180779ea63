"""The contract test kit for criterion plugins.

A plugin author imports this in their own tests::

    from engine.testing import check_criterion_contract, rules_for, decide, make_listing

    def test_contract():
        check_criterion_contract(MY_CRITERION, valid=[...], invalid=[...])

    def test_end_to_end():
        rules = rules_for(RULE_YAML, ("myplugin", my_plugin_module))
        [decision] = decide(rules, [make_listing(paintseed=661)])
        assert decision.accepted

:func:`check_criterion_contract` checks what the engine relies on: a well-formed key that
does not clash with a built-in one, a schema that accepts the valid values and refuses the
invalid ones, a ``compile`` returning :class:`~engine.rules.Compiled`, and a predicate that
never raises on the awkward listings of :data:`EDGE_LISTINGS` (no float, no phase, null
sticker wear, trade-locked without ``send_until``, ...), always answers ``None`` or a
non-empty reason, answers the same twice, and agrees with the fast ``test`` and
``kinds`` when there are (and ``kinds`` gives one kind per kind of reason: the same
blanked text, see :data:`~engine.rules.ReasonKind`; a ``feed_test``, when declared, never
turns down what the predicate accepts). It also checks the declarations the core reads
instead of the criterion's key (see :class:`~engine.rules.Compiled`): ``games`` are games
the service knows, ``references`` name registered price sources, ``trade_locked`` is
``None`` or a wait of at least 0 s.

A criterion that reads a reference price or accepts trade-locked listings must declare it
(``references=``, ``trade_locked=``); without the declaration the engine neither supplies
the reference nor lets a trade-locked listing through.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, get_args

from pydantic import TypeAdapter, ValidationError

from .._plugins import make_plugin_host
from ..client import Game
from ..models import Listing
from ..rules import (
    CORE_RULE_KEYS,
    BudgetState,
    Compiled,
    Criterion,
    Decision,
    EvalContext,
    NameView,
    PriceSource,
    Problem,
    Quote,
    RuleContext,
    RuleSet,
    blank_numbers,
    evaluate,
    load_rules_text,
    split_name,
)

__all__ = [
    "EDGE_LISTINGS",
    "NOW",
    "RULES_HEADER",
    "check_criterion_contract",
    "compile_criterion",
    "decide",
    "make_context",
    "make_listing",
    "rules_for",
]

_GAMES = frozenset(get_args(Game))

NOW = 1_767_225_600
"""The instant the kit's contexts and listings are built around (2026-01-01T00:00:00Z)."""

RULES_HEADER = """\
version: 1
account:
  base_url: "https://market.example.com"
  trade_link: "https://steamcommunity.com/tradeoffer/new/?partner=1&token=abcdefgh"
budgets: {per_day: "10000.00", total: "100000.00"}
"""
"""An ``account:`` and ``budgets:`` block to put in front of test rules."""

_DEFAULT = {
    "item_id": "1001",
    "name": "AK-47 | Redline (Field-Tested)",
    "price": 10_000,
    "platform_price": 15_000,
    "float": 0.2,
}


def make_listing(**fields: Any) -> Listing:
    """A listing with sensible defaults (an FT Redline at $10.00, platform price $15.00,
    float 0.2), overridden by ``fields`` given as wire names (``float=0.01``,
    ``phase="Ruby"``, ``stickers=[{"name": ..., "price": 1000, "wear": None}]``)."""
    return Listing.model_validate({**_DEFAULT, **fields})


EDGE_LISTINGS: dict[str, Listing] = {
    "plain": make_listing(),
    "no float": make_listing(float=None),
    "empty phase": make_listing(phase=""),
    "no platform price": make_listing(platform_price=None),
    "zero price": make_listing(price=0),
    "doppler phase in name": make_listing(
        name="★ Karambit | Doppler Phase 2 (Factory New)", float=0.01
    ),
    "doppler phase field": make_listing(
        name="★ Karambit | Doppler (Factory New)", phase="Ruby", float=0.01
    ),
    "stickers with null wear": make_listing(
        stickers=[
            {"name": "Titan (Holo) | Katowice 2014", "wear": None, "slot": 0, "price": 90_000},
            {"name": "Crown (Foil)", "wear": 0.3, "slot": None, "price": 0},
        ]
    ),
    "sticker names only": make_listing(sticker_names=["Titan (Holo) | Katowice 2014"]),
    "trade-locked without send_until": make_listing(unlock_at=NOW + 3 * 86_400),
    "trade-locked": make_listing(unlock_at=NOW + 3 * 86_400, send_until=NOW + 10 * 86_400),
    "catalogue fields": make_listing(brand="rifle", type="Rifle", discount=33.3),
    "pattern fields": make_listing(paintseed=661, paintindex=44),
    "no name parts": make_listing(name="Sticker | Crown (Foil)", float=None),
}
"""Awkward listings every predicate must handle without raising."""


def make_context(
    *,
    now: float = NOW,
    game: str | None = "csgo",
    reference_prices: Mapping[str, Mapping[str, int]] | None = None,
    budget: BudgetState | None = None,
    references: Mapping[str, Mapping[tuple[str, str | None], Quote]] | None = None,
) -> EvalContext:
    """An :class:`~engine.rules.EvalContext` for tests."""
    return EvalContext(
        now=now,
        reference_prices=reference_prices or {},
        budget=budget or BudgetState(),
        game=game,
        references=references or {},
    )


def compile_criterion(
    criterion: Criterion,
    value: Any,
    *,
    rule_values: Mapping[str, Any] | None = None,
    price_sources: Mapping[str, PriceSource] | None = None,
) -> tuple[Compiled, list[Problem]]:
    """Validate ``value`` with the criterion's schema and compile it; returns the compiled
    criterion and the problems it reported. ``rule_values`` are the rule's other values."""
    validated = TypeAdapter(criterion.schema).validate_python(value)
    if price_sources is None:
        price_sources = make_plugin_host(load_entry_points=False).price_sources()
    ctx = RuleContext(
        rule_name="test-rule",
        key=criterion.key,
        values={**(rule_values or {}), criterion.key: validated},
        price_sources=price_sources,
        where=lambda path: None,
        field_prefix="rules[0]",
    )
    compiled = criterion.compile(validated, ctx)
    return compiled, ctx.problems


def check_criterion_contract(
    criterion: Criterion,
    *,
    valid: Sequence[Any],
    invalid: Sequence[Any] = (),
    context: EvalContext | None = None,
    price_sources: Mapping[str, PriceSource] | None = None,
) -> None:
    """Assert that ``criterion`` keeps the engine's contract (see the module docs).

    ``valid`` are YAML values (as Python data) the key must accept, ``invalid`` values it
    must refuse. ``price_sources``: the sources a value may name (default: the built-in
    ones; add your plugin's own). Raises ``AssertionError`` saying what is wrong.
    """
    assert re.fullmatch(r"[a-z][a-z0-9_]{0,39}", criterion.key), (
        f"key {criterion.key!r} must be lower_snake_case, at most 40 characters"
    )
    assert criterion.key not in CORE_RULE_KEYS, f"key {criterion.key!r} is a core rule key"
    builtin = {c.key for c in make_plugin_host(load_entry_points=False).criteria()}
    if not criterion.plugin.startswith("builtin."):
        assert criterion.key not in builtin, f"key {criterion.key!r} is already a built-in key"
    assert callable(criterion.compile), "compile must be callable"
    assert criterion.description, "give the criterion a description (shown by snipe plugins)"
    assert valid, "give at least one valid value"
    adapter = TypeAdapter(criterion.schema)
    for value in invalid:
        try:
            adapter.validate_python(value)
        except ValidationError:
            continue
        raise AssertionError(f"the schema accepted the invalid value {value!r}")
    ctx = context or make_context()
    if price_sources is None:
        price_sources = make_plugin_host(load_entry_points=False).price_sources()
    for value in valid:
        compiled, _ = compile_criterion(criterion, value, price_sources=price_sources)
        assert isinstance(compiled, Compiled), f"compile returned {compiled!r}, not Compiled"
        assert isinstance(compiled.summary, str), "summary must be a string"
        _check_declarations(f"{criterion.key}={value!r}", compiled, price_sources)
        seen: dict[Any, tuple[str, str]] = {}  # kind -> (blanked reason, listing label)
        for label, listing in EDGE_LISTINGS.items():
            _check_answers(criterion.key, value, compiled, label, listing, ctx, seen)


def _check_declarations(
    where: str, compiled: Compiled, price_sources: Mapping[str, PriceSource]
) -> None:
    games = compiled.games
    wanted = f"{where} declares games {games!r}: a frozenset of {', '.join(sorted(_GAMES))}"
    assert isinstance(games, frozenset), wanted
    assert games <= _GAMES, wanted
    references = compiled.references
    assert isinstance(references, tuple), f"{where}: references must be a tuple of names"
    unknown = [n for n in references if n not in price_sources]
    assert not unknown, (
        f"{where} reads unregistered price sources {unknown} (registered: "
        f"{', '.join(sorted(price_sources))})"
    )
    lock = compiled.trade_locked
    number = isinstance(lock, int | float) and not isinstance(lock, bool)
    wanted = f"{where}: trade_locked must be None or the longest accepted wait in seconds"
    assert lock is None or (number and not math.isnan(lock) and lock >= 0), (
        f"{wanted}, not {lock!r}"
    )


def _check_answers(
    key: str,
    value: Any,
    compiled: Compiled,
    label: str,
    listing: Listing,
    ctx: EvalContext,
    seen: dict[Any, tuple[str, str]],
) -> None:
    parts = split_name(listing.name)
    view = NameView(parts.name, parts.base_name, parts.phase, parts.exterior)
    where = f"{key}={value!r} on the {label!r} listing"
    if compiled.name_filter is not None:
        answer = compiled.name_filter(view)
        assert answer is None or (isinstance(answer, str) and answer), (
            f"name_filter for {where} returned {answer!r}, not None or a reason"
        )
    if compiled.predicate is None:
        return
    try:
        first = compiled.predicate(listing, view, ctx)
        second = compiled.predicate(listing, view, ctx)
    except Exception as exc:
        raise AssertionError(f"the predicate raised for {where}: {exc!r}") from exc
    assert first is None or (isinstance(first, str) and first.strip()), (
        f"the predicate for {where} returned {first!r}, not None or a non-empty reason"
    )
    assert first == second, f"the predicate for {where} is not deterministic"
    if compiled.test is not None:
        try:
            fast = compiled.test(listing, view, ctx)
        except Exception as exc:
            raise AssertionError(f"the test raised for {where}: {exc!r}") from exc
        assert bool(fast) is (first is None), (
            f"test and predicate disagree for {where}: test {fast!r}, predicate {first!r}"
        )
    if compiled.feed_test is not None:
        # a necessary condition: what passes the criterion passes what the feed tells
        try:
            told = compiled.feed_test(listing, view, ctx)
        except Exception as exc:
            raise AssertionError(f"the feed_test raised for {where}: {exc!r}") from exc
        assert told or first is not None, (
            f"feed_test for {where} turns down a listing the predicate accepts: the feed "
            "would cost it its confirming search, and the purchase"
        )
    if compiled.kinds is not None:
        _check_kind(compiled, where, label, listing, view, ctx, first, seen)


def _check_kind(
    compiled: Compiled,
    where: str,
    label: str,
    listing: Listing,
    view: NameView,
    ctx: EvalContext,
    reason: str | None,
    seen: dict[Any, tuple[str, str]],
) -> None:
    """``kinds`` agrees with the predicate's ``reason`` and one kind stands for one
    blanked text (see :data:`engine.rules.ReasonKind`)."""
    assert compiled.kinds is not None
    try:
        kind = compiled.kinds(listing, view, ctx)
        hash(kind)
    except Exception as exc:
        raise AssertionError(f"kinds raised for {where}: {exc!r}") from exc
    assert (kind is None) is (reason is None), (
        f"kinds and predicate disagree for {where}: kind {kind!r}, predicate {reason!r}"
    )
    if reason is None:
        return
    blanked = blank_numbers(reason)
    other = seen.setdefault(kind, (blanked, label))
    assert other[0] == blanked, (
        f"kinds gives {kind!r} for two kinds of reason: {other[0]!r} (the {other[1]!r} "
        f"listing) and {blanked!r} ({where}); give each its own kind"
    )


def rules_for(yaml_rules: str, *plugins: tuple[str, object]) -> RuleSet:
    """Load a ``rules:`` block (``RULES_HEADER`` is prepended when the text has no
    ``account:``) with the built-in criteria and ``plugins`` (name, plugin object)."""
    text = yaml_rules if "account:" in yaml_rules else RULES_HEADER + yaml_rules
    host = make_plugin_host(load_entry_points=False, plugins=plugins)
    failures = "; ".join(str(f) for f in host.failures)
    assert not host.failures, f"plugins failed: {failures}"
    return load_rules_text(text, "<test rules>", host=host)


def decide(ruleset: RuleSet, listings: Sequence[Listing], **context: Any) -> list[Decision]:
    """:func:`~engine.rules.evaluate` with a :func:`make_context` built from ``context``."""
    return evaluate(ruleset, listings, make_context(**context))
