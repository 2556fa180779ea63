"""Property: whatever the listings and the money already committed, the decisions of one
batch never break a cap, never pay above max_price and never buy a listing twice."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.rules import BudgetState, RuleSpend, evaluate
from engine.testing import NOW, make_context, make_listing, rules_for

NAMES = ["AK-47 | Redline (Field-Tested)", "AWP | Asiimov (Field-Tested)"]
RULES = rules_for(
    f"""\
version: 1
account: {{base_url: "https://market.example.com"}}
budgets: {{per_day: "60.00", total: "100.00"}}
rules:
  - name: both
    match: {{names: {NAMES!r}}}
    max_price: "25.00"
    max_count: 4
    max_spend: "70.00"
  - name: redline
    priority: 3
    match: {{names: ["{NAMES[0]}"]}}
    discount: 10
    hold: {{max_wait: 2d}}
    max_price: "30.00"
    max_count: 2
"""
)
CAPS = {"both": (4, 70_000, 25_000), "redline": (2, 10**12, 30_000)}

listings = st.lists(
    st.builds(
        lambda i, name, price, ref, locked: make_listing(
            item_id=str(i),
            name=name,
            price=price,
            platform_price=ref,
            **({"unlock_at": NOW + locked, "send_until": NOW + locked + 86_400} if locked else {}),
        ),
        st.integers(0, 30),  # repeated ids: the same listing seen twice
        st.sampled_from(NAMES),
        st.integers(0, 40_000),
        st.one_of(st.none(), st.integers(1, 50_000)),
        st.one_of(st.just(0), st.integers(1, 4 * 86_400)),
    ),
    max_size=40,
)
spends = st.builds(RuleSpend, st.integers(0, 80_000), st.integers(0, 5))


@settings(max_examples=300, deadline=None)
@given(
    listings,
    st.integers(0, 70_000),
    st.integers(0, 110_000),
    st.dictionaries(st.sampled_from(["both", "redline"]), spends),
)
def test_caps_always_hold(batch, today, total, per_rule) -> None:  # type: ignore[no-untyped-def]
    budget = BudgetState(spent_today=today, spent_total=max(today, total), per_rule=per_rule)
    decisions = evaluate(RULES, batch, make_context(budget=budget))
    accepted = [d for d in decisions if d.accepted]
    assert len({d.item_id for d in accepted}) == len(accepted)  # never bought twice
    spent = sum(d.price for d in accepted)
    if accepted:
        assert budget.spent_today + spent <= 60_000
        assert budget.spent_total + spent <= 100_000
    for rule, count in Counter(d.rule for d in accepted).items():
        max_count, max_spend, max_price = CAPS[rule]
        before = per_rule.get(rule, RuleSpend())
        mine = [d for d in accepted if d.rule == rule]
        assert before.count + count <= max_count
        assert before.spent + sum(d.price for d in mine) <= max_spend
        assert all(d.price <= max_price for d in mine)
        assert all(d.allow_trade_locked == (d.listing.unlock_at is not None) for d in mine)
    for d in decisions:
        assert d.reasons  # every decision, accepted or not, says why
