"""The feed's judge (engine/rules/_judge.py): each rule's ``kinds`` run once per feed
event, for both the verdict and the skip counts. It must say exactly what the name's
plan (the rules' tests) and then the rules' kinds say, counted the same, on a table of
listings x rules: the built-in criteria (trade-locked listings, a rule with ``hold:``, a
sticker-weighted discount), a third-party criterion without a test or kinds (exact by
construction, also when it raises) and one whose test disagrees with its predicate (not
exact: its rules keep the plan)."""

from __future__ import annotations

import dataclasses
import random
from typing import Any

import pytest

from engine.hookspecs import hookimpl
from engine.models import Listing
from engine.rules import (
    BudgetState,
    Compiled,
    Criterion,
    EvalContext,
    NameView,
    Quote,
    RuleContext,
    RuleSet,
    eval_context_of,
)
from engine.sniper import EngineStatus
from engine.testing import NOW, make_context, make_listing, rules_for

NAME = "AK-47 | Redline (Field-Tested)"
KNIFE = "★ Karambit | Doppler (Factory New)"

BUILT_IN = f"""rules:
  - name: plain
    match: {{names: ["{NAME}"], game: csgo}}
    max_price: "300.00"
    price: {{min: "2.00", max: "250.00"}}
    discount: 18
    float: {{max: 0.30}}
  - name: weighed
    match: {{names: ["{NAME}", "{KNIFE}"]}}
    max_price: "500.00"
    discount: 5
    stickers: {{min_value: "40.00", min_count: 2, max_wear: 0.05, weight: 10}}
  - name: held
    match: {{names: ["{NAME}"]}}
    max_price: "400.00"
    discount: 10
    hold: {{max_wait: 3d, min_send_window: 2h, extra_discount: 4, extra_discount_per_day: 1}}
  - name: gems
    match: {{names: ["{KNIFE}"], game: csgo}}
    max_price: "900.00"
    phases: [Ruby, Phase 2]
    discount: {{min: 8}}
"""

THIRD_PARTY = f"""rules:
  - name: guessing
    match: {{names: ["{NAME}"]}}
    max_price: "500.00"
    discount: 10
    {{key}}: true
  - name: plain
    match: {{names: ["{NAME}", "{KNIFE}"]}}
    max_price: "500.00"
    discount: 10
"""


class Odd:
    """A third-party criterion on the price's parity. ``how``: ``"predicate"`` (no test,
    no kinds: exact by construction), ``"raising"`` (the same, raising on a price that
    is a multiple of 3) or ``"disagreeing"`` (a test that passes what its predicate turns
    down: not exact)."""

    def __init__(self, key: str, how: str) -> None:
        self.key, self.how = key, how

    @hookimpl
    def snipe_register_criteria(self) -> list[Criterion]:
        how = self.how

        def compile_(value: Any, rule: RuleContext) -> Compiled:
            def even(listing: Listing, view: NameView, ctx: EvalContext) -> str | None:
                if how == "raising" and listing.price % 3 == 0:
                    raise ValueError("a multiple of three")
                return None if listing.price % 2 == 0 else f"odd price {listing.price}"

            def sloppy(listing: Listing, view: NameView, ctx: EvalContext) -> bool:
                return True  # passes every listing: disagrees with its predicate

            test = sloppy if how == "disagreeing" else None
            return Compiled(predicate=even, test=test, summary="even", needs_search=False)

        return [Criterion(self.key, bool, compile_, description="even prices")]


def listings(seed: int) -> list[Listing]:
    """Listings reaching the built-ins' returns: prices around the caps and references,
    trade locks of every length (with and without send_until), stickers with details
    (a search's) or only their names (a feed event's), floats and phases."""
    rng = random.Random(seed)
    out = []
    for i in range(400):
        name = rng.choice([NAME, KNIFE])
        price = rng.choice([0, 1_500, 9_001, 10_000, 40_000, 260_000, 450_000, 950_000])
        fields: dict[str, object] = {"name": name, "item_id": str(i), "price": price}
        fields["float"] = rng.choice([None, 0.0, 0.1, 0.31, 0.9])
        fields["platform_price"] = rng.choice([None, 0, price // 2, price + 1, price * 3 + 7])
        if rng.random() < 0.4:  # trade-locked
            lock = rng.choice([60, 3_600, 86_400 + 5, 2 * 86_400, 5 * 86_400])
            fields["unlock_at"] = NOW + lock
            if rng.random() < 0.8:
                fields["send_until"] = NOW + lock + rng.choice([-30, 3_700, 9 * 86_400])
        if rng.random() < 0.4:
            fields["stickers"] = [
                {
                    "name": f"S{k}",
                    "price": rng.choice([0, 15_000, 40_000]),
                    "wear": rng.choice([None, 0.01, 0.2]),
                    "slot": k,
                }
                for k in range(rng.randrange(0, 4))
            ]
        elif rng.random() < 0.5:
            fields["sticker_names"] = ["S1", "S2", "S3"][: rng.randrange(1, 4)]
        if name == KNIFE:
            fields["phase"] = rng.choice(["", "Phase 2", "Ruby", "Emerald"])
        out.append(make_listing(**fields))
    return out


def plan_verdict(ruleset: RuleSet, listing: Listing, ctx: EvalContext) -> bool:
    """Whether some rule watching ``listing``'s name passes its checks (the plan's say)."""
    entry = ruleset._index[listing.name]
    assert entry
    view, _, plan = entry
    passed: list[object] = []
    plan(listing, view, ctx, passed.append)
    return bool(passed)


def judged_alike(ruleset: RuleSet, table: list[Listing], ctx: EvalContext) -> int:
    """Asserts the judge of every name's rules agrees with the plan and counts as
    ``skipped_pairs`` does; returns how many listings it turned down."""
    by_plan, by_judge = EngineStatus(), EngineStatus()
    turned_down = 0
    for listing in table:
        view = ruleset.view(listing.name)
        judge = ruleset.judge(view.rules)
        assert judge is not None
        found = judge(listing, view, ctx)
        if plan_verdict(ruleset, listing, ctx):
            assert found is None, listing
            continue
        assert found is not None, listing
        assert list(found) == [r.kinds(listing, view, ctx) for r in view.rules]  # type: ignore[misc]
        by_plan.skipped_pairs(view.rules, listing, view, ctx)
        by_judge.skipped_found(view.rules, found, listing, view, ctx)
        turned_down += 1
    assert list(by_judge.skip_by_rule.items()) == list(by_plan.skip_by_rule.items())
    assert list(by_judge.skip_reasons.items()) == list(by_plan.skip_reasons.items())
    assert by_judge.skip_examples == by_plan.skip_examples
    return turned_down


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("game", ["csgo", None])
def test_the_judge_says_what_the_plan_and_the_kinds_say(seed: int, game: str | None) -> None:
    ruleset = rules_for(BUILT_IN)
    ctx = make_context(game=game)
    table = listings(seed)
    turned_down = judged_alike(ruleset, table, ctx)
    assert 0 < turned_down < len(table)  # both verdicts are met


@pytest.mark.parametrize("how", ["predicate", "raising"])
def test_a_criterion_with_neither_test_nor_kinds_is_judged_alike(how: str) -> None:
    ruleset = rules_for(THIRD_PARTY.replace("{key}", "even"), ("odd", Odd("even", how)))
    assert all(r.exact for r in ruleset.rules)
    table = listings(4)
    assert judged_alike(ruleset, table, make_context(game="csgo")) > 0
    if how == "raising":  # the raise turns its rule down, named, as check says it
        status = EngineStatus()
        for listing in table:
            view = ruleset.view(listing.name)
            found = ruleset.judge(view.rules)(listing, view, make_context())  # type: ignore[misc]
            if found is not None:
                status.skipped_found(view.rules, found, listing, view, make_context())
        assert any("raised ValueError" in text for text in status.skip_examples.values())


def test_a_criterion_whose_test_disagrees_keeps_its_rules_on_the_plan() -> None:
    ruleset = rules_for(THIRD_PARTY.replace("{key}", "even"), ("odd", Odd("even", "disagreeing")))
    guessing, plain = ruleset.rule("guessing"), ruleset.rule("plain")
    assert not guessing.exact
    assert plain.exact
    assert ruleset.judge(ruleset.view(NAME).rules) is None  # guessing watches it
    knife = ruleset.view(KNIFE)
    assert knife.rules == (plain,)
    assert ruleset.judge(knife.rules) is not None


def test_the_judge_is_made_once_per_set_of_rules() -> None:
    ruleset = rules_for(BUILT_IN)
    one, other = ruleset.view(NAME), ruleset.view("AK-47 | Redline (Minimal Wear)")
    assert ruleset.judge(one.rules) is ruleset.judge(tuple(one.rules))
    assert other.rules == () or ruleset.judge(other.rules) is not ruleset.judge(one.rules)


def test_the_feed_events_context_is_the_one_its_init_makes() -> None:
    quotes = {"market.p25": {(NAME, None): Quote(9_000, 3, NOW - 5)}}
    values = (NOW, {"x": {NAME: 1}}, BudgetState(), "csgo", quotes, {"x": NOW - 9}, {"S1": 7})
    made = eval_context_of(*values)
    assert type(made) is EvalContext
    assert made == EvalContext(*values)
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.now = 0  # type: ignore[misc]
