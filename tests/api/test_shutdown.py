"""A stopped `snipe run --api` ends quietly on asyncio and trio: no traceback on stderr, even
with the dashboard's connections open (a kept-alive poll and the live event stream) at the
moment it stops, whether the stop comes through the API or from a signal (systemd's
SIGTERM, Ctrl-C's SIGINT).

Before the fix, hypercorn's asyncio server was cancelled rather than asked to shut down:
its connection tasks and its lifespan task were left to asyncio, which printed their
``CancelledError`` and ``LifespanFailureError`` tracebacks as the process ended."""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from .processes import CONTROL, EXAMPLE, READ, Sped, run_process, sandbox_process, wait_for

pytestmark = [
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX processes"),
    pytest.mark.slow,  # real processes
]


@pytest.fixture(scope="module")
def sandbox_url() -> Iterator[str]:
    with sandbox_process(Sped()) as url:
        yield url


def _hold_the_event_stream(url: str, opened: threading.Event, ended: list[str]) -> None:
    """The dashboard's live stream, read until the server ends it."""
    headers = {"authorization": f"Bearer {READ}"}
    try:
        with (
            httpx.Client(base_url=url, timeout=30) as client,
            client.stream("GET", "/api/events", headers=headers) as stream,
        ):
            for _ in stream.iter_lines():
                opened.set()
        ended.append("closed")
    except httpx.HTTPError as exc:  # a stream cut off rather than ended is a fault too
        ended.append(f"cut: {exc!r}")
    finally:
        opened.set()


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize("stop", ["api", "SIGTERM", "SIGINT"])
def test_a_stopped_run_prints_no_traceback(
    tmp_path: Path, sandbox_url: str, backend: str, stop: str
) -> None:
    logged: list[str] = []
    ended: list[str] = []
    with run_process(
        EXAMPLE,
        tmp_path / "ledger.sqlite",
        sandbox_url,
        Sped(),
        logged,
        "127.0.0.1:0",
        extra=["--backend", backend],
    ) as (run, api_url):
        opened = threading.Event()
        reader = threading.Thread(
            target=_hold_the_event_stream, args=(api_url, opened, ended), daemon=True
        )
        reader.start()
        assert opened.wait(30), "the event stream never opened"
        with httpx.Client(base_url=api_url, timeout=30) as poller:  # kept alive
            read = {"authorization": f"Bearer {READ}"}

            def running() -> bool:
                return bool(poller.get("/api/status", headers=read).json()["mode"] == "running")

            wait_for("the start-up gate to open", running)
            if stop == "api":
                control = {"authorization": f"Bearer {CONTROL}"}
                assert poller.post("/api/stop", headers=control).status_code == 200
            else:
                run.send_signal(getattr(signal, stop))
            assert run.wait(timeout=60) == 0, "".join(logged)
        reader.join(timeout=30)
    text = "".join(logged)
    for fault in ("Traceback", "CancelledError", "LifespanFailure", "never retrieved", "asyncio:"):
        assert fault not in text, text
    assert "[stopped]" in text
    assert ended == ["closed"], ended
