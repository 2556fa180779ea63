"""Real processes for the slow API tests: `snipe sandbox` and `snipe run --api` on
127.0.0.1, both on one sped-up clock so that purchases come every few real seconds."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

EXAMPLE = Path(__file__).resolve().parents[2] / "rules.example.yaml"
KEY = "SENTINEL-KEY-api-e2e-77a1"
CONTROL = "control-token-e2e-0123456789abcdef"
READ = "read-token-e2e-0123456789abcdef"
SNIPE = [sys.executable, "-m", "engine"]


def read_until(stream: Any, marker: str, lines: list[str]) -> str:
    """The first line of ``stream`` holding ``marker`` (every line read goes to ``lines``)."""
    for line in iter(stream.readline, ""):
        lines.append(line)
        if marker in line:
            return line
    raise AssertionError(f"{marker!r} never came; got:\n{''.join(lines)}")


def wait_for(what: str, check: Callable[[], bool], timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def environment() -> dict[str, str]:
    return {
        **os.environ,
        "SNIPE_API_KEY": KEY,
        "SNIPE_API_CONTROL_TOKEN": CONTROL,
        "SNIPE_API_READ_TOKEN": READ,
        "PYTHONUNBUFFERED": "1",
    }


@dataclass
class Sped:
    """The ``--speed``/``--origin`` both processes share."""

    speed: int = 60
    origin: float = 0.0

    def __post_init__(self) -> None:
        self.origin = self.origin or time.time()

    @property
    def args(self) -> list[str]:
        return ["--speed", str(self.speed), "--origin", f"{self.origin:.3f}"]


@contextmanager
def sandbox_process(sped: Sped) -> Iterator[str]:
    """`snipe sandbox` on a free port; yields its URL."""
    with subprocess.Popen(
        [*SNIPE, "sandbox", "--port", "0", "--api-key", KEY, "--seed", "7", *sped.args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=environment(),
    ) as sandbox:
        try:
            line = read_until(sandbox.stdout, "serving http://127.0.0.1:", [])
            yield line.split("serving ", 1)[1].split()[0]
        finally:
            sandbox.terminate()
            sandbox.communicate(timeout=30)


@contextmanager
def run_process(
    rules: Path,
    ledger: Path,
    url: str,
    sped: Sped,
    logged: list[str],
    listen: str,
    *,
    extra: Sequence[str] = (),
) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """`snipe run RULES --api LISTEN [EXTRA...]` against the sandbox at ``url``; yields the
    process and the API's URL once it listens (stderr lines read so far go to ``logged``,
    and the rest as they come)."""
    command = [*SNIPE, "run", str(rules), "--base-url", url, "--ledger", str(ledger)]
    with subprocess.Popen(
        [*command, "--api", listen, *sped.args, *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment(),
    ) as run:
        drain: threading.Thread | None = None
        try:
            line = read_until(run.stderr, "API on http://127.0.0.1:", logged)
            # read the rest as it comes: a full pipe would stall the engine's logging
            drain = threading.Thread(target=logged.extend, args=(run.stderr,), daemon=True)
            drain.start()
            yield run, line.split("API on ", 1)[1].split()[0]
        finally:
            if run.poll() is None:
                run.kill()
            run.wait(timeout=60)
            if drain is not None:
                drain.join(timeout=10)
