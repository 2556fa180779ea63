"""One rule for errors across subcommands, the same validators in `check` and `run`, and
durations that read the same on the command line as in a rules file (issue 11)."""

from __future__ import annotations

import argparse
from pathlib import Path

import anyio
import pytest
from sniper.harness import pick_item, quiet_sandbox, rig, rules_text

from engine.cli import build_parser, main
from engine.cli._args import duration
from engine.rules._values import parse_duration

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "rules.example.yaml"


@pytest.mark.parametrize(
    "argv",
    [
        ["check", "{missing}"],
        ["run", "{missing}"],
        ["demo", "--rules", "{missing}"],
        ["ledger", "{missing}"],
        ["ledger", "{missing}", "--json"],
        ["status", "{missing}"],
        ["status", "{missing}", "--json"],
        ["backtest", "{missing}", "--data", "{tmp}"],
        ["backtest", str(EXAMPLE), "--data", "{missing}"],
        ["backtest", "--sweep", "{missing}", "--data", "{tmp}"],
        ["lookahead", "{missing}", "--data", "{tmp}"],
        ["lookahead", str(EXAMPLE), "--data", "{missing}"],
        ["sandbox", "--scenario", "{missing}", "--port", "0"],
    ],
)
def test_a_missing_file_exits_2_and_is_named(
    argv: list[str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SNIPE_API_KEY", "not-used")
    missing = str(tmp_path / "nowhere.file")
    argv = [a.format(missing=missing, tmp=tmp_path) for a in argv]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert "nowhere.file" in captured.err + captured.out


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("600", 600.0),
        ("0.5", 0.5),
        ("90s", 90.0),
        ("10m", 600.0),
        ("1h30m", 5400.0),
        ("2d", 172800.0),
    ],
)
def test_durations_on_the_command_line_read_as_in_a_rules_file(text: str, seconds: float) -> None:
    assert duration(text) == seconds
    if text[-1].isalpha():  # the rules file's own parser agrees
        assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["-3", "0", "10x", "", "m10"])
def test_a_bad_duration_is_refused(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        duration(text)


def test_run_and_demo_take_for_10m() -> None:
    parser = build_parser()
    assert parser.parse_args(["run", str(EXAMPLE), "--for", "10m"]).duration == 600.0
    assert parser.parse_args(["demo", "--seconds", "45s"]).seconds == 45.0


def test_a_bad_duration_exits_2_naming_the_option(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["run", str(EXAMPLE), "--for", "10x"])
    assert info.value.code == 2
    assert "--for" in capsys.readouterr().err


def _rules(tmp_path: Path, trade_link: str, extra_account: str = "") -> Path:
    path = tmp_path / "rules.yaml"
    path.write_text(
        f"""version: 1
account:
  base_url: "http://127.0.0.1:8787"
  trade_link: "{trade_link}"
{extra_account}budgets: {{per_day: "10", total: "20"}}
rules:
  - name: one
    max_price: "5"
    max_count: 1
    match: {{names: ["AK-47 | Redline (Field-Tested)"]}}
  - name: orders
    action: buy_order
    buy_order: {{price: "0.50", amount: 3}}
    max_price: "1"
    match: {{names: ["Kilowatt Case"], game: csgo}}
  - name: off
    enabled: false
    max_price: "5"
    match: {{names: ["AK-47 | Redline (Field-Tested)"]}}
""",
        encoding="utf-8",
    )
    return path


GOOD_LINK = "https://steamcommunity.com/tradeoffer/new/?partner=123456&token=AbCdEfGh"


@pytest.mark.parametrize(
    ("link", "says"),
    [
        ("https://x.example/tradeoffer/new/?partner=abc&token=AbCdEfGh", "partner"),
        ("https://x.example/tradeoffer/new/?partner=123&token=short", "token"),
        ("https://x.example/tradeoffer/new/?partner=123", "token"),
        ("not a url?partner=1&token=AbCdEfGh", "http"),
    ],
)
def test_check_rejects_the_trade_links_run_rejects_naming_line_column_and_field(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    link: str,
    says: str,
) -> None:
    path = _rules(tmp_path, link)
    monkeypatch.setenv("SNIPE_API_KEY", "not-used")
    for command in ("check", "run"):
        assert main([command, str(path)]) == 2
        captured = capsys.readouterr()
        text = captured.out + captured.err
        assert f"{path}:4:" in text, text
        assert "account.trade_link" in text
        assert says in text


def test_check_says_1_item_and_why_names_buy_order_and_disabled_rules(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _rules(tmp_path, GOOD_LINK)
    assert main(["check", str(path), "--why", "Kilowatt Case"]) == 0
    out = capsys.readouterr().out
    assert "1 item" in out
    assert "1 items" not in out
    assert "buy-order rule 'orders' places an order for 'Kilowatt Case'" in out
    assert "3 at up to $0.50" in out
    assert "rule 'off' is disabled" in out


def test_a_missing_api_key_file_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _rules(tmp_path, GOOD_LINK, extra_account="  api_key_file: secret/key.txt\n")
    assert main(["run", str(path), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert str(tmp_path / "secret" / "key.txt") in err
    assert "account.api_key_file" in err


async def test_nothing_listening_names_the_address() -> None:
    """While nothing answers, the start-up gate waits (a restart could not do better) and
    says what it waits for: the address nothing answers at."""
    import httpx

    from engine import VirtualClock

    clock = VirtualClock()
    sandbox = quiet_sandbox(clock)

    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    async with (
        rig(
            clock,
            sandbox,
            rules_text(pick_item(sandbox).name),
            transport=httpx.MockTransport(refuse),
        ) as r,
        clock.autojump(),
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(r.engine.start_gate)
        while r.engine.status.start_attempts < 3:
            await clock.sleep(1)
        waiting = r.engine.status.waiting
        tg.cancel_scope.cancel()
    assert r.engine.status.start_attempts >= 3
    assert waiting is not None
    assert "http://sandbox" in waiting
    assert "nothing is listening" in waiting
