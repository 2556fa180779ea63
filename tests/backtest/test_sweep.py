"""Sweeps: parallel workers read the recording once each and equal the serial sweep byte for
byte (issue 20, point 5)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from engine.backtest import SweepStats, _sweep, load_sweep, run_sweep, sweep_serially
from engine.cli import main

from .support import REDLINE, TRADE_LINK, listing, market, write

RULES = f"""
version: 1
account: {{base_url: "http://replay", trade_link: "{TRADE_LINK}"}}
budgets: {{per_day: "300.00", total: "300.00"}}
rules:
  - name: deals
    match: {{names: ["{REDLINE}"], game: csgo}}
    discount: 15
    max_price: "100.00"
"""


@pytest.fixture
def recording(tmp_path: Path) -> Path:
    """Three listings 5%, 20% and 30% under their reference, then a fourth (40%)."""
    steps = market(120, [listing("1", 9500), listing("2", 8000), listing("3", 7000)])
    later = [listing("1", 9500), listing("2", 8000), listing("3", 7000), listing("4", 6000)]
    steps.append((65.0, "snap", later))
    return write(tmp_path / "rec", sorted(steps, key=lambda s: s[0]))


@pytest.fixture
def sweep_file(tmp_path: Path) -> Path:
    (tmp_path / "rules.yaml").write_text(RULES)
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(
        "rules: rules.yaml\nseed: 2\nvariants:\n"
        "  - name: nothing\n    set: {deals.max_price: '0.01'}\n"
        "grid:\n  deals.discount: [0, 18, 35]\n"
    )
    return sweep


def _bytes(results: list[dict[str, Any]]) -> bytes:
    return json.dumps(results, sort_keys=True).encode()


def _check(ranked: list[dict[str, Any]], serial: list[dict[str, Any]], stats: SweepStats) -> None:
    assert _bytes(ranked) == _bytes(serial)
    # the variants do differ: one that buys nothing, others that buy
    assert len({r["fingerprint"] for r in serial}) == 4
    assert ranked[-1]["variant"] == "nothing"
    assert ranked[0]["totals"]["purchases"] > 0
    # every worker read the recording once, whatever number of variants it ran
    assert set(stats.reads.values()) == {1}
    assert 1 <= len(stats.reads) <= 2
    assert sum(stats.variants.values()) == len(serial) == 4


def test_a_worker_reads_the_recording_once_for_all_its_variants(
    recording: Path, sweep_file: Path
) -> None:
    sweep = load_sweep(sweep_file)
    jobs = _sweep._jobs(sweep, recording)
    # run here as in a worker; the worker's quieting of the logger undone afterwards
    logger = logging.getLogger("snipe")
    level = logger.level
    try:
        first = _sweep._run_variant(jobs[0])
        later = [_sweep._run_variant(job) for job in jobs[1:]]
    finally:
        logger.setLevel(level)
    reads = first.pop(_sweep._WORKER)[1]
    assert {r.pop(_sweep._WORKER)[1] for r in later} == {reads}
    # and what it kept replays as a fresh read does
    ranked = _sweep._ranked([first, *later])
    assert _bytes(ranked) == _bytes(sweep_serially(sweep, recording))


def test_a_recording_too_large_to_hold_is_streamed_for_each_variant_with_the_same_results(
    recording: Path, sweep_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a worker holding a week of a busy market would run out of memory: over the limit,
    # each variant reads the recording afresh, and nothing is kept between variants
    monkeypatch.setattr(_sweep, "HOLD_LIMIT", 1)
    sweep = load_sweep(sweep_file)
    jobs = _sweep._jobs(sweep, recording)
    logger = logging.getLogger("snipe")
    level = logger.level
    try:
        results = [_sweep._run_variant(job) for job in jobs]
    finally:
        logger.setLevel(level)
    reads = [r.pop(_sweep._WORKER)[1] for r in results]
    assert reads == list(range(reads[0], reads[0] + len(jobs)))
    assert _sweep._loaded is None
    assert _bytes(_sweep._ranked(results)) == _bytes(sweep_serially(sweep, recording))


@pytest.mark.slow
def test_a_sweep_in_processes_equals_the_serial_one(recording: Path, sweep_file: Path) -> None:
    sweep = load_sweep(sweep_file)
    stats = SweepStats()
    ranked = run_sweep(sweep, recording, jobs=2, stats=stats)
    _check(ranked, sweep_serially(sweep, recording), stats)


@pytest.mark.slow  # a local Ray instance takes 10-20 s to start on this shared machine
def test_a_sweep_on_ray_actors_equals_the_serial_one(recording: Path, sweep_file: Path) -> None:
    pytest.importorskip("ray")  # the optional extra snipe[ray]
    sweep = load_sweep(sweep_file)
    stats = SweepStats()
    ranked = run_sweep(sweep, recording, jobs=2, ray_address="local", stats=stats)
    _check(ranked, sweep_serially(sweep, recording), stats)
    assert stats.startup > 0


def test_fewer_than_one_worker_is_refused_naming_the_option(
    recording: Path, sweep_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["backtest", "--sweep", str(sweep_file), "--data", str(recording), "--jobs", "0"]
    assert main(args) == 2
    assert "--jobs" in capsys.readouterr().err
