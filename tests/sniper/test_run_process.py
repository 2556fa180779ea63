"""`snipe run` as a real process against `snipe sandbox` on 127.0.0.1: it trades, stops
cleanly on SIGTERM with exit 0, keeps its ledger, and never prints the key."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from engine import SystemClock
from engine.ledger import SPENT_STATES, Ledger

EXAMPLE = Path(__file__).resolve().parents[2] / "rules.example.yaml"
KEY = "SENTINEL-KEY-e2e-5f1c"
SNIPE = [sys.executable, "-m", "engine"]

pytestmark = [
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals"),
    pytest.mark.slow,  # two real processes, about 8 s
]


def _read_until(stream: object, marker: str, lines: list[str]) -> str:
    for line in iter(stream.readline, ""):  # type: ignore[attr-defined]
        lines.append(line)
        if marker in line:
            return line
    raise AssertionError(f"{marker!r} never came; got:\n{''.join(lines)}")


def test_run_trades_and_stops_cleanly_on_sigterm(tmp_path: Path) -> None:
    env = {**os.environ, "SNIPE_API_KEY": KEY, "PYTHONUNBUFFERED": "1"}
    ledger = tmp_path / "ledger.sqlite"
    logged: list[str] = []
    with subprocess.Popen(
        [*SNIPE, "sandbox", "--port", "0", "--api-key", KEY, "--speed", "60", "--seed", "7"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    ) as sandbox:
        try:
            line = _read_until(sandbox.stdout, "serving http://127.0.0.1:", [])
            url = line.split("serving ", 1)[1].split()[0]
            with subprocess.Popen(
                [*SNIPE, "run", str(EXAMPLE), "--base-url", url, "--ledger", str(ledger)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
            ) as run:
                _read_until(run.stderr, "snipe.buyer: bought", logged)
                run.send_signal(signal.SIGTERM)
                out, err = run.communicate(timeout=60)
                logged.append(err)
        finally:
            sandbox.terminate()
            sandbox.communicate(timeout=30)
    assert run.returncode == 0, "".join(logged)
    assert "SIGTERM: finishing purchases in flight" in err
    assert KEY not in "".join(logged) + out

    async def bought() -> int:
        async with await Ledger.open(ledger, clock=SystemClock(), readonly=True) as book:
            return sum(p.state in SPENT_STATES for p in await book.purchases())

    assert anyio.run(bought) >= 1
