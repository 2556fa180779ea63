"""`snipe run --paper` on the command line (its flags, what it says before it starts, a real
ledger refused) and `snipe portfolio` on a paper ledger: the same valuation, marked paper,
with its wallet and its missed purchases."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from engine import VirtualClock
from engine.cli import build_parser, main
from engine.cli._run import banner
from engine.cli._status import build_report, render
from engine.ledger import Intent, Ledger, PurchaseState
from engine.paper import PaperSettings, claim_paper_ledger
from engine.paper._desk import PaperDesk
from engine.rules import load_rules

EXAMPLE = Path(__file__).resolve().parents[2] / "rules.example.yaml"
S = PurchaseState


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--paper", "--dry-run"], "--paper and --dry-run are two ways not to buy"),
        (["--paper", "--remove-orders"], "cannot be combined with --paper"),
        (["--paper-ledger", "p.sqlite"], "need --paper"),
        (["--paper-balance", "10"], "need --paper"),
    ],
)
def test_flags_that_do_not_go_together(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", str(EXAMPLE), *argv]) == 2
    assert said in capsys.readouterr().err


def test_a_bad_paper_balance_is_refused_by_the_parser(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(["run", "r.yaml", "--paper", "--paper-balance", "1.0001"])
    assert exit_.value.code == 2
    assert "more than three decimals" in capsys.readouterr().err


def test_the_banner_names_the_paper_ledger_and_the_wallet(tmp_path: Path) -> None:
    ruleset = load_rules(EXAMPLE)
    real = tmp_path / "real.sqlite"
    args = build_parser().parse_args(
        ["run", str(EXAMPLE), "--paper", "--ledger", str(real), "--paper-balance", "250"]
    )
    words = banner(ruleset, args)
    assert "PAPER run" in words
    assert f"paper ledger {tmp_path / 'real.paper.sqlite'}" in words
    assert "wallet $250.00" in words
    assert "sends no purchase and no buy order" in words


def test_a_paper_run_refuses_a_real_ledger(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    real = tmp_path / "real.sqlite"

    async def fill() -> None:
        async with await Ledger.open(real, clock=VirtualClock()) as ledger:
            await ledger.record_intent(Intent("snp-1", "i1", "x", 1_000, "r"))

    anyio.run(fill)
    monkeypatch.setenv("SNIPE_API_KEY", "k-test")
    argv = ["run", str(EXAMPLE), "--paper", "--paper-ledger", str(real)]
    assert main([*argv, "--base-url", "http://127.0.0.1:9"]) == 2
    assert "holds real purchases" in capsys.readouterr().err


def _paper_ledger(path: Path) -> None:
    """A paper ledger: a wallet of $100, one would-be purchase bought, one missed (gone),
    one pending."""

    async def fill() -> None:
        async with await Ledger.open(path, clock=VirtualClock()) as ledger:
            await claim_paper_ledger(ledger)
            desk = PaperDesk(ledger, PaperSettings(start_balance=100_000))
            await desk.open_wallet(None)
            for pid, item in (("snp-1", "i1"), ("snp-2", "i2"), ("snp-3", "i3")):
                await ledger.record_intent(Intent(pid, item, "AK", 20_000, "deals"))
            await ledger.transition("snp-1", S.BOUGHT, charged_price=20_000)
            await ledger.transition("snp-2", S.FAILED, reason="missed: gone: the search ...")

    anyio.run(fill)


def test_portfolio_of_a_paper_ledger(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "snipe.paper.sqlite"
    _paper_ledger(path)
    assert main(["portfolio", str(path), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["paper"] == {
        "wallet_start": 100_000,
        "wallet_left": 60_000,  # the bought one and the pending one
        "bought": 1,
        "pending": 1,
        "missed": {"gone": 1},
    }
    assert document["totals"]["cost"] == 20_000  # valued by the same code as a real ledger
    assert main(["portfolio", str(path)]) == 0
    text = capsys.readouterr().out
    assert "PAPER ledger (snipe run --paper): nothing here was bought" in text
    assert "$60.00 left of $100.00" in text
    assert "1 missed (1 gone), 1 pending judgement" in text


def test_portfolio_of_a_real_ledger_says_nothing_of_paper(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "snipe.sqlite"

    async def fill() -> None:
        async with await Ledger.open(path, clock=VirtualClock()) as ledger:
            await ledger.record_intent(Intent("snp-1", "i1", "AK", 20_000, "deals"))

    anyio.run(fill)
    assert main(["portfolio", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["paper"] is None


def test_snipe_status_says_paper() -> None:
    document = {
        "paper": {
            "pending": 1,
            "judged": {"bought": 2, "gone": 1, "price changed": 0},
            "wallet_start": 100_000,
            "wallet_left": 60_000,
        }
    }
    now = 1_767_225_600.0
    text = render("snipe.paper.sqlite", build_report([], document, now), now)
    assert (
        "PAPER       nothing is bought: 1 pending, 2 bought on paper, 1 missed this run,"
        " wallet $60.00 of $100.00"
    ) in text
    assert "PAPER" not in render("snipe.sqlite", build_report([], {}, now), now)
