"""``snipe portfolio LEDGER``, run through ``main`` as a user would: read-only, valued
against the reference file beside the ledger, ``--json`` for scripts, bad input exits 2
naming the place."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import anyio
import pytest

from engine import SystemClock, VirtualClock
from engine.cli import main
from engine.ledger import Intent, Ledger, PurchaseState
from engine.reference import ReferenceHub

S = PurchaseState
REDLINE = "AK-47 | Redline (Field-Tested)"
AWP = "AWP | Asiimov (Field-Tested)"
UNLOCK = int(time.time()) + 30 * 86_400


def _fill(path: Path) -> None:
    async def fill() -> None:
        clock = VirtualClock()  # 2026-01-01T00:00:00Z, a Thursday (ISO week 2026-W01)
        async with await Ledger.open(path, clock=clock) as ledger:
            await ledger.record_intent(Intent("snp-1", "i1", REDLINE, 12_500, "knives"))
            await ledger.transition("snp-1", S.BOUGHT, charged_price=10_000)
            locked = Intent("snp-2", "i2", AWP, 50_000, "knives", unlock_at=UNLOCK)
            await ledger.record_intent(locked)
            await ledger.transition("snp-2", S.RESERVED, charged_price=40_000)
            await ledger.record_intent(Intent("snp-3", "i3", REDLINE, 9_000, "cheap"))
            await ledger.transition("snp-3", S.REFUNDED, reason="Invalid tradelink")
            await ledger.record_intent(Intent("snp-4", "i4", REDLINE, 9_000, "cheap"))
            await ledger.transition("snp-4", S.UNKNOWN)
            await ledger.record_intent(Intent("snp-5", "i5", REDLINE, 9_000, "cheap"))
            await ledger.transition("snp-5", S.COMPLETED, charged_price=8_000)

    anyio.run(fill)


def _learn(ledger: Path) -> None:
    """The reference file beside the ledger: the Redline's lowest held price is $12.00
    over 20 observations, ten minutes old; nothing for the AWP."""

    async def learn() -> None:
        now = time.time()
        async with ReferenceHub.open(None, clock=SystemClock(), ledger=ledger) as hub:
            for i in range(20):
                hub.book.record((REDLINE, None), 12_000 + 100 * i, now - 600 - i)

    anyio.run(learn)


@pytest.fixture
def ledger(tmp_path: Path) -> Path:
    path = tmp_path / "ledger.sqlite"
    _fill(path)
    _learn(path)
    return path


def _fingerprint(path: Path) -> tuple[str, int]:
    return hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, object]:
    assert main(["portfolio", *argv, "--json"]) == 0
    document: dict[str, object] = json.loads(capsys.readouterr().out)
    return document


def test_json_values_each_holding_against_the_reference_file(
    ledger: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _fingerprint(ledger)
    doc = _json(capsys, str(ledger), "--value-by", "market.floor", "--sale-fee", "5%")
    assert _fingerprint(ledger) == before  # read-only
    assert doc["money_unit"] == "USD x 1000"
    assert doc["settings"] == {
        "value_by": "market.floor",
        "min_observations": 3,
        "max_age_seconds": 7 * 86_400,
        "sale_fee_bps": 500,
        "channel": None,
    }
    assert doc["fee"] == "sale fee 5%, rounded up to $0.001 per sale"
    holdings = {h["project_id"]: h for h in doc["holdings"]}  # type: ignore[attr-defined]
    assert set(holdings) == {"snp-1", "snp-2", "snp-5"}  # not refunded, not in flight
    one = holdings["snp-1"]
    assert one["reference"]["source"] == "market.floor"
    assert one["reference"]["price"] == 12_000
    assert one["reference"]["observations"] == 20
    assert 600 <= one["reference"]["age_seconds"] < 900
    assert (one["gross"], one["fee"], one["value"], one["margin"]) == (12_000, 600, 11_400, 1_400)
    awp = holdings["snp-2"]
    assert (awp["illiquid"], awp["unlock_at"], awp["value"]) == (True, UNLOCK, None)
    assert awp["no_value"] == "no market.floor reference"
    totals = doc["totals"]
    assert totals == {
        "key": "all",
        "holdings": 3,
        "cost": 58_000,
        "valued": 2,
        "valued_cost": 18_000,
        "value": 22_800,
        "margin": 4_800,
        "unvalued": 1,
        "unvalued_cost": 40_000,
        "illiquid": 1,
        "illiquid_value": 0,
        "sold": 0,
        "realised": 0,
    }
    by = doc["by"]
    assert [g["key"] for g in by["rule"]] == ["cheap", "knives"]  # type: ignore[index]
    assert [g["key"] for g in by["day"]] == ["2026-01-01"]  # type: ignore[index]
    assert [g["key"] for g in by["week"]] == ["2026-W01"]  # type: ignore[index]
    assert any("no value" in n for n in doc["notes"])  # type: ignore[attr-defined]
    assert any("my-history" in n for n in doc["notes"])  # type: ignore[attr-defined]


def test_the_table_says_what_it_values_by_the_fee_and_what_has_no_value(
    ledger: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["portfolio", str(ledger), "--by", "week"]) == 0
    out = capsys.readouterr().out
    assert "valued by market.p25 (min_observations 3, max_age 7d)" in out
    assert "no sale fee set" in out
    awp = next(line for line in out.splitlines() if AWP in line)
    assert "no value" in awp
    assert "illiquid until" in awp
    assert "By week" in out
    assert "2026-W01" in out


def test_sales_from_a_csv_are_realised(
    ledger: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sales = tmp_path / "sales.csv"
    sales.write_text("project_id,price,sold_at,channel\nsnp-1,15.00,2026-01-03,steam\n")
    doc = _json(capsys, str(ledger), "--sales", str(sales), "--sale-fee", "2.5%")
    (sold,) = doc["realised"]  # type: ignore[misc]
    assert sold["project_id"] == "snp-1"
    assert (sold["price"], sold["fee"], sold["net"], sold["realised"]) == (
        15_000,
        375,
        14_625,
        4_625,
    )
    assert sold["origin"] == f"{sales}:2"
    assert {h["project_id"] for h in doc["holdings"]} == {"snp-2", "snp-5"}  # type: ignore[attr-defined]
    assert doc["totals"]["realised"] == 4_625  # type: ignore[index]


def test_settings_come_from_the_rules_file(
    ledger: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text(
        f"""version: 1
account: {{base_url: "http://127.0.0.1:9", ledger: "{ledger}"}}
budgets: {{per_day: "10.00", total: "10.00"}}
portfolio: {{value_by: market.floor, sale_fee: 10%, channel: the service, min_observations: 30}}
rules:
  - name: r
    match: {{names: ["{REDLINE}"]}}
    max_price: "20.00"
"""
    )
    doc = _json(capsys, str(ledger), "--rules", str(rules))
    assert doc["settings"]["sale_fee_bps"] == 1_000  # type: ignore[index]
    assert doc["fee"].startswith("sale fee 10% (the service)")  # type: ignore[attr-defined]
    one = next(h for h in doc["holdings"] if h["project_id"] == "snp-1")  # type: ignore[attr-defined]
    assert one["no_value"] == "market.floor fails min_observations 30: 20 observations"
    # a flag wins over the section
    doc = _json(capsys, str(ledger), "--rules", str(rules), "--sale-fee", "0")
    assert doc["settings"]["sale_fee_bps"] == 0  # type: ignore[index]


def test_without_a_reference_file_nothing_is_valued_and_it_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bare.sqlite"
    _fill(path)
    doc = _json(capsys, str(path))
    assert doc["totals"]["valued"] == 0  # type: ignore[index]
    assert doc["totals"]["unvalued"] == 3  # type: ignore[index]
    assert any("no reference file" in n for n in doc["notes"])  # type: ignore[attr-defined]
    assert not Path(f"{path}.prices.sqlite").exists()  # nothing written


@pytest.mark.parametrize(
    ("csv", "argv", "shown"),
    [
        ("project_id,price,sold_at\nsnp-1,15,2026-01-03\nsnp-5,1.2345,2026-01-03\n", [], ":3:"),
        ("project_id,price,sold_at\nsnp-9,15,2026-01-03\n", [], ":2: sale of 'snp-9'"),
        ("project_id,price,sold_at\nsnp-3,15,2026-01-03\n", [], "REFUNDED, not held"),
        ("price,sold_at\n", [], ":1: the column 'project_id' is missing"),
        (None, ["--sale-fee", "120%"], "--sale-fee: a percentage is between 0 and 100"),
        (None, ["--value-by", "market.p30"], "--value-by: value_by must be one of"),
    ],
)
def test_bad_input_exits_2_naming_the_place(
    ledger: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    csv: str | None,
    argv: list[str],
    shown: str,
) -> None:
    if csv is not None:
        (tmp_path / "bad.csv").write_text(csv)
        argv = [*argv, "--sales", str(tmp_path / "bad.csv")]
    assert main(["portfolio", str(ledger), *argv]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert shown in captured.err
    if csv is not None:
        assert str(tmp_path / "bad.csv") in captured.err


@pytest.mark.parametrize("what", ["missing ledger", "missing sales", "bad rules"])
def test_unreadable_files_exit_2(
    ledger: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], what: str
) -> None:
    argv = [str(ledger)]
    if what == "missing ledger":
        argv = [str(tmp_path / "nope.sqlite")]
    elif what == "missing sales":
        argv += ["--sales", str(tmp_path / "nope.csv")]
    else:
        (tmp_path / "r.yaml").write_text("version: 1\nportfolio: {sale_fee: lots}\n")
        argv += ["--rules", str(tmp_path / "r.yaml")]
    assert main(["portfolio", *argv]) == 2
    assert "snipe portfolio: error:" in capsys.readouterr().err


def test_a_price_list_no_run_has_read_is_read_now(
    ledger: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "buff.csv").write_text(f'market_hash_name,price\n"{AWP}",45.50\n')
    rules = tmp_path / "rules.yaml"
    rules.write_text(
        f"""version: 1
account: {{base_url: "http://127.0.0.1:9", ledger: "{ledger}"}}
budgets: {{per_day: "10.00", total: "10.00"}}
prices:
  lists:
    buff: {{path: "{tmp_path / "buff.csv"}"}}
portfolio: {{value_by: file.buff}}
rules:
  - name: r
    match: {{names: ["{REDLINE}"]}}
    max_price: "20.00"
"""
    )
    doc = _json(capsys, str(ledger), "--rules", str(rules))
    holdings = {h["project_id"]: h for h in doc["holdings"]}  # type: ignore[attr-defined]
    assert holdings["snp-2"]["value"] == 45_500
    assert holdings["snp-2"]["reference"]["observations"] is None  # a list counts none
    assert holdings["snp-1"]["no_value"] == "no file.buff reference"


def test_a_corrupt_reference_file_exits_2(ledger: Path, capsys: pytest.CaptureFixture[str]) -> None:
    Path(f"{ledger}.prices.sqlite").write_bytes(b"not a database" * 100)
    assert main(["portfolio", str(ledger)]) == 2
    err = capsys.readouterr().err
    assert "cannot read the reference file" in err
    assert f"{ledger}.prices.sqlite" in err
