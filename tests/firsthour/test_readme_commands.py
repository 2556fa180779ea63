"""Every command in the README's `sh` blocks is run here, against real `snipe sandbox`
processes on 127.0.0.1, and every file the README names is shipped (issue 11).

The README is read, not copied: its commands are extracted and compared with the list
below, so a command added to the README without a test here fails
:func:`test_every_readme_command_is_run_by_this_test`. Each command runs as written except
for the substitutions in :data:`SHORTER` (free ports instead of 8787/9000, seconds instead
of minutes); `make demo` and `make test` are checked with `make -n` (what they install is
measured by hand and stated in the README; running them here would install a virtual
environment).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"

QUICK_SANDBOX = ".venv/bin/snipe sandbox --api-key sandbox-key --speed 30 &"
QUICK_DRY_RUN = (
    "SNIPE_API_KEY=sandbox-key .venv/bin/snipe run rules.example.yaml "
    "--base-url http://127.0.0.1:8787 --dry-run --for 1m"
)
SANDBOX = "snipe sandbox"
SANDBOX_KEY = "snipe sandbox --api-key my-key"
SANDBOX_FAULTS = "snipe sandbox --port 9000 --seed 7 --speed 60 --scenario docs/faults.example.yaml"
CURL_USER = "curl 'http://127.0.0.1:8787/v1/user?api=my-key'"
CURL_TRUTH = "curl 'http://127.0.0.1:8787/_sandbox/ground-truth'"
RECORD_SANDBOX = "snipe sandbox --port 8787 --speed 30 --api-key demo-key"
RECORD = (
    "SNIPE_API_KEY=demo-key snipe record --out rec --base-url http://127.0.0.1:8787 "
    "--speed 30 --for 1800"
)
BACKTEST = "snipe backtest rules.example.yaml --data rec --report report"
FINGERPRINT = "snipe backtest rules.example.yaml --data rec --json | grep fingerprint"
SWEEP = "snipe backtest --sweep docs/sweep.example.yaml --data rec --jobs 2"
RUN_RECORD = "snipe run rules.yaml --record rec"
AGAINST = "snipe backtest rules.yaml rec --against ledger.sqlite"

COMMANDS = {
    "make demo",
    "make test",
    ". .venv/bin/activate",
    "snipe --help",
    QUICK_SANDBOX,
    QUICK_DRY_RUN,
    SANDBOX,
    SANDBOX_KEY,
    SANDBOX_FAULTS,
    CURL_USER,
    CURL_TRUTH,
    RECORD_SANDBOX,
    RECORD,
    BACKTEST,
    FINGERPRINT,
    SWEEP,
    RUN_RECORD,
    AGAINST,
}

SHORTER = {
    "--for 1m": "--for 4s",  # the quickstart's dry run
    "--for 1800": "--for 90",  # 90 market seconds at 30x: 3 real seconds of recording
    "--record rec": "--record rec --for 5s",  # a live run recording: 5 real seconds
}
"""Substitutions that keep the test short; ports are replaced by free ones as well."""


def readme_commands(text: str) -> list[str]:
    """The commands of the README's ```sh blocks: continuation lines joined, comments and
    blank lines dropped, whitespace normalised."""
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        joined = block.replace("\\\n", " ")
        for line in joined.splitlines():
            words = shlex.split(line, comments=True)
            if not words:
                continue
            # keep quoting as written: cut the comment off the original text
            code = line.split(" #", 1)[0] if " #" in line else line
            commands.append(" ".join(code.split()))
    return commands


def test_every_readme_command_is_run_by_this_test() -> None:
    found = set(readme_commands(README.read_text("utf-8")))
    assert found == COMMANDS, (
        f"new in the README: {sorted(found - COMMANDS)}; gone: {sorted(COMMANDS - found)}"
    )


def test_the_files_the_readme_names_are_shipped() -> None:
    text = README.read_text("utf-8")
    named = set(re.findall(r"(?<![\w/.-])((?:docs|strategies|plugins|bench)/[\w./-]+\w)", text))
    named |= {"rules.example.yaml", "Makefile", "pyproject.toml"}
    named = {n for n in named if "<" not in n}
    missing = sorted(n for n in named if not (ROOT / n).exists())
    assert missing == []
    assert {"docs/faults.example.yaml", "docs/sweep.example.yaml"} <= named


def test_the_readme_keeps_two_setup_commands_and_no_macos_open() -> None:
    text = README.read_text("utf-8")
    first = readme_commands(text)[:2]
    assert first == ["make demo", "make test"]
    assert not any(c.startswith("open ") for c in readme_commands(text))
    assert "faults.yaml" not in text.replace("faults.example.yaml", "")


# -- running them ---------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Shell:
    """A directory laid out like a clone, with `snipe` (and `.venv/bin/snipe`) running this
    checkout's code, where README commands run under bash."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.ports = {"8787": str(_free_port()), "9000": str(_free_port())}
        for name in ("rules.example.yaml", "Makefile", "pyproject.toml"):
            shutil.copy(ROOT / name, home / name)
        shutil.copytree(ROOT / "docs", home / "docs")
        bin_dir = home / ".venv" / "bin"
        bin_dir.mkdir(parents=True)
        wrapper = bin_dir / "snipe"
        wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m engine "$@"\n', "utf-8")
        wrapper.chmod(0o755)
        (bin_dir / "activate").write_text(f'PATH="{bin_dir}:$PATH"\nexport PATH\n', "utf-8")
        self.env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "PATH": f"{bin_dir}:{os.environ['PATH']}",
        }

    def adapt(self, command: str) -> str:
        for long, short in SHORTER.items():
            command = command.replace(long, short)
        for port, free in self.ports.items():
            command = command.replace(port, free)
        if (
            command.startswith(("snipe sandbox", ".venv/bin/snipe sandbox"))
            and "--port" not in command
        ):
            command = command.replace("sandbox", f"sandbox --port {self.ports['8787']}", 1)
        return command.removesuffix("&").strip()

    def run(self, command: str, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "-c", self.adapt(command)],
            cwd=self.home,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    @contextmanager
    def background(self, command: str) -> Iterator[str]:
        """Start a sandbox command; yield its first lines once it serves; stop it."""
        process = subprocess.Popen(
            ["bash", "-c", "exec " + self.adapt(command)],
            cwd=self.home,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            assert process.stdout is not None
            lines = []
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                line = process.stdout.readline()
                if not line:
                    break
                lines.append(line)
                if "ground truth:" in line:  # the last line of its announcement
                    break
            text = "".join(lines)
            assert "serving http://127.0.0.1:" in text, text
            yield text
        finally:
            process.terminate()
            process.communicate(timeout=30)  # drains and closes the pipe


@pytest.fixture
def shell(tmp_path: Path) -> Shell:
    return Shell(tmp_path)


@pytest.mark.slow
def test_the_quickstart_reaches_a_dry_run_against_the_sandbox(shell: Shell) -> None:
    for target in ("demo", "test"):
        planned = shell.run(f"make -n {target}")
        assert planned.returncode == 0, planned.stderr
        assert "pip install" in planned.stdout
    activated = shell.run(". .venv/bin/activate && snipe --help")
    assert activated.returncode == 0, activated.stderr
    assert "demo" in activated.stdout
    with shell.background(QUICK_SANDBOX) as announced:
        assert "sandbox-key" in announced
        done = shell.run(QUICK_DRY_RUN)
    assert done.returncode == 0, done.stderr
    assert "DRY RUN" in done.stderr
    assert f"http://127.0.0.1:{shell.ports['8787']}" in done.stderr
    assert "[dry run, stopped] would spend $" in done.stderr
    assert "sandbox-key" not in done.stderr
    # the live listing feed is on by default (feed: auto), at the sandbox's own address
    feed = f"feed: connected (generation 1) to http://127.0.0.1:{shell.ports['8787']}"
    assert feed in done.stderr
    assert re.search(r"\| feed (healing|trusted|distrusted), ", done.stderr), done.stderr


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_the_sandbox_commands_and_curl_examples_work(shell: Shell) -> None:
    with shell.background(SANDBOX) as announced:
        key = re.search(r"api key of the funded default account \(\$1,000.00\): (\S+)", announced)
        assert key is not None
    with shell.background(SANDBOX_FAULTS) as announced:
        assert "speed 60x" in announced
    with shell.background(SANDBOX_KEY) as announced:
        assert "my-key" in announced
        user = shell.run(CURL_USER)
        truth = shell.run(CURL_TRUTH)
    assert '"success":true' in user.stdout.replace(" ", ""), user.stdout
    assert '"wallet":1000000' in user.stdout.replace(" ", "")
    assert "purchases" in truth.stdout


@pytest.mark.slow
def test_record_backtest_report_and_sweep_as_the_readme_says(shell: Shell) -> None:
    with shell.background(RECORD_SANDBOX):
        recorded = shell.run(RECORD)
    assert recorded.returncode == 0, recorded.stderr
    assert "0 snapshots" not in recorded.stderr
    backtest = shell.run(BACKTEST)
    assert backtest.returncode == 0, backtest.stderr
    assert "fingerprint" in backtest.stdout
    for name in ("report.html", "report.md", "report.json", "ledger.jsonl"):
        assert (shell.home / "report" / name).is_file()
    first, second = shell.run(FINGERPRINT), shell.run(FINGERPRINT)
    assert first.returncode == 0, first.stderr
    assert first.stdout == second.stdout
    assert '"fingerprint"' in first.stdout
    sweep = shell.run(SWEEP, timeout=300)
    assert sweep.returncode == 0, sweep.stderr
    ranked = [line for line in sweep.stdout.splitlines() if re.match(r"\s*\d+\. ", line)]
    assert len(ranked) == 7
    # a warning repeated in every variant is said once, counted
    assert len(sweep.stderr.splitlines()) == len(set(sweep.stderr.splitlines()))


@pytest.mark.slow
def test_a_live_run_recorded_then_replayed_against_its_ledger(shell: Shell) -> None:
    """`snipe run --record` then `snipe backtest --against`, as the README's parity section
    says, with rules.yaml the example rules pointed at a sandbox and a ledger beside it."""
    port = shell.ports["8787"]
    rules = (shell.home / "rules.example.yaml").read_text("utf-8")
    rules = rules.replace("https://market.example.com", f"http://127.0.0.1:{port}")
    rules = rules.replace("ledger: snipe-ledger.sqlite", "ledger: ledger.sqlite")
    (shell.home / "rules.yaml").write_text(rules, "utf-8")
    shell.env["SNIPE_API_KEY"] = "demo-key"
    with shell.background(RECORD_SANDBOX):
        ran = shell.run(RUN_RECORD)
    assert ran.returncode == 0, ran.stderr
    assert "snipe run: recorded" in ran.stderr
    against = shell.run(AGAINST)
    assert against.returncode == 0, against.stderr
    assert "agree" in against.stdout.lower(), against.stdout
