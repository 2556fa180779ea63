"""`snipe run --api` as a real process against `snipe sandbox` on 127.0.0.1: paused, the
sandbox receives no purchase; resumed, it buys again; a broken rules file is refused with
its place while buying goes on; stop ends the run with exit 0; the ledger names the token
of every action; no answer and no log line holds the API key or a token."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from engine import SystemClock
from engine.ledger import Ledger

from .processes import CONTROL, EXAMPLE, KEY, READ, SNIPE, read_until, wait_for

pytestmark = [
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX processes"),
    pytest.mark.slow,  # two real processes, several seconds
]


def test_pause_resume_reload_and_stop_through_the_api(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "SNIPE_API_KEY": KEY,
        "SNIPE_API_CONTROL_TOKEN": CONTROL,
        "SNIPE_API_READ_TOKEN": READ,
        "PYTHONUNBUFFERED": "1",
    }
    rules = tmp_path / "rules.yaml"
    good = EXAMPLE.read_text()
    rules.write_text(good)
    ledger = tmp_path / "ledger.sqlite"
    logged: list[str] = []
    answers: list[str] = []
    # both on one sped-up clock: the engine searches as often in market time as it would
    # live, so purchases come every few real seconds
    sped = ["--speed", "60", "--origin", f"{time.time():.3f}"]
    with (
        contextlib.ExitStack() as clients,
        subprocess.Popen(
            [*SNIPE, "sandbox", "--port", "0", "--api-key", KEY, "--seed", "7", *sped],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
        ) as sandbox,
    ):
        try:
            line = read_until(sandbox.stdout, "serving http://127.0.0.1:", [])
            url = line.split("serving ", 1)[1].split()[0]
            market = clients.enter_context(httpx.Client(base_url=url))

            def bought() -> int:
                return len(market.get("/_sandbox/ground-truth").json()["purchases"])

            with subprocess.Popen(
                [
                    *SNIPE,
                    "run",
                    str(rules),
                    "--base-url",
                    url,
                    "--ledger",
                    str(ledger),
                    "--api",
                    "127.0.0.1:0",
                    *sped,
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
            ) as run:
                try:
                    line = read_until(run.stderr, "API on http://127.0.0.1:", logged)
                    api_url = line.split("API on ", 1)[1].split()[0]
                    api = clients.enter_context(httpx.Client(base_url=api_url, timeout=10))
                    control = {"authorization": f"Bearer {CONTROL}"}
                    read = {"authorization": f"Bearer {READ}"}

                    def status() -> dict[str, Any]:
                        answer = api.get("/api/status", headers=read)
                        answers.append(answer.text)
                        assert answer.status_code == 200
                        return dict(answer.json())

                    def watched() -> int:
                        # searches, and the live feed's events: while the feed is trusted
                        # the engine searches only to confirm a feed listing
                        now = status()
                        return int(now["searches"]) + int((now["feed"] or {}).get("events", 0))

                    assert api.get("/api/status").status_code == 401
                    assert "<title>snipe</title>" in api.get("/dashboard/").text
                    paused = api.post("/api/pause", headers=control, json={"reason": "e2e"})
                    assert paused.status_code == 200, paused.text
                    before = bought()
                    wait_for("the gate to open", lambda: status()["mode"] == "running")
                    seen = watched()
                    # the market watched while paused: listings seen, none bought
                    wait_for("the market watched while paused", lambda: watched() >= seen + 8)
                    assert bought() == before
                    assert status()["buying_allowed"] is False

                    assert api.post("/api/resume", headers=control).status_code == 200
                    wait_for("a purchase after resuming", lambda: bought() > before)

                    rules.write_text(good.replace("version: 1", "version: 1\nbogus_key: 1"))
                    refused = api.post("/api/reload", headers=control)
                    answers.append(refused.text)
                    assert refused.status_code == 422
                    line = good.splitlines().index("version: 1") + 2  # the line added
                    assert refused.json()["error"].startswith(f"{rules}:{line}:1: bogus_key")
                    # buying goes on under the old rules: still allowed, still searching
                    after = status()
                    assert after["buying_allowed"] is True
                    assert after["rules_file"] == str(rules)
                    seen = watched()
                    wait_for(
                        "the market watched after the refused reload", lambda: watched() >= seen + 8
                    )
                    last = status()
                    assert last["mode"] == "running", last
                    assert last["buying_allowed"] is True

                    stopped = api.post("/api/stop", headers=control)
                    assert stopped.json() == {"stopping": True}
                    out, err = run.communicate(timeout=60)
                    logged.append(err)
                finally:
                    if run.poll() is None:
                        run.kill()
        finally:
            sandbox.terminate()
            sandbox.communicate(timeout=30)
    text = "".join(logged)
    assert run.returncode == 0, text
    assert "stop through the API by control" in text
    for secret in (KEY, CONTROL, READ):
        assert secret not in text + out + "".join(answers)

    async def actions() -> list[tuple[str, str, str]]:
        async with await Ledger.open(ledger, clock=SystemClock(), readonly=True) as book:
            return [(e.action, e.actor, e.outcome) for e in await book.control_events()]

    assert anyio.run(actions) == [
        ("pause", "control", "paused"),
        ("resume", "control", "resumed"),
        ("reload", "control", "refused"),
        ("stop", "control", "stopping"),
    ]
