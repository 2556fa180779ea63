"""A backtest gives the same report, byte for byte, with the search screen and without it.

The engine hands its searches the rules' raw predicate (``engine.rules.RawScreen``): a
listing no rule watching its name could accept is not built, but judged and counted as
its stand-in. Whether the screen is on must change nothing a report says: purchases,
ledger, skip counts, their order and examples, listings seen.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

import engine.sniper._engine as engine_module
from engine._plugins import make_plugin_host
from engine.backtest import build_report
from engine.models import SearchResponse
from engine.rules import RuleSet, load_rules

from .support import backtest, sandbox_rules

ROOT = Path(__file__).resolve().parents[2]


def shipped() -> RuleSet:
    return load_rules(ROOT / "rules.example.yaml", host=make_plugin_host(load_entry_points=False))


def report_bytes(ruleset: RuleSet, data: Path) -> tuple[bytes, list[bytes], bytes]:
    """The report (summary and ledger), and every skip count with its example (the
    report shows the first few only when nothing was bought)."""
    run = anyio.run(backtest, ruleset, data)
    report = build_report(run)
    counted = json.dumps([run.skips, run.listings_seen]).encode()
    return json.dumps(report.summary, sort_keys=True).encode(), list(report.ledger_lines), counted


def nothing_bought() -> RuleSet:
    return sandbox_rules(discount=95)


@pytest.mark.parametrize(
    "make_rules",
    [shipped, sandbox_rules, nothing_bought],
    ids=["shipped", "sandbox", "nothing-bought"],
)
def test_a_backtest_reports_the_same_with_the_screen_and_without(
    sandbox_recording: Path,
    monkeypatch: pytest.MonkeyPatch,
    make_rules: Callable[[], RuleSet],
) -> None:
    passed_over: list[int] = []
    read = engine_module.judged_listings

    def counted(answer: SearchResponse, *args: Any) -> Any:
        passed_over.append(answer.passed_over)
        return read(answer, *args)

    monkeypatch.setattr(engine_module, "judged_listings", counted)
    screened = report_bytes(make_rules(), sandbox_recording)
    assert sum(passed_over) > 0  # the screen passed listings over unbuilt

    monkeypatch.setattr(engine_module, "search_screen", lambda *args: None)
    passed_over.clear()
    full = report_bytes(make_rules(), sandbox_recording)
    assert sum(passed_over) == 0

    assert screened == full
