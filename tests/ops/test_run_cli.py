"""`snipe run` end to end, as a process against a served sandbox: notifications reach a
local receiver, /metrics and /healthz answer while it runs, the status file is left for
`snipe status`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import anyio
import httpx
import pytest

from engine import ScaledClock
from engine.cli import main
from engine.sandbox import MarketConfig, Sandbox, SandboxConfig, served
from engine.sniper._statusfile import read_status_file, status_path_for

from .receiver import receiver

TRADE_LINK = "https://steamcommunity.com/tradeoffer/new/?partner=123456789&token=AbCdEfGh"


def _rules(base_url: str, name: str, hook: str, trade_link: str = TRADE_LINK) -> str:
    return f"""
version: 1
account:
  base_url: "{base_url}"
  trade_link: "{trade_link}"
budgets: {{per_day: "500.00", total: "1000.00"}}
notify:
  webhook: {{url: "{hook}"}}
rules:
  - name: deals
    match: {{names: ["{name}"]}}
    discount: 20
    max_price: "200.00"
"""


@pytest.mark.slow
async def test_snipe_run_notifies_serves_metrics_and_leaves_a_status_file(
    tmp_path: Path,
) -> None:
    market = MarketConfig(size=300, deal_share=0.0, hold_share=0.0, mean_lifetime=10**9)
    sandbox = Sandbox(SandboxConfig(seed=3, market=market), clock=ScaledClock(start=time.time()))
    item = next(
        i
        for i in sandbox.market.items
        if i.game == "csgo" and not i.phases and 5_000 < i.reference < 150_000
    )
    from sniper.harness import plant

    deal = plant(sandbox, item, price=item.reference // 2)
    ledger = tmp_path / "ledger.sqlite"
    async with receiver() as hook, served(sandbox) as url:
        rules = tmp_path / "rules.yaml"
        rules.write_text(_rules(url, item.name, f"{hook.url}/snipe"))
        env = {
            **os.environ,
            "SNIPE_API_KEY": sandbox.api_key,
            "SNIPE_WEBHOOK_SECRET": "hook-secret",
            "SNIPE_PLUGINS": "",
        }
        command = [sys.executable, "-m", "engine", "run", str(rules), "--ledger", str(ledger)]
        command += ["--for", "120", "--metrics-port", "0"]
        process = await anyio.open_process(
            command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        async with process:
            with anyio.fail_after(30):
                port = await _metrics_port(ledger)
                await hook.wait_for(1)  # the purchase message: it bought
                async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
                    health = await http.get("/healthz")
                    metrics = await http.get("/metrics")
                process.terminate()  # SIGTERM, as systemd stops it: a clean stop
                await process.wait()
            assert process.stderr is not None
            errors = (await _read_all(process.stderr)).decode()
    assert process.returncode == 0, errors
    assert "hook-secret" not in errors
    assert sandbox.api_key not in errors
    assert metrics.status_code == 200
    assert 'snipe_requests_total{endpoint="GET /v1/buy-one-p2p",outcome="ok"} 1.0' in metrics.text
    assert health.status_code == 200
    assert health.text.startswith("ok: running")  # then the live feed's state
    (message,) = [m for m in hook.received if m.json()["event"] == "purchase"]
    assert message.json()["data"]["item_id"] == str(deal.item_id)
    document = read_status_file(status_path_for(ledger))
    assert document is not None
    assert document["mode"] == "stopped"
    assert document["notifications"]["webhook"]["sent"] >= 1
    done = await anyio.run_process(
        [sys.executable, "-m", "engine", "status", str(ledger), "--json"], check=False
    )
    assert done.returncode == 5  # stopped
    assert json.loads(done.stdout)["purchases_total"] == 1


async def _metrics_port(ledger: Path) -> int:
    while True:
        document = read_status_file(status_path_for(ledger))
        if document and document.get("metrics_port"):
            return int(document["metrics_port"])
        await anyio.sleep(0.02)


async def _read_all(stream: anyio.abc.ByteReceiveStream) -> bytes:
    data = b""
    try:
        while True:
            data += await stream.receive()
    except anyio.EndOfStream:
        return data


def test_run_names_a_missing_notifier_secret(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SNIPE_API_KEY", "not-used")
    monkeypatch.delenv("SNIPE_WEBHOOK_SECRET", raising=False)
    rules = tmp_path / "rules.yaml"
    rules.write_text(_rules("http://127.0.0.1:9", "AWP | Asiimov (Field-Tested)", "http://h"))
    code = main(["run", str(rules), "--ledger", str(tmp_path / "l.sqlite"), "--for", "1"])
    assert code == 2
    err = capsys.readouterr().err
    assert "SNIPE_WEBHOOK_SECRET" in err
    assert "notify.webhook.secret_env" in err


@pytest.mark.parametrize("port", ["http", "-1", "70000"])
def test_run_refuses_a_bad_metrics_port(port: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["run", "rules.yaml", "--metrics-port", port])
    assert info.value.code == 2
    assert "port" in capsys.readouterr().err


def test_run_says_when_the_metrics_port_is_taken(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket

    monkeypatch.setenv("SNIPE_API_KEY", "not-used")
    monkeypatch.setenv("SNIPE_WEBHOOK_SECRET", "s")
    rules = tmp_path / "rules.yaml"
    rules.write_text(_rules("http://127.0.0.1:9", "AWP | Asiimov (Field-Tested)", "http://h"))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        code = main(
            ["run", str(rules), "--ledger", str(tmp_path / "l.sqlite"), "--metrics-port", port]
        )
    assert code == 2
    assert "cannot serve metrics" in capsys.readouterr().err


@pytest.mark.slow
async def test_a_refusal_to_trade_exits_3_and_is_told(tmp_path: Path) -> None:
    sandbox = Sandbox(SandboxConfig(seed=3, market=MarketConfig(size=100)))
    # the sandbox refuses trade links whose partner is 13 modulo 97 ("inventory is private")
    link = "https://steamcommunity.com/tradeoffer/new/?partner=13&token=AbCdEfGh"
    async with receiver() as hook, served(sandbox) as url:
        rules = tmp_path / "rules.yaml"
        rules.write_text(_rules(url, "AWP | Asiimov (Field-Tested)", hook.url, link))
        env = {**os.environ, "SNIPE_API_KEY": sandbox.api_key, "SNIPE_WEBHOOK_SECRET": "s"}
        command = [sys.executable, "-m", "engine", "run", str(rules)]
        command += ["--ledger", str(tmp_path / "l.sqlite"), "--for", "60"]
        with anyio.fail_after(30):
            done = await anyio.run_process(command, env=env, check=False)
    assert done.returncode == 3, done.stderr.decode()
    assert "refusing to trade" in done.stderr.decode()
    assert "Traceback" not in done.stderr.decode()
    (message,) = [m for m in hook.received if m.json()["event"] == "halted"]
    assert "refused to trade" in message.json()["data"]["reason"]
    assert "Trade link cannot be used" in message.json()["data"]["reason"]
