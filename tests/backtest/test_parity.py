"""Backtest-to-live parity: a live run against the in-process sandbox, recorded by the
tee (``snipe run --record``), replayed with ``--against`` its ledger."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import anyio
import pytest

from engine._plugins import make_plugin_host
from engine.backtest import BacktestOptions, read_records, recording_span, run_backtest
from engine.backtest._against import run_against
from engine.cli import main
from engine.rules import load_rules_text

from .parity_support import API_KEY, live_recorded_run, parity_rules, parity_rules_text
from .support import REDLINE


async def test_the_recording_holds_what_the_live_engine_received(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.sqlite"
    status = await live_recorded_run(tmp_path / "rec", parity_rules(ledger), minutes=2)
    kinds: dict[str, int] = {}
    for record in read_records(tmp_path / "rec"):  # closed, ordered, readable
        kinds[record.k] = kinds.get(record.k, 0) + 1
    assert kinds["key"] + kinds.get("diff", 0) == status.snapshots
    assert kinds["search"] == status.searches
    assert kinds["cat"] >= 1
    requests = [
        json.loads(x) for x in (tmp_path / "rec" / "requests.jsonl").read_text().split("\n") if x
    ]
    assert all(r["t"] >= r["sent"] for r in requests)
    assert any(r["path"] == "/v1/buy-one-p2p" for r in requests)
    decisions = [
        json.loads(x) for x in (tmp_path / "rec" / "decisions.jsonl").read_text().splitlines()
    ]
    accepted = {d["item_id"] for d in decisions if d["accepted"]}
    assert accepted
    assert status.outcomes
    files = [p for p in (tmp_path / "rec").rglob("*") if p.is_file()]
    text = b"".join(gzip.decompress(p.read_bytes()) if p.suffix == ".gz" else p.read_bytes()
                    for p in files)  # fmt: skip
    assert API_KEY.encode() not in text  # the key never reaches the recording


async def test_a_live_run_and_its_replay_agree_decision_by_decision(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.sqlite"
    await live_recorded_run(tmp_path / "rec", parity_rules(ledger), minutes=5)
    host = make_plugin_host(load_entry_points=False)
    parity, run = await run_against(parity_rules(ledger), tmp_path / "rec", ledger, host=host)
    assert parity.count("agreed") >= 5
    assert parity.agreement == 1.0, "\n".join(parity.table())
    assert run.purchases


def _list_rules(ledger: Path, prices: Path) -> str:
    extra = f'prices:\n  lists:\n    mine: {{path: "{prices}", every: 1m}}\n'
    return parity_rules_text(ledger, extra=extra).replace(
        "discount: 10\n", "discount: {min: 10, versus: file.mine}\n", 1
    )


async def test_a_price_list_changed_after_the_recording_gives_the_old_decisions(
    tmp_path: Path,
) -> None:
    prices = tmp_path / "mine.csv"
    prices.write_text(f'market_hash_name,price\n"{REDLINE}",500.00\n')  # every Redline a deal
    ledger = tmp_path / "ledger.sqlite"
    host = make_plugin_host(load_entry_points=False)

    rules = load_rules_text(_list_rules(ledger, prices), host=host)
    await live_recorded_run(tmp_path / "rec", rules, minutes=2)
    prices.write_text(f'market_hash_name,price\n"{REDLINE}",1.00\n')  # edited afterwards
    parity, _run = await run_against(rules, tmp_path / "rec", ledger, host=host)
    redlines = [r for r in parity.rows if r.rule == "redlines"]
    assert redlines  # bought on the list's old version, as live did
    assert all(r.verdict == "agreed" for r in redlines), "\n".join(parity.table())
    # the same replay reading the list as it is now decides otherwise
    _start, end = recording_span(tmp_path / "rec")
    today = await run_backtest(
        rules, read_records(tmp_path / "rec"), host=host, end=end, options=BacktestOptions()
    )
    assert not [p for p in today.purchases if p["rule"] == "redlines"]


def test_the_command_line_prints_the_parity_table_and_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ledger = tmp_path / "ledger.sqlite"
    anyio.run(lambda: live_recorded_run(tmp_path / "rec", parity_rules(ledger), minutes=2))
    rules = tmp_path / "rules.yaml"
    rules.write_text(parity_rules_text(ledger))
    args = ["backtest", str(rules), str(tmp_path / "rec"), "--against", str(ledger)]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "agreement 100.0%" in out
    assert main([*args, "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert figures["agreement"] == 1.0
    assert figures["agreed"] == len(figures["rows"]) > 0


def test_a_missing_ledger_is_refused_with_its_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text(parity_rules_text(tmp_path / "l.sqlite"))
    code = main(["backtest", str(rules), str(tmp_path), "--against", str(tmp_path / "nope")])
    assert code == 2
    assert "nope" in capsys.readouterr().err
