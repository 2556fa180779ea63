"""Property: the fast path (:func:`scan`, one generated plan per set of rules watching a
name) accepts exactly the listings :func:`evaluate` accepts, and the reasons it works out
on demand for a rejected pair are the ones the full evaluation gives, whatever the
listings, including a criterion that raises on some of them."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.hookspecs import hookimpl
from engine.models import Listing
from engine.rules import (
    BudgetState,
    Compiled,
    Criterion,
    EvalContext,
    NameView,
    RuleContext,
    evaluate,
    scan,
)
from engine.testing import NOW, make_context, make_listing, rules_for

DAY = 86_400
NAMES = [
    "AK-47 | Redline (Field-Tested)",
    "AWP | Asiimov (Field-Tested)",
    "M4A4 | Howl (Minimal Wear)",
    "★ Karambit | Doppler (Factory New)",
    "Glock-18 | Fade (Factory New)",  # no rule watches it
]


class FussyPlugin:
    """A criterion that raises on prices ending in 7 and passes odd prices: a raise must
    fail its own rule only, in both paths."""

    @hookimpl
    def snipe_register_criteria(self) -> list[Criterion]:
        def compile_(value: Any, rule: RuleContext) -> Compiled:
            def odd(listing: Listing, view: NameView, ctx: EvalContext) -> str | None:
                if listing.price % 10 == 7:
                    raise ValueError("sevens are unlucky")
                return None if listing.price % 2 else "even price"

            return Compiled(predicate=odd, summary="odd price")

        return [Criterion("fussy", bool, compile_, description="odd prices; raises on 7s")]


RULES = rules_for(
    f"""\
version: 1
account: {{base_url: "https://market.example.com"}}
budgets: {{per_day: "120.00", total: "300.00"}}
rules:
  - name: cheap-redline
    priority: 2
    match: {{names: ["{NAMES[0]}", "{NAMES[1]}"]}}
    max_price: "30.00"
    discount: 10
    float: {{max: 0.38}}
    max_count: 3
  - name: fussy
    match: {{names: ["{NAMES[0]}", "{NAMES[2]}"]}}
    max_price: "80.00"
    fussy: true
  - name: held
    match: {{names: ["{NAMES[1]}", "{NAMES[2]}"]}}
    max_price: "60.00"
    discount: 5
    hold: {{max_wait: 3d, extra_discount: 2}}
    max_spend: "100.00"
  - name: stickered
    match: {{patterns: ["AK-47 | *", "M4A4 | *"]}}
    max_price: "90.00"
    stickers: {{min_value: "20.00"}}
  - name: doppler
    priority: 1
    match: {{names: ["{NAMES[3]}"]}}
    max_price: "200.00"
    phases: [Ruby, Phase 2]
""",
    ("fussy", FussyPlugin()),
)

MAX_PRICES = [30_000, 60_000, 80_000, 90_000, 200_000]
sticker = st.fixed_dictionaries(
    {
        "name": st.sampled_from(["Sticker A | Katowice 2014", "Sticker B"]),
        "price": st.integers(0, 30_000),
        "wear": st.one_of(st.none(), st.floats(0, 1)),
    }
)


@st.composite
def listings(draw: st.DrawFn, item_id: int) -> Listing:
    fields: dict[str, Any] = {
        "item_id": str(item_id),
        "name": draw(st.sampled_from(NAMES)),
        # the rules' max_price values themselves, where < and <= differ
        "price": draw(st.one_of(st.integers(0, 250_000), st.sampled_from(MAX_PRICES))),
        "platform_price": draw(st.one_of(st.none(), st.integers(1, 250_000))),
        "float": draw(st.one_of(st.none(), st.floats(0, 1))),
        "phase": draw(st.sampled_from([None, "", "Ruby", "Phase 2", "Phase 4"])),
        "stickers": [
            {**s, "slot": slot} for slot, s in enumerate(draw(st.lists(sticker, max_size=4)))
        ],
    }
    if draw(st.booleans()):
        fields["unlock_at"] = NOW + draw(st.integers(-DAY, 5 * DAY))
        fields["send_until"] = draw(
            st.one_of(st.none(), st.integers(fields["unlock_at"], fields["unlock_at"] + 9 * DAY))
        )
    return make_listing(**fields)


batches = st.integers(0, 40).flatmap(
    lambda n: st.tuples(*(listings(i) for i in range(n))).map(list)
)
budgets = st.builds(
    BudgetState, spent_today=st.integers(0, 120_000), spent_total=st.integers(0, 300_000)
)


@settings(max_examples=300, deadline=None)
@given(batch=batches, budget=budgets, grouped=st.booleans())
def test_scan_accepts_what_evaluate_accepts_for_the_same_reasons(
    batch: list[Listing], budget: BudgetState, grouped: bool
) -> None:
    if grouped:  # name by name, as a search answer holds them
        batch.sort(key=lambda listing: NAMES.index(listing.name))
    context = make_context(budget=budget)
    full = evaluate(RULES, batch, context)
    fast = scan(RULES, batch, context)
    accepted = [(d.item_id, d.rule, d.price) for d in full if d.accepted]
    assert [(d.item_id, d.rule, d.price) for d in fast.decisions if d.accepted] == accepted
    # every decision equal, reasons included (Decision equality compares them)
    assert fast.all_decisions() == full
    # the on-demand reasons are those of the same compiled rule's full check
    for decision in fast.rejections():
        rule = RULES.rule(decision.rule)
        found = rule.check(decision.listing, RULES.view(decision.name), context)
        assert found
        assert decision.reasons == tuple(found)


@settings(max_examples=100, deadline=None)
@given(batch=batches)
def test_every_rules_plan_passes_exactly_what_its_rules_pass(batch: list[Listing]) -> None:
    context = make_context()
    for listing in batch:
        view = RULES.view(listing.name)
        expected = [r.name for r in view.rules if r.passes(listing, view, context)]
        assert [r.name for r in view.rules if not r.check(listing, view, context)] == expected
        hits: list[tuple[Any, Listing, NameView]] = []
        entry = RULES._index[listing.name]
        if entry:
            entry[2](listing, view, context, hits.append)
        assert [rule.name for rule, _, _ in hits] == expected


def test_a_raising_criterion_fails_its_rule_only() -> None:
    # price ending in 7: fussy raises; the stickers rule on the same name still accepts
    listing = make_listing(
        name=NAMES[0],
        price=20_007,
        stickers=[{"name": "Sticker B", "price": 25_000, "wear": None, "slot": 0}],
    )
    fast = scan(RULES, [listing], make_context())
    assert [d.rule for d in fast.decisions if d.accepted] == ["stickered"]
    (fussy,) = [d for d in fast.rejections() if d.rule == "fussy"]
    assert "raised ValueError: sevens are unlucky" in fussy.reasons[0]
    assert fast.all_decisions() == evaluate(RULES, [listing], make_context())
