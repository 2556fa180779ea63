"""The backtest report's "Portfolio at the end": the same valuation as ``snipe
portfolio``, from the replay's in-memory ledger and reference hub, with the rules'
``portfolio:`` settings."""

from __future__ import annotations

from pathlib import Path

from backtest.support import REDLINE, TRADE_LINK, backtest, listing, market, write

from engine._plugins import make_plugin_host
from engine.backtest import build_report
from engine.backtest._report import html_page, markdown
from engine.rules import RuleSet, load_rules_text


def _rules(tmp_path: Path) -> RuleSet:
    buff = tmp_path / "buff.csv"
    buff.write_text(f'market_hash_name,price\n"{REDLINE}",11.00\n')
    text = f"""
version: 1
account: {{base_url: "http://replay", trade_link: "{TRADE_LINK}"}}
budgets: {{per_day: "100.00", total: "100.00"}}
prices:
  lists:
    buff: {{path: "{buff}"}}
portfolio: {{value_by: file.buff, sale_fee: 5%, channel: buff}}
rules:
  - name: deals
    match: {{names: ["{REDLINE}"], game: csgo}}
    discount: 15
    max_price: "50.00"
"""
    return load_rules_text(text, host=make_plugin_host(load_entry_points=False))


async def test_the_report_values_what_was_held_at_the_end(tmp_path: Path) -> None:
    steps = market(300, [listing("1", 8000), listing("2", 9500)])  # only "1" is 15% off
    data = write(tmp_path / "rec", steps)
    run = await backtest(_rules(tmp_path), data, seed=7)
    report = build_report(run)
    held = [p for p in report.summary["purchases"] if p["state"] in {"BOUGHT", "COMPLETED"}]
    assert held
    section = report.summary["portfolio"]
    assert run.portfolio is not None
    assert section == run.portfolio.to_json()
    # by hand: each $11.00 on the list, less 5% ($0.55), against what it was charged
    totals = section["totals"]
    assert totals["holdings"] == len(held)
    assert totals["cost"] == sum(p["charged"] for p in held)
    assert totals["value"] == len(held) * (11_000 - 550)
    assert totals["margin"] == len(held) * 10_450 - totals["cost"]
    assert section["fee"].startswith("sale fee 5% (buff)")
    md = markdown(report.summary, chart=False)
    assert "## Portfolio at the end" in md
    assert "valued by `file.buff`" in md
    assert "Portfolio at the end" in html_page(report.summary, None)
