"""``snipe record`` as a user meets it (issue 18): ``--for`` reads durations like ``run``,
progress is printed while it records, and recording nothing is an error whose empty
folder is not left behind."""

from __future__ import annotations

import functools
from pathlib import Path

import httpx
import pytest

import engine.client
from engine import VirtualClock
from engine.backtest import read_records
from engine.cli import build_parser, main
from engine.sandbox import MarketConfig, Sandbox, SandboxConfig


@pytest.mark.parametrize(("text", "seconds"), [("1h", 3600.0), ("10m", 600.0), ("45", 45.0)])
def test_for_takes_durations_like_run(text: str, seconds: float) -> None:
    args = build_parser().parse_args(["record", "--out", "rec", "--for", text])
    assert args.seconds == seconds


def test_recording_nothing_exits_non_zero_and_leaves_no_empty_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SNIPE_API_KEY", raising=False)
    out = tmp_path / "rec"
    code = main(["record", "--out", str(out), "--base-url", "http://127.0.0.1:9", "--for", "0.3"])
    err = capsys.readouterr().err
    assert code == 1
    assert "nothing was recorded" in err
    assert "nothing answers at http://127.0.0.1:9" in err
    assert not out.exists()


def test_recording_prints_progress_while_it_records(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    market = MarketConfig(size=200, deal_share=0.0, hold_share=0.0, mean_lifetime=10**9)
    sandbox = Sandbox(SandboxConfig(seed=2, market=market), clock=VirtualClock())
    monkeypatch.setenv("SNIPE_API_KEY", sandbox.api_key)
    transport = httpx.ASGITransport(app=sandbox.app)
    served = functools.partial(engine.client.MarketClient, transport=transport)
    monkeypatch.setattr(engine.client, "MarketClient", served)
    out = tmp_path / "rec"
    # --feed off: the market is served in-process (the ASGI transport above), where no
    # websocket can reach it
    argv = ["record", "--out", str(out), "--base-url", "http://sandbox", "--feed", "off"]
    code = main([*argv, "--for", "0.4", "--progress", "0.1"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "snipe record: so far 1 snapshots" in err
    assert "key" in [r.k for r in read_records(out)]
