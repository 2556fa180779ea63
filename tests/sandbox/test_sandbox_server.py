"""The sandbox served over a real socket on 127.0.0.1: with hypercorn on both backends,
and as ``snipe sandbox``."""

from __future__ import annotations

import os
import selectors
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from engine import ConfigError, ScaledClock
from engine.sandbox import MarketConfig, Sandbox, SandboxConfig, served


async def test_served_sandbox_answers_and_drops_connections_for_real() -> None:
    sandbox = Sandbox(
        SandboxConfig(market=MarketConfig(size=200)), clock=ScaledClock(start=time.time())
    )
    async with served(sandbox) as url:
        assert url.startswith("http://127.0.0.1:")
        async with httpx.AsyncClient(base_url=url, timeout=5.0) as http:
            user = await http.get("/v1/user", params={"api": sandbox.api_key})
            assert user.status_code == 200
            assert user.json()["success"] is True
            assert (await http.get("/v1/user", params={"api": "x"})).status_code == 403
            listing = min(
                (li for li in sandbox.market.listings.values() if not li.locked(sandbox.now())),
                key=lambda li: li.price,
            )
            account = sandbox.default_account
            sandbox.inject("/v1/buy-one-p2p", "drop_connection", count=1)
            params = {
                "api": sandbox.api_key, "item_id": str(listing.item_id), "price": listing.price,
                "partner": account.partner, "token": account.token, "project_id": "wire",
            }  # fmt: skip
            with pytest.raises(httpx.RemoteProtocolError):
                await http.get("/v1/buy-one-p2p", params=params)
            assert [p["project_id"] for p in sandbox.ground_truth()["purchases"]] == ["wire"]


@pytest.mark.slow
async def test_served_timeout_after_commit_hangs_on_the_wire() -> None:
    sandbox = Sandbox(
        SandboxConfig(market=MarketConfig(size=100)), clock=ScaledClock(start=time.time())
    )
    async with served(sandbox) as url:
        listing = min(
            (li for li in sandbox.market.listings.values() if not li.locked(sandbox.now())),
            key=lambda li: li.price,
        )
        account = sandbox.default_account
        sandbox.inject("/v1/buy-one-p2p", "timeout_after_commit", count=1, seconds=0.8)
        params = {
            "api": sandbox.api_key, "item_id": str(listing.item_id), "price": listing.price,
            "partner": account.partner, "token": account.token, "project_id": "hang",
        }  # fmt: skip
        async with httpx.AsyncClient(base_url=url, timeout=0.2) as http:
            with pytest.raises(httpx.ReadTimeout):
                await http.get("/v1/buy-one-p2p", params=params)
        assert [p["project_id"] for p in sandbox.ground_truth()["purchases"]] == ["hang"]


def _read_until(proc: subprocess.Popen[bytes], marker: str, timeout: float) -> list[str]:
    """Lines the process printed, up to the one containing ``marker``. Reads the pipe's
    bytes directly: a buffered readline could hold lines the selector no longer sees."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    selector = selectors.DefaultSelector()
    selector.register(fd, selectors.EVENT_READ)
    text = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if selector.select(timeout=0.1):
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            text += chunk
            lines = text.decode("utf-8", "replace").splitlines()
            if any(marker in line for line in lines):
                return lines
    raise AssertionError(f"no {marker!r} in {text!r}")


@pytest.mark.slow
def test_snipe_sandbox_prints_address_and_key_and_answers() -> None:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    command = [sys.executable, "-m", "engine", "sandbox", "--port", "0", "--size", "200",
               "--api-key", "cli-test-key", "--seed", "4", "--speed", "60"]  # fmt: skip
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    try:
        lines = _read_until(proc, "ground truth", timeout=60.0)
        url = lines[0].split("serving ")[1].strip()
        assert url.startswith("http://127.0.0.1:")
        assert any("cli-test-key" in line and "$1,000.00" in line for line in lines)
        answer = httpx.get(f"{url}/v1/user", params={"api": "cli-test-key"}, timeout=5.0)
        assert answer.json()["user"]["wallet"] == 1_000_000
        snapshot = httpx.get(f"{url}/v1/prices/snapshot", params={"format": "csv"}, timeout=5.0)
        assert snapshot.headers["content-type"] == "application/gzip"
    finally:
        proc.terminate()
        proc.communicate(timeout=10)


def test_snipe_sandbox_refuses_a_bad_speed(capsys: pytest.CaptureFixture[str]) -> None:
    from engine.cli import main

    assert main(["sandbox", "--speed", "0"]) == 2
    assert "--speed" in capsys.readouterr().err


@pytest.mark.parametrize("jitter", ["fast", "500-100", "-5", "1-inf"])
def test_snipe_sandbox_refuses_a_bad_jitter(
    jitter: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from engine.cli import main

    assert main(["sandbox", f"--jitter-ms={jitter}"]) == 2  # bad input, as for every subcommand
    assert "--jitter-ms" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "seconds"), [("0-1500", (0.0, 1.5)), ("200,600", (0.2, 0.6)), ("50", (0.05, 0.05))]
)
def test_snipe_sandbox_reads_a_jitter_range(text: str, seconds: tuple[float, float]) -> None:
    from engine.cli._sandbox import _jitter

    assert _jitter(text) == pytest.approx(seconds)


def test_a_scenario_may_set_the_jitter(tmp_path: Path) -> None:
    scenario = tmp_path / "jitter.yaml"
    scenario.write_text("jitter_ms: [100, 900]\nfaults: []\n")
    assert Sandbox(scenario=scenario).config.jitter == pytest.approx((0.1, 0.9))
    scenario.write_text("jitter_ms: [900, 100]\n")
    with pytest.raises(ConfigError, match="jitter_ms"):
        Sandbox(scenario=scenario)


def test_snipe_sandbox_names_the_place_of_a_bad_scenario(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from engine.cli import main

    scenario = tmp_path / "faults.yaml"
    scenario.write_text("faults:\n  - endpoint: GET /v1/user\n    kind: meltdown\n    count: 1\n")
    assert main(["sandbox", "--scenario", str(scenario), "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert f"{scenario}:3:5" in err
    assert "faults.0.kind" in err
