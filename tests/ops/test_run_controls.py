"""`snipe run`'s controls as a user meets them (issue 18): a corrupted ledger, ``--for``
before the start-up gate has passed, ``--remove-orders`` and what a clean stop leaves open."""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx
import pytest

from engine import VirtualClock
from engine._plugins import make_plugin_host
from engine.cli import main
from engine.cli._run import _run_until_signal, gate_words
from engine.rules import load_rules_text
from engine.sniper._session import SessionOptions, open_engine

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


async def test_for_bounds_the_run_while_the_start_up_gate_waits_for_a_dead_address(
    tmp_path: Path,
) -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    clock = VirtualClock()
    host = make_plugin_host(load_entry_points=False)
    ruleset = load_rules_text(_rules("http://127.0.0.1:9"), host=host)
    options = SessionOptions(ledger=tmp_path / "l.sqlite", transport=httpx.MockTransport(refuse))
    start = clock.now()
    async with open_engine(
        ruleset, api_key="k" * 20, clock=clock, host=host, options=options
    ) as engine:
        # a real-time guard: before the fix the gate waited for ever
        with anyio.fail_after(10):
            async with clock.autojump():
                await _run_until_signal(engine, 10.0)
        assert clock.now() - start == pytest.approx(10.0, abs=1.0)
        assert engine.status.start_attempts > 1
        said = gate_words(engine)
        assert said is not None
        assert "never passed the start-up gate" in said
        assert "nothing was bought" in said
