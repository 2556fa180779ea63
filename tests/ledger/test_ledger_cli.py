"""``snipe ledger PATH [--json]``, run through ``main`` as a user would."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import anyio
import pytest

from engine import VirtualClock
from engine.cli import main
from engine.ledger import SCHEMA_VERSION, Ledger, PurchaseState

from .support import intent

S = PurchaseState


def _fill(path: Path) -> None:
    async def fill() -> None:
        clock = VirtualClock()  # 2026-01-01T00:00:00Z
        async with await Ledger.open(path, clock=clock) as ledger:
            await ledger.record_intent(intent(1, price=12_500, rule="knives"))
            clock.advance(5)
            await ledger.transition("snp-test-0001", S.BOUGHT, charged_price=12_000)
            await ledger.record_intent(intent(2, price=3_000, rule="knives"))
            await ledger.transition("snp-test-0002", S.UNKNOWN)
            await ledger.record_intent(intent(3, price=800, rule="gloves"))
            await ledger.transition("snp-test-0003", S.REFUNDED, reason="Invalid tradelink")
            await ledger.record_intent(intent(4, price=999, rule="gloves"))
            await ledger.transition("snp-test-0004", S.FAILED, reason="Item sold")

    anyio.run(fill)


def _fingerprint(path: Path) -> tuple[str, int]:
    return hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns


@pytest.fixture
def filled(tmp_path: Path) -> Path:
    path = tmp_path / "ledger.sqlite"
    _fill(path)
    return path


def test_table_shows_every_purchase_and_the_totals(
    filled: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _fingerprint(filled)
    assert main(["ledger", str(filled)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    bought = next(line for line in lines if "snp-test-0001" in line)
    for shown in ("item-1", "$12.50", "$12.00", "knives", "BOUGHT", "2026-01-01 00:00:00"):
        assert shown in bought
    refunded = next(line for line in lines if "snp-test-0003" in line)
    assert "REFUNDED" in refunded
    assert "Invalid tradelink" in refunded
    all_rules = next(line for line in lines if "all rules" in line)
    # spent $12.00, in flight $3.00, committed $15.00, refunded $0.80, counted 2
    cells = [cell for cell in all_rules.split() if cell != "│"]
    assert cells == ["all", "rules", "$12.00", "$3.00", "$15.00", "$0.80", "2"]
    assert "FAILED 1" in out
    assert "BOUGHT 1" in out
    assert _fingerprint(filled) == before


def test_json_has_every_purchase_and_exact_totals(
    filled: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _fingerprint(filled)
    assert main(["ledger", str(filled), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["schema_version"] == SCHEMA_VERSION
    assert document["money_unit"] == "USD x 1000"
    by_id = {p["project_id"]: p for p in document["purchases"]}
    assert set(by_id) == {"snp-test-0001", "snp-test-0002", "snp-test-0003", "snp-test-0004"}
    assert by_id["snp-test-0001"]["charged_price"] == 12_000
    assert by_id["snp-test-0001"]["state"] == "BOUGHT"
    assert by_id["snp-test-0001"]["updated_at"] == 1_767_225_605.0
    assert by_id["snp-test-0004"]["reason"] == "Item sold"
    totals = document["totals"]
    assert (totals["spent"], totals["in_flight"], totals["refunded"]) == (12_000, 3_000, 800)
    assert totals["by_state"]["FAILED"] == 1
    assert totals["by_rule"]["knives"] == {
        "spent": 12_000,
        "in_flight": 3_000,
        "refunded": 0,
        "count": 2,
    }
    assert _fingerprint(filled) == before


def test_an_empty_ledger_shows_no_purchases(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "new.sqlite"

    async def create() -> None:
        async with await Ledger.open(path, clock=VirtualClock()):
            pass

    anyio.run(create)
    assert main(["ledger", str(path)]) == 0
    assert "no purchases yet" in capsys.readouterr().out


def _newer(path: Path) -> None:
    _fill(path)
    raw = sqlite3.connect(path)
    raw.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 7}")
    raw.close()


def _corrupt(path: Path) -> None:
    path.write_bytes(b"not a database at all\n" * 100)


@pytest.mark.parametrize(
    ("prepare", "says"),
    [
        (None, "no ledger file there"),
        (_newer, f"schema version {SCHEMA_VERSION + 7} is newer"),
        (_corrupt, "file is not a database"),
    ],
)
def test_a_bad_file_is_a_clear_error_and_a_failing_exit_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], prepare: object, says: str
) -> None:
    path = tmp_path / "ledger.sqlite"
    if callable(prepare):
        prepare(path)
    before = _fingerprint(path) if path.exists() else None
    for extra in ([], ["--json"]):
        assert main(["ledger", str(path), *extra]) == 2
        captured = capsys.readouterr()
        assert captured.out == ""
        assert captured.err.startswith("snipe ledger: error: ")
        assert str(path) in captured.err
        assert says in captured.err
    assert (_fingerprint(path) if path.exists() else None) == before
