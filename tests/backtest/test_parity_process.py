"""``snipe run --record`` as a real process against ``snipe sandbox`` on 127.0.0.1, then
``snipe backtest RULES DIR --against LEDGER``; and the option's bad input."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.cli import main

EXAMPLE = Path(__file__).resolve().parents[2] / "rules.example.yaml"
KEY = "SENTINEL-KEY-parity-93e1"
SNIPE = [sys.executable, "-m", "engine"]
TRADE_LINK = "https://steamcommunity.com/tradeoffer/new/?partner=123456789&token=AbCdEfGh"

RULES = """version: 1
account: {{base_url: "{url}", trade_link: "{link}", ledger: "{ledger}", feed: "off"}}
budgets: {{per_day: "300.00", total: "300.00"}}
rules:
  - name: deals
    match: {{patterns: ["*"], game: csgo}}
    discount: 20
    max_price: "40.00"
"""


def test_record_refuses_a_directory_that_is_not_a_recording(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SNIPE_API_KEY", "not-used")
    (tmp_path / "recording.json").write_text('{"format": "something else"}')
    assert main(["run", str(EXAMPLE), "--dry-run", "--record", str(tmp_path)]) == 2
    assert "recording.json" in capsys.readouterr().err


@pytest.mark.slow  # two real processes, about 20 s
def test_a_recorded_run_replays_against_its_ledger(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = {**os.environ, "SNIPE_API_KEY": KEY, "PYTHONUNBUFFERED": "1", "SNIPE_PLUGINS": ""}
    origin = repr(time.time())
    speed = ["--speed", "60", "--origin", origin]
    ledger, recording = tmp_path / "ledger.sqlite", tmp_path / "rec"
    rules = tmp_path / "rules.yaml"
    command = [*SNIPE, "sandbox", "--port", "0", "--api-key", KEY, "--seed", "7", *speed]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env) as sandbox:
        try:
            assert sandbox.stdout is not None
            url = next(
                line.split("serving ", 1)[1].split()[0]
                for line in sandbox.stdout
                if "serving http://127.0.0.1:" in line
            )
            rules.write_text(RULES.format(url=url, link=TRADE_LINK, ledger=ledger))
            run = subprocess.run(
                [*SNIPE, "run", str(rules), "--record", str(recording), "--for", "10m", *speed],
                capture_output=True,
                text=True,
                env=env,
                timeout=120,
            )
        finally:
            sandbox.terminate()
            sandbox.communicate(timeout=30)
    assert run.returncode == 0, run.stderr
    assert "recorded" in run.stderr
    assert "snapshots" in run.stderr
    files = [p for p in recording.rglob("*") if p.is_file()]
    assert not [p for p in files if p.name.endswith(".open")]  # closed at the stop
    for path in files:
        data = path.read_bytes()
        assert KEY.encode() not in (gzip.decompress(data) if path.suffix == ".gz" else data)
    assert main(["backtest", str(rules), str(recording), "--against", str(ledger), "--json"]) == 0
    parity = json.loads(capsys.readouterr().out)
    assert parity["rows"]
    assert all(r["cause"] for r in parity["rows"] if r["verdict"] != "agreed")
