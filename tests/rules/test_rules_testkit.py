"""The contract test kit: the built-in criteria keep it, and it catches broken criteria."""

from __future__ import annotations

from typing import Any

import pytest

from engine._plugins import make_plugin_host
from engine.models import Listing
from engine.rules import Compiled, Criterion, EvalContext, NameView, RuleContext
from engine.testing import check_criterion_contract

VALID: dict[str, list[Any]] = {
    "match": [{"names": ["x"]}, {"patterns": ["*"], "game": "csgo", "brand": "knife"}],
    "price": [{"min": "1.00"}, {"min": 1, "max": "2.50"}],
    "discount": [20, {"min": "12.5%", "versus": "platform_price"}],
    "float": [{"max": 0.07}, {"min": 0.15, "max": 0.38}],
    "phases": [["Ruby"], ["Phase 1", "Emerald"]],
    "stickers": [{"min_value": "5.00"}, {"names": ["Crown (Foil)"], "max_wear": 0.1, "slots": [0]}],
    "hold": [{"max_wait": "7d"}, {"max_wait": "36h", "extra_discount": 5}],
}
INVALID: dict[str, list[Any]] = {
    "match": [{}, {"names": "x", "gme": 1}],
    "price": [{}, {"min": "2", "max": "1"}, {"min": 1.5}],
    "discount": [101, "x%", {"min": 10, "vs": "steam"}],
    "float": [{"max": 2}, {"min": 0.5, "max": 0.1}],
    "phases": [["Rubby"], "Phase 9"],
    "stickers": [{}, {"slots": [7], "min_count": 1}],
    "hold": [{}, {"max_wait": "soon"}],
}


@pytest.mark.parametrize("key", sorted(VALID))
def test_every_builtin_criterion_keeps_the_contract(key: str) -> None:
    [criterion] = [c for c in make_plugin_host(load_entry_points=False).criteria() if c.key == key]
    check_criterion_contract(criterion, valid=VALID[key], invalid=INVALID[key])


def crashing(value: Any, rule: RuleContext) -> Compiled:
    def predicate(listing: Listing, view: NameView, ctx: EvalContext) -> str | None:
        return "low float" if listing.float_value < 0.1 else None  # type: ignore[operator]

    return Compiled(predicate=predicate)


def empty_reason(value: Any, rule: RuleContext) -> Compiled:
    return Compiled(predicate=lambda listing, view, ctx: "")


def disagreeing(value: Any, rule: RuleContext) -> Compiled:
    return Compiled(
        predicate=lambda listing, view, ctx: None, test=lambda listing, view, ctx: False
    )


def float_reason(listing: Listing, view: NameView, ctx: EvalContext) -> str | None:
    if listing.float_value is None:
        return "no float"
    return f"float {listing.float_value} above 0.1" if listing.float_value > 0.1 else None


def kinds_disagreeing(value: Any, rule: RuleContext) -> Compiled:
    return Compiled(predicate=float_reason, kinds=lambda listing, view, ctx: None)


def kinds_too_coarse(value: Any, rule: RuleContext) -> Compiled:
    # one kind for "no float" and "float # above #": counted together, shown as one
    return Compiled(
        predicate=float_reason,
        kinds=lambda listing, view, ctx: None if float_reason(listing, view, ctx) is None else 0,
    )


def declaring(**declared: Any) -> Any:
    def compile_(value: Any, rule: RuleContext) -> Compiled:
        return Compiled(predicate=lambda listing, view, ctx: None, **declared)

    return compile_


@pytest.mark.parametrize(
    ("criterion", "message"),
    [
        (Criterion("Bad-Key", bool, crashing, "d"), "must be lower_snake_case"),
        (Criterion("g", bool, declaring(games={"csgo"}), "d"), "a frozenset of csgo"),
        (Criterion("g", bool, declaring(games=frozenset({"cs2"})), "d"), "a frozenset of csgo"),
        (Criterion("r", bool, declaring(references=("steam.x",)), "d"), "unregistered price"),
        (Criterion("r", bool, declaring(references="market.p25"), "d"), "must be a tuple"),
        (Criterion("t", bool, declaring(trade_locked=-1), "d"), "trade_locked must be None"),
        (Criterion("t", bool, declaring(trade_locked=True), "d"), "trade_locked must be None"),
        (Criterion("float", bool, crashing, "d"), "already a built-in key"),
        (Criterion("max_price", bool, crashing, "d"), "is a core rule key"),
        (Criterion("wear_low", bool, crashing, ""), "give the criterion a description"),
        (Criterion("wear_low", bool, crashing, "d"), "raised for wear_low=True on the 'no float'"),
        (Criterion("quiet", bool, empty_reason, "d"), "not None or a non-empty reason"),
        (Criterion("fickle", bool, disagreeing, "d"), "test and predicate disagree"),
        (
            Criterion("hasty", bool, declaring(feed_test=lambda listing, view, ctx: False), "d"),
            "feed_test for hasty=True on the 'plain' listing turns down",
        ),
        (Criterion("fickle", bool, kinds_disagreeing, "d"), "kinds and predicate disagree"),
        (Criterion("coarse", bool, kinds_too_coarse, "d"), "kinds gives 0 for two kinds"),
    ],
)
def test_the_kit_catches_broken_criteria(criterion: Criterion, message: str) -> None:
    with pytest.raises(AssertionError, match=message):
        check_criterion_contract(criterion, valid=[True])


def test_the_kit_catches_a_schema_that_accepts_invalid_values() -> None:
    criterion = Criterion("anything", Any, empty_reason, "d")
    with pytest.raises(AssertionError, match="accepted the invalid value 'nonsense'"):
        check_criterion_contract(criterion, valid=[1], invalid=["nonsense"])
