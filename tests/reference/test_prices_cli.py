"""``snipe prices NAME``: each source's reference, its age and observation count, read
from the reference file beside the ledger; ``--json`` for scripts; bad input exits 2."""

from __future__ import annotations

import json
import time
from pathlib import Path

import anyio
import pytest

from engine import SystemClock
from engine.cli import main
from engine.reference import ReferenceHub

NAME = "AK-47 | Redline (Field-Tested)"
KARAMBIT = "★ Karambit | Doppler (Factory New)"


def _rules(tmp_path: Path) -> Path:
    (tmp_path / "buff.csv").write_text(f'market_hash_name,price\n"{NAME}",12.34\n')
    path = tmp_path / "rules.yaml"
    path.write_text(
        f"""version: 1
account:
  base_url: "http://127.0.0.1:9"
  ledger: "{tmp_path / "ledger.sqlite"}"
budgets: {{per_day: "10.00", total: "10.00"}}
prices:
  lists:
    buff: {{path: "{tmp_path / "buff.csv"}"}}
rules:
  - name: r
    match: {{names: ["{NAME}"]}}
    max_price: "20.00"
    discount: {{min: 20, versus: market.p25}}
"""
    )
    return path


def _learn(tmp_path: Path) -> None:
    async def learn() -> None:
        now = time.time()
        async with ReferenceHub.open(
            None, clock=SystemClock(), ledger=tmp_path / "ledger.sqlite"
        ) as hub:
            for i in range(20):
                hub.book.record((NAME, None), 10_000 + 100 * i, now - 600 - i)
            hub.book.record((KARAMBIT, "Ruby"), 900_000, now - 60)

    anyio.run(learn)


def test_json_names_each_source_with_its_price_age_and_count(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rules = _rules(tmp_path)
    _learn(tmp_path)
    assert main(["prices", NAME, "--rules", str(rules), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    rows = {r["source"]: r for r in document["sources"]}
    assert document["name"] == NAME
    assert rows["market.floor"]["price"] == 10_000
    assert rows["market.p25"]["observations"] == 20
    assert 600 <= rows["market.p25"]["age_seconds"] < 700
    assert rows["file.buff"]["price"] == 12_340  # read now: no run has read it yet
    assert rows["service.platform_price"]["note"] == "never fetched"


def test_a_phase_from_the_name_or_the_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rules = _rules(tmp_path)
    _learn(tmp_path)
    ruby_name = "★ Karambit | Doppler Ruby (Factory New)"
    for argv in (
        ["prices", ruby_name, "--rules", str(rules), "--json"],
        ["prices", KARAMBIT, "--phase", "Ruby", "--rules", str(rules), "--json"],
    ):
        assert main(argv) == 0
        document = json.loads(capsys.readouterr().out)
        rows = {r["source"]: r for r in document["sources"]}
        assert (document["name"], document["phase"]) == (KARAMBIT, "Ruby")
        assert rows["market.median"]["price"] == 900_000
    assert main(["prices", KARAMBIT, "--phase", "Sapphire", "--rules", str(rules)]) == 0
    assert "no observations" in capsys.readouterr().out


def test_the_table_for_people(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rules = _rules(tmp_path)
    _learn(tmp_path)
    assert main(["prices", NAME, "--rules", str(rules)]) == 0
    out = capsys.readouterr().out
    assert "market.p25" in out
    assert "$12.34" in out
    assert "20" in out


def test_no_reference_file_exits_2_and_names_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nothing.sqlite"
    assert main(["prices", NAME, "--store", str(missing)]) == 2
    assert str(missing) in capsys.readouterr().err
    assert main(["prices", NAME, "--rules", str(tmp_path / "absent.yaml")]) == 2


def test_check_why_names_the_reference_and_its_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rules = _rules(tmp_path)
    assert main(["check", str(rules), "--why", NAME]) == 0
    out = capsys.readouterr().out
    assert "rule 'r' measures against market.p25: no reference price from market.p25" in out
    assert "nothing learned yet" in out
    _learn(tmp_path)
    assert main(["check", str(rules), "--why", NAME]) == 0
    out = capsys.readouterr().out
    assert "rule 'r' measures against market.p25 $10.39" in out  # 10.40, to 0.5%
    assert "20 observations, 10m old" in out


def test_the_file_is_read_with_the_window_it_was_written_with(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    async def learn() -> None:
        from engine.rules._prices import MarketSettings, PricesSettings

        settings = PricesSettings(market=MarketSettings(window=3600))
        async with ReferenceHub.open(
            settings, clock=SystemClock(), ledger=tmp_path / "l.sqlite"
        ) as hub:
            hub.book.record((NAME, None), 10_000, time.time() - 60)

    anyio.run(learn)
    store = tmp_path / "l.sqlite.prices.sqlite"
    assert main(["prices", NAME, "--store", str(store), "--json"]) == 0  # default: 7 days
    rows = {r["source"]: r for r in json.loads(capsys.readouterr().out)["sources"]}
    assert rows["market.floor"]["price"] == 10_000
    assert rows["market.floor"]["observations"] == 1
