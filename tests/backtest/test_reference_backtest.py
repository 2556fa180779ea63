"""Backtests with learned references: ``versus: market.p25`` avoids the overpriced-platform
trap that ``platform_price`` falls for; the report gives the margin against each reference;
and the learned references use nothing from later in the recording."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine._plugins import make_plugin_host
from engine.backtest import build_report
from engine.backtest._report import markdown
from engine.rules import RuleSet, load_rules_text

from .support import REDLINE, T0, TRADE_LINK, Step, backtest, entry, listing, write

HONEST = [listing(str(100 + i), 10_000 + 10 * i) for i in range(40)]
TRAP = listing("900", 14_000)  # 30% under its platform_price, 38% over what it sells for
BARGAIN = listing("901", 7_000)
OPENING = listing("1", 19_000)


def _arrive(at: float, listed: list[Any], row: Any, platform_price: int) -> list[Step]:
    return [(at, "snap", listed), (at, "search", [entry(row[0], row[2], platform_price)])]


def recording() -> list[Step]:
    """The market lists at $10.00-$10.39 (40 listings, one each 30 s, all staying; their
    platform_price $12.00). After half an hour, a trap at $14.00 whose platform_price is inflated
    to $20.00, then a real bargain at $7.00."""
    steps: list[Step] = _arrive(0.0, [OPENING], OPENING, 20_000)
    listed: list[Any] = [OPENING]
    for i, row in enumerate(HONEST):
        listed = [*listed, row]
        steps += _arrive(30.0 * (i + 1), listed, row, 12_000)
    steps += _arrive(1800.0, [*listed, TRAP], TRAP, 20_000)
    steps += _arrive(1850.0, [*listed, TRAP, BARGAIN], BARGAIN, 12_000)
    steps.append((2100.0, "snap", [*listed, TRAP, BARGAIN]))
    return steps


def rules(discount: str) -> RuleSet:
    text = f"""
version: 1
account: {{base_url: "http://replay", trade_link: "{TRADE_LINK}"}}
budgets: {{per_day: "500.00", total: "500.00"}}
prices: {{market: {{hold: 5m, window: 1d}}}}
rules:
  - name: deals
    match: {{names: ["{REDLINE}"], game: csgo}}
    max_price: "50.00"
    discount: {discount}
"""
    return load_rules_text(text, host=make_plugin_host(load_entry_points=False))


async def test_market_p25_avoids_the_overpriced_platform_trap(tmp_path: Path) -> None:
    data = write(tmp_path / "rec", recording())
    naive = await backtest(rules("{min: 30, versus: platform_price}"), data, race_factor=0.0)
    learned = await backtest(
        rules("{min: 25, versus: market.p25, min_observations: 20}"), data, race_factor=0.0
    )
    assert {p["item_id"] for p in naive.purchases} == {"900", "901"}  # the trap, too
    assert {p["item_id"] for p in learned.purchases} == {"901"}  # only the real bargain

    naive_margins = build_report(naive).summary["references"]
    learned_margins = build_report(learned).summary["references"]
    # platform_price flatters the trap-buying rule; what the market sells for does not
    assert naive_margins["platform_price"]["margin"] > 0
    assert naive_margins["market.p25"]["margin"] < 0
    assert naive_margins["market.median"]["margin"] < 0
    assert learned_margins["market.p25"]["margin"] > 0
    assert learned_margins["market.p25"]["purchases"] == 1
    text = markdown(build_report(learned).summary, chart=False)
    assert "## Margin against each reference" in text
    assert "| market.p25 | 1 | $7.00 |" in text


@pytest.mark.slow
async def test_the_learned_reference_uses_nothing_from_later_in_the_recording(
    tmp_path: Path,
) -> None:
    """Stopped at a moment, a replay of the whole recording has learnt exactly what a
    replay of the recording cut at that moment has, and decided the same at the same
    times: the learned reference never knows the future."""
    cut_at = 1825.0
    whole = write(tmp_path / "whole", recording())
    head = [s for s in recording() if s[0] <= cut_at]
    last_snapshot = next(s[2] for s in reversed(head) if s[1] == "snap")
    cut = write(tmp_path / "cut", [*head, (cut_at, "snap", last_snapshot)])
    rule_set = rules("{min: 25, versus: market.p25, min_observations: 20}")
    stopped = await backtest(rule_set, whole, race_factor=0.0, until=T0 + cut_at)
    part = await backtest(rule_set, cut, race_factor=0.0, until=T0 + cut_at)
    full = await backtest(rule_set, whole, race_factor=0.0)
    assert stopped.references_at_end == part.references_at_end
    assert [t for t, _ in stopped.decision_times] == [t for t, _ in part.decision_times]
    assert all(applied <= t for t, applied in full.decision_times)
    p25, seen = part.references_at_end[REDLINE]["market.p25"]
    assert seen == 40
    assert p25 is not None
    assert 10_000 <= p25 <= 10_110
    assert full.references_at_end != part.references_at_end  # it went on learning


async def test_a_backtest_reads_the_service_price_list_on_its_schedule(tmp_path: Path) -> None:
    """The engine's references step fetches GET /v1/prices in a backtest as it does live
    (it used to be skipped there, so a rule priced against it never bought)."""
    data = write(tmp_path / "rec", recording())
    # prices.service.every is 10 minutes: fetched at start and again within the recording
    ruleset = rules("{min: 30, versus: service.platform_price, max_age: 15m}")
    run = await backtest(ruleset, data, race_factor=0.0)
    assert "901" in {p["item_id"] for p in run.purchases}  # 42% under the list's price
