"""``snipe record`` against a served sandbox, then ``snipe backtest`` on what it wrote:
the README's walk-through, end to end over real HTTP on 127.0.0.1."""

from __future__ import annotations

import os
import selectors
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.backtest import read_header, read_records
from engine.cli import main


def _read_until(proc: subprocess.Popen[bytes], marker: str, timeout: float) -> list[str]:
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
def test_record_from_the_sandbox_then_backtest_the_example_rules(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "SNIPE_API_KEY": "rec-test-key"}
    command = [sys.executable, "-m", "engine", "sandbox", "--port", "0", "--size", "400",
               "--api-key", "rec-test-key", "--seed", "4", "--speed", "60"]  # fmt: skip
    sandbox = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    out = tmp_path / "rec"
    try:
        url = _read_until(sandbox, "ground truth", timeout=60.0)[0].split("serving ")[1].strip()
        record = [sys.executable, "-m", "engine", "record", "--out", str(out),
                  "--base-url", url, "--speed", "60", "--for", "180"]  # fmt: skip
        for _ in range(2):  # the second run resumes the same recording
            done = subprocess.run(record, env=env, capture_output=True, text=True, timeout=60)
            assert done.returncode == 0, done.stderr
        assert "resuming" in done.stderr
    finally:
        sandbox.terminate()
        sandbox.communicate(timeout=10)
    assert read_header(out)["source"] == url
    kinds = [r.k for r in read_records(out)]
    assert kinds.count("key") == 2
    assert "resume" in kinds
    assert "diff" in kinds
    assert "search" in kinds or "cat" in kinds
    # the sandbox serves the live feed: recorded (feed: auto), connections and events
    assert read_header(out)["version"] == 2
    feed = [r.body["ev"] for r in read_records(out) if r.k == "feed"]
    assert {"new", "update", "removed"} & set(feed)
    rules = Path(__file__).parents[2] / "rules.example.yaml"
    assert main(["backtest", str(rules), "--data", str(out), "--json"]) == 0
    assert '"fingerprint"' in capsys.readouterr().out
