"""Small things a new user meets (issue 18, point 8): each message says what it means
once, names what it is about, and each command's usage is its own."""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path

import anyio
import httpx
import pytest

from engine import VirtualClock
from engine.cli import main
from engine.client._endpoints import USER
from engine.client._responses import http_error
from engine.ledger import Ledger
from engine.sniper._gate import start_failure
from engine.sniper._statusfile import status_path_for


def test_a_rejected_key_is_said_once_in_its_line() -> None:
    error = http_error(USER, httpx.Response(403), (), 0.0)
    assert error is not None
    line = str(start_failure(error))
    assert line.startswith("the API key was rejected: ")
    assert line.count("rejected") == 1
    assert "non-whitelisted IP" in line


@pytest.mark.parametrize(
    ("spoil", "says"),
    [
        (lambda p: p.write_text("{not json"), "not JSON"),
        (lambda p: p.write_text("[1, 2]"), "not an object"),
        (lambda p: p.mkdir(), "cannot be read"),
    ],
)
def test_status_says_an_unreadable_status_file_is_unreadable_and_why(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    spoil: Callable[[Path], object],
    says: str,
) -> None:
    ledger = tmp_path / "ledger.sqlite"
    anyio.run(_empty_ledger, ledger)
    spoil(status_path_for(ledger))
    assert main(["status", str(ledger)]) == 5
    out = capsys.readouterr().out
    assert "no status file" not in out
    assert says in out
    assert str(status_path_for(ledger)) in out


async def _empty_ledger(path: Path) -> None:
    async with await Ledger.open(path, clock=VirtualClock()):
        pass


RULES = """
version: 1
account:
  base_url: "http://127.0.0.1:9"
  trade_link: "https://steamcommunity.com/tradeoffer/new/?partner=123456789&token=AbCdEfGh"
budgets: {per_day: "5.00", total: "10.00"}
rules:
  - name: deals
    match: {names: ["AWP | Asiimov (Field-Tested)"]}
    max_price: "2.00"
"""


@pytest.mark.parametrize("command", ["sandbox", "run", "run --api"])
def test_a_taken_port_is_named_with_its_address(
    command: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SNIPE_API_KEY", "not-used")
    rules = tmp_path / "rules.yaml"
    rules.write_text(RULES)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        if command == "sandbox":
            code = main(["sandbox", "--port", port])
        elif command == "run":
            ledger = str(tmp_path / "l.sqlite")
            code = main(["run", str(rules), "--ledger", ledger, "--metrics-port", port])
        else:  # the API's port: named as the API's (it was called the metrics port, ':None')
            monkeypatch.setenv("SNIPE_API_CONTROL_TOKEN", "c" * 32)
            ledger = str(tmp_path / "l.sqlite")
            code = main(["run", str(rules), "--ledger", ledger, "--api", f"127.0.0.1:{port}"])
    err = capsys.readouterr().err
    assert code == 2
    assert f"127.0.0.1:{port}" in err
    assert "in use" in err
    assert ("cannot serve the API on" in err) is (command == "run --api")


@pytest.mark.parametrize(
    ("argv", "usage", "bad"),
    [
        (["check", "--bogus", "rules.yaml"], "usage: snipe check", "--bogus"),
        (["ledger", "l.sqlite", "--jsno"], "usage: snipe ledger", "--jsno"),
        (["run", "rules.yaml", "--fro", "10s"], "usage: snipe run", "--fro 10s"),
    ],
)
def test_a_bad_flag_of_a_subcommand_prints_that_subcommands_usage(
    argv: list[str], usage: str, bad: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        main(argv)
    err = capsys.readouterr().err
    assert info.value.code == 2
    assert err.startswith(usage)
    assert f"unrecognized arguments: {bad}" in err


def test_prices_asks_for_a_rules_file_or_a_store_instead_of_guessing_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as info:
        main(["prices", "AWP | Asiimov (Field-Tested)"])
    err = capsys.readouterr().err
    assert info.value.code == 2
    assert err.startswith("usage: snipe prices")
    assert "--rules" in err
    assert "--store" in err
    assert "rules.yaml" not in err.split("error:")[-1]


def test_check_never_cuts_a_rule_name_at_80_columns(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["check", "rules.example.yaml"]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines() if line.startswith(("┃", "│"))) <= 80
    for name in ("redline-discount", "cheap-fn-pistols", "locked-butterflies"):
        assert any(f"│{name} " in line for line in out.splitlines()), name
