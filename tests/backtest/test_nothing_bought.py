"""A replay that buys nothing says why, and draws no chart of flat lines (issue 18)."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.cli import main

from .support import REDLINE, TRADE_LINK, listing, market, write


def _rules(name: str, discount: int) -> str:
    return f"""
version: 1
account: {{base_url: "http://replay", trade_link: "{TRADE_LINK}"}}
budgets: {{per_day: "100.00", total: "100.00"}}
rules:
  - name: deals
    match: {{names: ["{name}"], game: csgo}}
    discount: {discount}
    max_price: "50.00"
"""


@pytest.mark.parametrize(
    ("name", "discount", "says"),
    [
        (REDLINE, 90, "rule 'deals' turned listings down: "),
        ("Nothing | Listed (Field-Tested)", 10, "no listing of a name the rules watch was seen"),
    ],
)
def test_a_backtest_that_buys_nothing_says_why_and_draws_no_flat_chart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, discount: int, says: str
) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text(_rules(name, discount))
    steps = market(300, [listing("1", 8000), listing("2", 9500)])
    data = write(tmp_path / "rec", sorted(steps, key=lambda s: s[0]))
    report = tmp_path / "report"
    argv = ["backtest", str(rules), "--data", str(data), "--report", str(report), "--quiet"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "purchases 0 of 0 attempts" in out
    assert f"nothing bought: {says}" in out
    md = (report / "report.md").read_text()
    assert "## Nothing was bought" in md
    assert says in md
    assert says.replace("'", "&#x27;") in (report / "report.html").read_text()
    assert not (report / "chart.png").exists()
    assert "chart.png" not in md
