"""The look-ahead check: a decision that changes when only the future changes is caught,
and named with the plugins and price sources it rests on; the built-ins are clean."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from engine._plugins import PluginHost, make_plugin_host
from engine.backtest import (
    LookaheadReport,
    check_lookahead,
    cut_times,
    read_records,
    replayed_recording,
    replaying,
    write_cut,
)
from engine.backtest._lookahead import Cut, _Compare, _Run
from engine.rules import RuleSet, load_rules_text

from . import peeking
from .support import REDLINE, T0, TRADE_LINK, entry, listing, market, sandbox_rules, write


def rules_text(discount: str, *, extra: str = "") -> str:
    return f"""
version: 1
account: {{base_url: "http://replay", trade_link: "{TRADE_LINK}"}}
budgets: {{per_day: "100.00", total: "100.00"}}
{extra}
rules:
  - name: deals
    match: {{names: ["{REDLINE}"], game: csgo}}
    discount: {discount}
    max_price: "50.00"
"""


def recording(directory: Path) -> Path:
    """Two minutes of Redlines: two at first, cheaper ones later, and a search answer at
    80 s showing one at $30 (the last price the recording knows)."""
    steps = market(120, [listing("1", 8000), listing("2", 9500)])
    steps += [(60.0, "snap", [listing("1", 8000), listing("2", 9500), listing("3", 7000)])]
    steps += [(90.0, "snap", [listing("2", 9500), listing("3", 7000), listing("4", 6000)])]
    steps += [(80.0, "search", [entry("5", 30_000, 10_000)])]
    return write(directory, sorted(steps, key=lambda s: s[0]))


def hosts(*plugins: tuple[str, object]) -> object:
    def make(extra: Sequence[tuple[str, object]]) -> PluginHost:
        return make_plugin_host(load_entry_points=False, plugins=[*plugins, *extra])

    return make


def loader(text: str) -> object:
    def load(host: PluginHost) -> RuleSet:
        return load_rules_text(text, host=host)

    return load


async def check(
    text: str, data: Path, *plugins: tuple[str, object], cuts: int = 3
) -> LookaheadReport:
    return await check_lookahead(
        loader(text),  # type: ignore[arg-type]
        data,
        make_host=hosts(*plugins),  # type: ignore[arg-type]
        cuts=cuts,
    )


@pytest.fixture(autouse=True)
def _fresh_hoard() -> Iterator[None]:
    peeking.LOWEST.clear()  # as in a new process
    yield
    peeking.LOWEST.clear()


async def test_a_price_source_reading_the_whole_recording_is_caught(tmp_path: Path) -> None:
    data = recording(tmp_path / "rec")
    text = rules_text("{min: 30, versus: prophet.last}")
    report = await check(text, data, ("prophet", peeking.PROPHET))
    assert report.found
    assert report.suspects == ["prophet"]
    first = next(c for c in report.cuts if not c.clean).differences[0]
    # the full run knew the $30 price of 80 s from the start; a run cut before it did not
    assert first.at < T0 + 80
    assert (first.rule, first.item_id, first.name) == ("deals", "1", REDLINE)
    assert first.full == "buy at $8.00"
    assert first.cut == "skip"
    assert "price source prophet.last (plugin 'prophet')" in first.involved
    # the evidence: the full run measured against the future price, the cut run could not
    assert "discount 73.33% (at least 30%) vs prophet.last $30.00" in first.full_reasons
    assert "discount 15.79% below 30% vs prophet.last (reference $9.50)" in first.reasons
    # a cut after the $30 answer sees what the full run saw: the same decisions
    assert report.cuts[-1].at >= T0 + 80
    assert report.cuts[-1].clean


async def test_a_veto_remembering_an_earlier_run_is_caught(tmp_path: Path) -> None:
    data = recording(tmp_path / "rec")
    report = await check(rules_text("15"), data, ("hoard", peeking.HOARD))
    assert report.found
    assert report.suspects == ["hoard"]
    differences = [d for c in report.cuts for d in c.differences]
    first = differences[0]
    assert first.full == "buy at $8.00"
    # the cut runs came after the full run, whose $6.00 listing of 90 s the veto kept
    assert first.cut == "buy at $8.00, vetoed by plugin 'hoard'"
    assert "veto (plugin 'hoard')" in first.involved


async def test_the_same_rules_without_the_plugins_are_clean(tmp_path: Path) -> None:
    data = recording(tmp_path / "rec")
    report = await check(rules_text("15"), data)
    assert not report.found
    assert report.suspects == []
    assert report.decisions > 0
    assert all(c.compared > 0 for c in report.cuts)
    assert len(report.cuts) == 3


async def test_a_price_list_file_written_after_the_recording_is_look_ahead(
    tmp_path: Path,
) -> None:
    data = recording(tmp_path / "rec")
    prices = tmp_path / "prices.json"
    prices.write_text(f'{{"{REDLINE}": 12.00}}')
    extra = f"prices: {{lists: {{mine: {{path: '{prices}', every: 1h}}}}}}"
    text = rules_text("{min: 15, versus: file.mine}", extra=extra)
    os.utime(prices, (T0 + 50, T0 + 50))  # written during the recording
    report = await check(text, data, cuts=1)
    assert report.found
    (finding,) = report.lists
    assert (finding.source, finding.path, finding.written_at) == ("file.mine", str(prices), T0 + 50)
    assert "reads it as it is now" in finding.describe()
    os.utime(prices, (T0 - 3600, T0 - 3600))  # written before it: known all along
    assert not (await check(text, data, cuts=1)).found


@pytest.mark.slow
async def test_the_built_in_criteria_and_learned_references_are_clean(
    sandbox_recording: Path,
) -> None:
    report = await check_lookahead(
        lambda host: sandbox_rules(),
        sandbox_recording,
        make_host=lambda extra: make_plugin_host(load_entry_points=False, plugins=extra),
        cuts=3,
    )
    assert not report.found, [d.describe() for c in report.cuts for d in c.differences]
    assert sum(c.compared for c in report.cuts) > 1000


@pytest.mark.parametrize(
    ("start", "end", "cuts", "times", "expected"),
    [
        (0.0, 100.0, 1, (), [50.0]),
        (0.0, 100.0, 3, (), [25.0, 50.0, 75.0]),
        (0.0, 100.0, 3, (10.0, 30.0, 90.0), [30.0, 90.0]),  # snapped, duplicates dropped
        (0.0, 100.0, 2, (0.0,), []),  # nothing decided after the start: nothing to cut
    ],
)
def test_cut_times(
    start: float, end: float, cuts: int, times: tuple[float, ...], expected: list[float]
) -> None:
    assert cut_times(start, end, cuts, times) == expected


def test_a_cut_copy_holds_the_records_up_to_its_time_and_no_later(tmp_path: Path) -> None:
    steps = market(300, [listing("1", 8000)])
    data = write(tmp_path / "rec", steps, segment_bytes=200)  # several segments
    assert len(list(data.glob("seg-*"))) > 2
    cut = write_cut(data, tmp_path / "cut", T0 + 120)
    kept = [(r.t, r.k, dict(r.body)) for r in read_records(cut)]
    every = [(r.t, r.k, dict(r.body)) for r in read_records(data)]
    assert kept == [r for r in every if r[0] <= T0 + 120]
    assert kept[-1][0] == T0 + 120


def test_replayed_recording_is_set_only_within_the_block(tmp_path: Path) -> None:
    assert replayed_recording() is None
    with replaying(tmp_path):
        assert replayed_recording() == tmp_path
    assert replayed_recording() is None


def compare(full: _Run, cut_at: float, cut: _Run) -> Cut:
    """Feed ``cut``'s steps to the comparison as a cut run would, then finish it."""
    result = Cut(cut_at)
    comparison = _Compare(full, result)
    host = make_plugin_host(load_entry_points=False)
    ruleset = load_rules_text(rules_text("15"), host=host)
    for at, entries in cut.steps:
        assert not entries  # steps without decisions: the comparison needs no Decision
        comparison.step(at, [], {}, ruleset, host)
    comparison.finish(cut)
    return result


@pytest.mark.parametrize(
    ("full", "cut", "full_says", "cut_says"),
    [
        # the cut run stepped less often before the cut
        (_Run([(T0, ()), (T0 + 5, ())], []), _Run([(T0, ())], []), "a step at", "no step"),
        # the same steps, but a purchase written before the cut only in the full run
        (
            _Run([(T0, ())], [(T0 + 1, "1", "deals", 8000)]),
            _Run([(T0, ())], []),
            "purchase written at 2026-01-01T00:00:01Z for $8.00",
            "no purchase",
        ),
        # a purchase written after the cut is not compared: nothing differs
        (_Run([(T0, ())], [(T0 + 20, "1", "deals", 8000)]), _Run([(T0, ())], []), None, None),
    ],
)
def test_steps_and_purchases_before_the_cut_are_compared(
    full: _Run, cut: _Run, full_says: str | None, cut_says: str | None
) -> None:
    result = compare(full, T0 + 10, cut)
    if full_says is None:
        assert result.clean
        return
    (difference,) = result.differences
    assert difference.full.startswith(full_says)
    assert difference.cut == cut_says


async def test_a_reference_store_is_neither_read_nor_written_by_replays(tmp_path: Path) -> None:
    """``prices.store`` holds what live runs learned, later than the replayed moments: a
    replay that restored it let the whole recording's prices reach earlier decisions (the
    check caught it, on the built-in source), and wrote the trader's file. Replays now
    start cold and leave the file alone: clean, and the file is not created."""
    steps = market(120, [listing("1", 8000), listing("2", 9500)])
    dear = [listing(str(n), 20_000 + n) for n in range(6, 12)]
    steps = [(t, k, rows + dear if k == "snap" and t >= 60 else rows) for t, k, rows in steps]
    data = write(tmp_path / "rec", steps)
    store = tmp_path / "prices.sqlite"
    extra = f"prices: {{store: '{store}', market: {{window: 1h, hold: 0s}}}}"
    text = rules_text("{min: 5, versus: market.p25, min_observations: 2}", extra=extra)
    report = await check(text, data, cuts=1)
    assert not report.found, report.cuts[0].differences
    assert not store.exists()
