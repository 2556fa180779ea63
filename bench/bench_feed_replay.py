"""Backtests of recordings with the live feed's events (format version 2): x real time.

Target (issue 20, point 1): a backtest of a recording whose feed tells ~430 events/s runs
at least 300x real time through the full engine (one market hour, 1.55 million feed
events, in at most 12 s of one core).

A recording of ``--minutes`` (default 15) of a ``--size`` (default 100,000) listing
sandbox market and its feed (churn at 430 events/s, bursts of 2,800/s every 2 min) is made
in-process (engine/backtest/_synthetic.py) and kept in ``--keep DIR`` (reused). Then, in
CPU seconds (the machine is shared: wall time mostly measures the others' load):

  (a) read only: the records read (gunzip, JSON, checks), nothing applied;
  (b) the replay market alone: every record applied, the feed events of the names
      rules.example.yaml watches decoded and taken (what a backtest's driver hands over);
  (c) the full engine (rules.example.yaml, the same code as live) with the feed: the
      figure, as x real time (target 300x) and per feed event;
  (d) same-run baseline: the same engine and recording with ``account.feed: off`` (the
      events are applied to the market, not handed over; the engine polls the snapshot
      every 10 s instead of auditing the feed every 5 min); ratio (c)/(d).

    python bench/bench_feed_replay.py [--minutes 15] [--size 100000] [--keep DIR]

(c) also says where its time went: the engine's steps (the searches confirming feed
listings for rules the feed cannot judge, the snapshot and audits), its handling of the
feed's events (Engine.on_feed_event: FeedWatch, the one decision path, the audit book,
the confirm queue), and the rest, the replay (reading, the market, the driver).

Last measured (2026-11-25, 2 shared cores heavily loaded by 8 engineers, CPython 3.11;
rules.example.yaml watches ~24% of the events). Profiled first (cProfile, (c) on 5 min,
shares of the engine's time; this bench measured only the market then): the steps
~50% (confirming searches: skip counting and the rules' scan of ~1,900 listings an
answer), reading the recording ~15% (json.loads ~9%), applying it ~14% (decoding a watched
event ~5%, written back to JSON first; each unwatched one checked twice, ~3%), handing over
and deciding the events ~12%, Engine.next_due once per stop ~5%. No Engine.IO frame and
no websocket: the replay hands the engine FeedEvents decoded once, with no turn of the
event loop per event. Old code (commit dc77329) and new alternated on the first 5 min of
the 15-min recording, identical fingerprints:

  (a) read only: 44,800-51,000 records/s before, 61,200-69,000/s after (1.3-1.5x);
  (b) market alone: 25,000-30,000 feed events/s before, 46,300-52,700/s after (1.8x);
  (c) engine with the feed: 17.3-18.7 s CPU before (16-17x real time), 12.9-13.7 s after
      (22-23x); the replay's part 54.8-58.5 -> 32.5-34.8 us per feed event, the engine's
      per watched event 60-66 -> 46-51 us (noise: its code did not change), its steps
      6.6-7.9 s either way; without the steps 28-30x -> 44-48x real time;
  (d) feed off: 8.9-12.6 s CPU (24-34x); (c)/(d) 1.38-1.48 before, 1.42-1.46 after.

The whole 15 min: (a) 94,300 -> 115,800 records/s, (b) 33,100 -> 54,500 feed events/s,
(c) 50.3 s -> 41.6 s CPU (18x -> 22x real time), (d) 37.1 / 30.1 s. The target, 300x
(12 s an hour), is far: an hour now costs ~56 s of replay, ~19 s of feed events in the
engine and ~80 s of steps on this machine. What remains: reading (~6 us a record, half
of it pydantic-core's parse: a parser that skips the items of unwatched events would
halve it), Engine.next_due once per watched event (~15 us: it is not monotone in time,
so the driver cannot cache it without changing decisions), the decision path per
watched event (the rules' scan and skip counting, ~45 us) and the confirming searches
(each decodes and decides ~1,900 listings: the search step following changes).
"""

from __future__ import annotations

import argparse
import itertools
import logging
import tempfile
import time
from pathlib import Path

START = 1_767_225_600.0
LIVE_RATE = 430.0
RULES = Path(__file__).parent.parent / "rules.example.yaml"


def make_recording(directory: Path, *, minutes: float, size: int) -> int:
    from engine.backtest._synthetic import record_sandbox_market
    from engine.sandbox import MarketConfig

    config = MarketConfig(size=size, churn_per_second=LIVE_RATE, burst_every=120.0)
    return record_sandbox_market(directory, start=START, seconds=minutes * 60, config=config)


def _records(directory: Path, end: float):  # type: ignore[no-untyped-def]
    from engine.backtest import read_records

    return itertools.takewhile(lambda r: r.t <= end, read_records(directory))


def _rules(feed: str):  # type: ignore[no-untyped-def]
    from engine._plugins import make_plugin_host
    from engine.rules import load_rules_text

    text = RULES.read_text(encoding="utf-8").replace("  feed: auto", f"  feed: {feed}")
    return load_rules_text(text, host=make_plugin_host(load_entry_points=False))


def read_only(directory: Path, end: float) -> tuple[int, int, float]:
    began = time.process_time()
    records = feed = 0
    for record in _records(directory, end):
        records += 1
        feed += record.k == "feed"
    return records, feed, time.process_time() - began


def market_only(directory: Path, end: float) -> tuple[int, float]:
    from engine.backtest import ReplayMarket

    rules = _rules("auto")
    began = time.process_time()
    market = ReplayMarket(_records(directory, end), keep=lambda name: bool(rules.view(name).rules))
    taken = 0
    while (at := market.next_feed_at(end)) is not None:
        market.advance_to(at)
        taken += len(market.take_feed())
    market.advance_to(end)
    taken += len(market.take_feed())
    return taken, time.process_time() - began


def _timed(spent: dict[str, float]) -> None:
    """Count the CPU time of the engine's steps and of its feed events in ``spent`` (the
    rest of a run is the replay: reading, the market, the driver)."""
    from engine.sniper import Engine

    def wrap(name: str) -> None:
        inner = getattr(Engine, name)

        async def timed(self: Engine, *args: object) -> object:
            began = time.process_time()
            try:
                return await inner(self, *args)
            finally:
                spent[name] = spent.get(name, 0.0) + time.process_time() - began

        setattr(Engine, name, timed)

    wrap("step")
    wrap("on_feed_event")


def engine_run(directory: Path, end: float, feed: str) -> tuple[float, object, str]:
    import anyio

    from engine._plugins import make_plugin_host
    from engine.backtest import BacktestOptions, build_report, run_backtest

    logging.getLogger("snipe").setLevel(logging.CRITICAL)  # buy orders are not replayed
    rules = _rules(feed)
    host = make_plugin_host(load_entry_points=False)

    async def main() -> object:
        return await run_backtest(
            rules, _records(directory, end), host=host, end=end, options=BacktestOptions()
        )

    began = time.process_time()
    run = anyio.run(main)
    cpu = time.process_time() - began
    return cpu, run, build_report(run).fingerprint  # type: ignore[arg-type]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=15.0)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--keep", help="directory to keep (and reuse) the recording in")
    args = parser.parse_args()
    directory = Path(args.keep or tempfile.mkdtemp()) / f"feed-m{args.minutes:g}-n{args.size}"
    if not (directory / "recording.json").exists():
        began = time.perf_counter()
        events = make_recording(directory, minutes=args.minutes, size=args.size)
        print(f"recording made in {time.perf_counter() - began:.0f} s ({events:,} feed events)")
    size = sum(p.stat().st_size for p in directory.iterdir())
    seconds = args.minutes * 60
    end = START + seconds
    print(
        f"recording: {args.minutes:g} min, {args.size:,} listings, {size / 1e6:.1f} MB: {directory}"
    )

    records, feed, read_s = read_only(directory, end)
    print(
        f"(a) read only: {records:,} records ({feed:,} feed: {feed / seconds:.0f}/s of market) "
        f"in {read_s:.2f} s CPU ({records / read_s:,.0f}/s)"
    )
    taken, market_s = market_only(directory, end)
    print(
        f"(b) replay market alone: {market_s:.2f} s CPU ({feed / market_s:,.0f} feed events/s;"
        f" {taken:,} events of watched names handed over); (b)/(a) {market_s / read_s:.2f}"
    )
    spent: dict[str, float] = {}
    _timed(spent)
    spent.clear()
    with_feed, run, print_on = engine_run(directory, end, "auto")
    steps, events = spent.get("step", 0.0), spent.get("on_feed_event", 0.0)
    print(
        f"(c) engine with the feed: {with_feed:.2f} s CPU: {seconds / with_feed:,.0f}x real time "
        f"(target 300x), {feed / with_feed:,.0f} feed events/s, "
        f"{with_feed / feed * 1e6:.1f} us per feed event; {run.searches} searches, "  # type: ignore[attr-defined]
        f"{run.snapshots} snapshots, feed {run.feed}; fingerprint {print_on[:16]}"  # type: ignore[attr-defined]
    )
    replay = with_feed - steps - events
    print(
        f"    of which the engine's steps (searches, snapshots, audits) {steps:.2f} s, its feed "
        f"events {events:.2f} s ({events / max(1, taken) * 1e6:.1f} us per watched event), "
        f"the replay (reading, market, driver) {replay:.2f} s ({replay / feed * 1e6:.1f} us "
        f"per feed event); without the steps: {seconds / (events + replay):,.0f}x real time"
    )
    without, run, print_off = engine_run(directory, end, "off")
    print(
        f"(d) baseline, same engine with account.feed off: {without:.2f} s CPU: "
        f"{seconds / without:,.0f}x real time; {run.searches} searches, "  # type: ignore[attr-defined]
        f"{run.snapshots} snapshots; fingerprint {print_off[:16]}"  # type: ignore[attr-defined]
    )
    print(
        f"    ratio (c)/(d) {with_feed / without:.2f}; the feed's own cost (c)-(d): "
        f"{(with_feed - without) / feed * 1e6:.1f} us per feed event"
    )


if __name__ == "__main__":
    main()
