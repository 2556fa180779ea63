"""`snipe run`'s controls as a user meets them (issue 18): a corrupted ledger, ``--for``
before the start-up gate has passed, ``--remove-orders`` and what a clean stop leaves open."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.cli import main

TRADE_LINK = "https://steamcommunity.com/tradeoffer/new/?partner=123456789&token=AbCdEfGh"


def _rules(base_url: str, extra: str = "") -> str:
    return f"""
version: 1
account:
  base_url: "{base_url}"
  trade_link: "{TRADE_LINK}"
budgets: {{per_day: "500.00", total: "1000.00"}}
rules:
  - name: deals
    match: {{names: ["AWP | Asiimov (Field-Tested)"]}}
    discount: 20
    max_price: "200.00"
{extra}"""


def test_a_corrupted_ledger_is_one_line_and_exit_2_with_no_limits_file_left(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SNIPE_API_KEY", "not-used")
    rules = tmp_path / "rules.yaml"
    rules.write_text(_rules("http://127.0.0.1:9"))
    ledger = tmp_path / "ledger.sqlite"
    ledger.write_bytes(b"not a database at all\n" * 100)
    code = main(["run", str(rules), "--ledger", str(ledger), "--for", "1"])
    err = capsys.readouterr().err
    assert code == 2
    assert "Traceback" not in err
    said = [line for line in err.splitlines() if "not a database" in line]
    assert len(said) == 1, err
    assert str(ledger) in said[0]
    assert len(err.splitlines()) <= 3, err  # the banner, the one line: no traceback
    assert not (tmp_path / "ledger.sqlite.limits").exists()
