"""Caps hold: per rule (count and spend), per day and in total, counting what was already
spent (in flight included) and what the same batch has already accepted."""

from __future__ import annotations

from typing import Any

import pytest

from engine.rules import BudgetState, RuleSpend, evaluate, explain, summarize_rejections
from engine.testing import decide, make_context, make_listing, rules_for

NAME = "AK-47 | Redline (Field-Tested)"


def rules(extra: str = "", *, per_day: str = "50.00", total: str = "200.00") -> Any:
    return rules_for(
        f"""\
version: 1
account: {{base_url: "https://market.example.com"}}
budgets: {{per_day: "{per_day}", total: "{total}"}}
rules:
  - name: r
    match: {{names: ["{NAME}"]}}
    max_price: "20.00"
{extra}"""
    )


def listings(*prices: int) -> list[Any]:
    return [make_listing(item_id=str(i), price=p) for i, p in enumerate(prices)]


@pytest.mark.parametrize(
    ("extra", "budget", "prices", "bought", "reason"),
    [
        # max_count counts earlier purchases and this batch
        ("    max_count: 2\n", BudgetState(), (1_000, 2_000, 3_000), 2,
         "rule max_count 2 reached: 2 bought"),
        ("    max_count: 2\n", BudgetState(per_rule={"r": RuleSpend(5_000, 1)}),
         (1_000, 2_000), 1, "rule max_count 2 reached: 2 bought"),
        # max_spend: exactly reaching the cap is allowed, one mill more is not
        ('    max_spend: "50.00"\n', BudgetState(per_rule={"r": RuleSpend(44_000, 3)}),
         (6_000,), 1, None),
        ('    max_spend: "50.00"\n', BudgetState(per_rule={"r": RuleSpend(45_000, 3)}),
         (6_000,), 0, "rule cap $50.00 would be exceeded: $45.00 spent + $6.00"),
        # the daily budget, in-flight spend included by the caller
        ("", BudgetState(spent_today=45_000, spent_total=45_000), (5_000, 5_001), 1,
         "daily budget $50.00 would be exceeded: $50.00 spent today + $5.001"),
        # the total budget
        ("", BudgetState(spent_today=0, spent_total=195_000), (5_000, 1_000), 1,
         "total budget $200.00 would be exceeded: $196.00 spent + $5.00"),
    ],
)  # fmt: skip
def test_caps_hold(
    extra: str, budget: BudgetState, prices: tuple[int, ...], bought: int, reason: str | None
) -> None:
    decisions = decide(rules(extra), listings(*prices), budget=budget)
    accepted = [d for d in decisions if d.accepted]
    assert len(accepted) == bought
    if reason is not None:
        rejected = [r for d in decisions if not d.accepted for r in d.reasons]
        assert reason in rejected, rejected


def test_the_cheapest_listings_are_chosen_first_within_a_cap() -> None:
    decisions = decide(rules("    max_count: 2\n"), listings(9_000, 3_000, 5_000, 1_000))
    assert sorted(d.price for d in decisions if d.accepted) == [1_000, 3_000]


def test_a_listing_is_bought_once_by_the_highest_priority_rule() -> None:
    text = f"""\
rules:
  - name: low
    match: {{names: ["{NAME}"]}}
    max_price: "20.00"
  - name: high
    priority: 5
    match: {{patterns: ["AK-47 | *"]}}
    max_price: "20.00"
"""
    decisions = decide(rules_for(text), [make_listing(price=1_000)])
    by_rule = {d.rule: d for d in decisions}
    assert by_rule["high"].accepted
    assert not by_rule["low"].accepted
    assert by_rule["low"].reasons == (
        "already chosen for rule 'high' (higher priority or cheaper)",
    )


def test_a_listing_seen_twice_in_a_batch_is_bought_once() -> None:
    same = make_listing(item_id="7", price=1_000)
    decisions = decide(rules(), [same, same])
    assert [d.accepted for d in decisions].count(True) == 1


def test_evaluate_is_pure() -> None:
    ruleset = rules("    max_count: 1\n")
    ctx = make_context()
    batch = listings(1_000, 2_000)
    first = evaluate(ruleset, batch, ctx)
    assert first == evaluate(ruleset, batch, ctx)  # nothing remembered between calls
    assert ctx.budget == BudgetState()


def test_accepted_decisions_say_why_and_what_to_pay() -> None:
    [decision] = decide(rules('    max_spend: "30.00"\n    float: {max: 0.25}\n'), listings(4_500))
    assert decision.accepted
    assert decision.price == 4_500
    assert decision.action == "buy"
    assert decision.allow_trade_locked is False
    assert "float 0-0.25" in decision.reasons
    assert decision.reasons[-1] == (
        "within budgets: rule $0.00 of $30.00 before, today $4.50 of $50.00, total $4.50 of $200.00"
    )
    assert str(decision).startswith(f"BUY  {NAME} (item 0) at $4.50 - rule 'r'")


def test_why_nothing_was_bought() -> None:
    ruleset = rules("    float: {max: 0.01}\n")
    batch = [make_listing(item_id=str(i), price=1_000, float=0.2 + i / 100) for i in range(3)]
    lines = explain(ruleset, NAME, batch, make_context())
    assert lines[0] == "watched by 'r'"
    assert lines[1].startswith(f"skip {NAME} (item 0) at $1.00 - rule 'r'")
    assert "float 0.2 above max 0.01" in lines[1]
    summary = summarize_rejections(evaluate(ruleset, batch, make_context()))
    assert summary == {"r": {"float # above max #": 3}}
    assert explain(ruleset, NAME, [], make_context())[-1] == f"no listing of {NAME!r} was seen"
