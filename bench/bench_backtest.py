"""Backtest replay: throughput in listing events per second and peak memory.

Targets (issue 6): replay at least 500,000 listing events/s; memory that does not grow
with the length of the recording.

A recording of ``--hours`` (default 24) of a sandbox market of ``--size`` (default
100,000) listings is made at high speed: the sandbox's own market (seeded, in-process, no
HTTP) is stepped event by event and every 10 market seconds its changes are written as a
snapshot (RecordWriter.changes). It is kept in ``--keep DIR`` (reused when present).
Then:

  (a) baseline: the records only read (gunzip + JSON decode + checks), nothing applied;
  (b) replay: the same records applied to the ReplayMarket (every name kept: the hardest
      case), which is what serves the engine during a backtest; ratio (b)/(a);
  (c) peak memory (tracemalloc) of the replay over the first quarter and over the whole
      recording, in fresh subprocesses: their ratio shows whether it grows with length;
  (d) the full engine (rules.example.yaml, the same code as live) on the first
      ``--engine-hours`` (default 1) of the recording: wall time.

    python bench/bench_backtest.py [--hours 24] [--size 100000] [--keep DIR]

Last measured (2 shared cores, CPython 3.11, load 1-3 from other work): recording made in
47-69 s, 16.8 MB; (a) 2.1 million events read in 0.9 s; (b) replayed in 4.0 s CPU,
527,000 events/s (target met; 430,000-600,000/s across runs on the loaded machine);
(c) peak 86.0 MB over the first 6 h, 87.1 MB over 24 h (1.01x: no growth with length);
(d) the full engine with rules.example.yaml, 1 h of this 100k market: 64-75 s wall. The
engine, not the replay, sets a backtest's speed: every search it would have made is made
and evaluated by the real rules.

Issue 20 (target: 1 h in 3.6 s of one core, 1,000x real time). (d) now prints CPU time
(the machine is shared: wall time mostly measures the others' load), the real-time
multiple and, as its same-run baseline, the same hour replayed with no engine. Measured
2026-11-24 with load 9-11 on 2 cores (8 engineers), old and new code alternated on the
first 15 min (A/B, same recording, identical report fingerprints): before 21.5-25.1 s
CPU (median 24.0), after 11.5-14.5 s (median 13.0): 1.85x (median), 1.87x (best). On the
whole hour: after 53.8-59.6 s CPU over 4 runs (median 58: 60-67x real time, printed as
"57.4 s CPU: 63x ... engine / replay 82x" by one of them; 16-20x by the wall clock at that
load); before ~90 s (~40x), still far from 1,000x. Where the rest goes (pyinstrument,
shares of the engine's time): counting skip reasons, which computes every reason of
every turned-down pair (~23%), the replay transport building search answers (~21%:
sorting each name's listings, encoding), the rules' checks (~8%), decoding answers (~8%,
mostly reused listings now), the snapshot (~17%: the transport's CSV ~10%, the engine's
diff ~6%), httpx request machinery (~6%), catalogue pages (~6%). For (d) alone:
``--engine-only --hours 1.2 --keep DIR``.

Issue 20, second step (branch s5-replay, 2026-11-24): the work that grew with the
market's size rather than its changes is gone from the replay. Profiled with cProfile
on the first 15 min: the replay's search answers (re-sorting each searched name: ~17% of
the engine's time), the snapshot (the transport writing a CSV of all 24k kept listings
every 10 s and the engine inflating, hashing and diffing it back: ~12%) and catalogue
pages (every listing ranked per page: ~3.5%). Now each name's listings are kept sorted
as they change and a name's part of a search answer is kept while nothing it shows
changes; a snapshot answer is told as its changes (``SnapshotChanges``, from the
market's journal; the engine's tracker judges the changed rows with the same parser and
the same judging, its body built only if read); catalogue pages merge the names' sorted
lists. Whole hour, new and old code alternated on the same recording (load 9-14 on 2
cores, 8 engineers): before 60.8-67.0 s CPU, after 38.3-39.5 s (1.6-1.7x; identical
report fingerprints, skips and decision times), ~92x real time: still far from 1,000x.
With the catalogue merge too, (d) printed at load 13: "40.0 s CPU: 90x real time on the
CPU it got (7x by the wall clock) ... the replay alone: 1.87 s CPU (engine / replay 21x)".
Where the rest goes (cProfile, first 15 min, shares of the engine's time): counting skip
reasons ~35% and the rejected pairs' decisions ~17% (branch s5-reasons makes them lazy),
the rules' scan ~12%, decoding search answers ~10%, the client's request machinery
(httpx build_request, the key's URL re-parsed, send) ~9%, the replay's search answers
~7% (1,800 listings per answer: their JSON parts, sightings), the snapshot step ~3%
(was ~12%), applying the recording ~2.5%, catalogue pages ~0.1%. Every search still
sends, decodes and judges all ~1,800 listings of its names although a handful changed
since the last search of them: reaching 1,000x needs the search step to follow changes
too (decisions kept per unchanged listing and rule state), not only the replay.

Issue 20, third step (branch s6-follow, 2026-11-25): the search step follows changes.
Profiled first (cProfile, first 15 min and the whole hour): counting skip reasons ~35%
of the engine's time, the rules' scan ~14%, the rejected pairs' decisions ~5%, although
~99% of a search's listings are the objects the previous search of the name showed (the
client's ListingMemo). Now a name's decisions and skip counts are kept while its
listings are the same objects (engine/sniper/_judged.py), for rules whose criteria
declare ``listing_only`` (no clock, reference price or budget read), and only the
listings not judged before are judged: of 10,345 names searched in the first 15 min,
7,065 kept whole, and the others mostly changed in 1-2 of their 50 listings. Same
fingerprint and whole report summary (skip counts, order and examples) as the old code,
and ``--against`` output byte for byte on two parity recordings with purchases. Whole
hour, old and new code alternated on the same recording (load 10-12 on 2 cores): before
30.3-31.6 s CPU (114-119x real time), after 19.1-19.7 s (183-188x; "engine / replay
12x", the replay alone 1.49-1.64 s): 1.55-1.65x. The 15 min: 15.9 s before, 4.6-5.9 s
after. Where the rest goes (cProfile, whole hour, shares of the engine's time): the
client's search request ~65% (decoding the whole answer ~28%: pydantic-core's parse ~6%
and ListingMemo's comparing every listing's values ~12%; httpx building the 50-name URL
~12% and the key's transport parsing it again ~7%; the replay's answer ~17%: changed
names' parts ~8%, sightings ~3%, reading the query ~3%), decide_search ~10%, the
snapshot step ~6%, the reconciler's passes ~4%. 1,000x needs the decoding to follow
changes as the decisions now do (a name's part of an answer is the same text while its
version holds: decoded once per version, as ``SnapshotChanges`` did for the snapshot)
and a lighter request path in the client.

Issue 20, point 2 (branch s7-prefilter, 2026-11-25): the engine's searches are read
through the rules' raw predicate (``RawScreen``): of the 1,772,512 listings its 1,001
searches showed in the first hour, rules.example.yaml built 3,110 (0.18%); the others
were read as msgspec stand-ins and judged and counted as such. Same fingerprint and whole
report summary as main. Whole hour, main and the branch alternated on the same recording
(load 4-9 on 2 cores): main 15.7-19.6 s CPU, the branch 15.0-17.8 s: within the noise,
since the client's memo already built each listing once per backtest (the screen saves
the first build and pydantic-core's parse of every answer, and pays msgspec's split and
a lookup by each listing's text).

Issue 20, point 1 (branch s8-search, 2026-11-28): the search request follows changes.
Profiled first (whole hour; process-time wrappers per step, cProfile for the detail),
main at 8.8 s CPU (load 2-3): the client's search call 62% (decoding 24%: the split and
a memo lookup for each of 1.77M listings; httpx building the 50-name address and the
key's transport parsing it again ~10%; the replay's answer 22%, of it ~6% its sightings
of every listing shown), decide_search 13%, the snapshot step 7%, the reconciler 7%, the
recording's replay ~10%. Now a name's part of a search answer sent again as the same
text is what the client made of it last time (``ListingMemo.recall_part``: the same
tuples, the same decisions kept at once by ``JudgedNames``): 31,884 of 41,230 parts in
the hour, only the 9,346 changed ones read listing by listing; the client makes a
request's address once (``ClientCore._url``, as httpx makes it) and the replay, which
reads no key (``SECRETS_UNREAD``), gets the keyless request; the replay decodes each
``name=`` once and looks up sightings only for parts it made. Same fingerprint and
report summary as main (e72500f, with s8-rules' generated screen), byte for byte. Whole
hour, main and the branch alternated three times on the same recording (load 1.1-1.3 on
2 cores): main 7.3-7.9 s CPU (454-490x real time), the branch 4.9-6.3 s (574-737x;
"engine / replay 8-9x", the replay alone 0.54-0.80 s): 1.35x (median), 1.49x (best); an
earlier round at load 6.6-8.5 against the session's first main: 7.2-8.5 s before,
5.4-6.4 s after. Peak memory unchanged (193 MB RSS both). Still short of 1,000x (3.6 s).
Where the rest goes (branch, shares of the engine's time): the replay's answer
~20% (the changed names' parts), decide_search ~15% and the decode ~14% (both mostly the
changed names: a name with one listing changed is read whole, ~50 listings, in each of
the three layers), the snapshot step ~10%, the reconciler's passes ~8% (ledger reads
through aiosqlite's thread with nothing to reconcile), the recording's replay ~10-15%,
the address's one parse by httpx ~6%.

Issue 20, point 3 (branch s8-judged, 2026-11-28): ``JudgedNames`` keeps the pairs the
rules' checks turned down as (rule, listing, view) with their context, not decisions; a
search's decisions are made only when read (``TurnedDown``: a plugin, the lookahead, the
budget note), and their skip counts are worked out from the same pairs. Same report
summary as main on the whole 1.2 h recording and the golden fingerprints. Main and the
branch alternated 3 times on the same 1.2 h recording (load 5-7 on 2 cores): CPU in
decide_search 0.99-1.24 s on main, 0.96-1.19 s on the branch (3-17% less per pair of
runs); the whole engine 7.3-9.4 s CPU on main, 7.7-9.3 s on the branch: within the
noise, since only the 1-2 changed listings of a name were made into decisions before.
Issue 20, point 1 (session 9, 2026-11-28, five branches merged: s9-replay, s9-decode,
s9-steps, s9-feedengine, s9-feedreplay). Profiled first (py-spy sampling, whole hour):
the replay's search answers 23%, the engine's decode 14% and decisions 15% (a name with
one listing changed read whole in each layer), the snapshot step 12%, the reconciler 6%
(ledger reads through aiosqlite's thread with nothing to reconcile), the request's
address ~6%. Now a changed name's part is patched from its last one in the replay, read
and judged listing by listing in the engine (only the listings that came are screened and
judged; the others matched by position), the client sets its own encoded query on the
address without httpx parsing every character again (engine/client/_urls.py, checked
against httpx's own parse once per process), the snapshot tracker's work follows the
changes, and a ledger in memory (backtests, dry runs; never a file) answers a read made
again with nothing written since without the thread. Same fingerprint and whole report
summary as before on the 1.2 h recording. Quiet machine (load 0.1-0.4), main (ea2cc06) and
the merge alternated: main 5.4-5.8 s CPU (625-668x real time), merged 3.0-3.7 s
(981-1,197x; the VM's noise spreads one build's runs by ~20%). A week (168 h of the same
market, recording made in 424 s, 112.6 MB), the merge: 695 s CPU (870x real time; 11.6
min, so not yet under 10), 705 MB peak RSS, run beside a CI run (load 2-3); again on the
quiet machine (load ~1): 616 s CPU (981x real time, 10.3 min), 676 MB; main, at load
4-9: 963 s CPU (628x), 750 MB. Left (shares of the hour): the replay's search answers and
the decode's per-part work, httpx's send path (cookies, Request and Response set-up), the
per-request deadline watchdog task under the virtual clock, GC (~0.2 s an hour: a higher
threshold let cycles pile up to 318 MB RSS for no gain in time; not kept).
Session 10 (2026-11-28; py-spy first): the client's per-request deadline watchdog task
(~5% of the hour) is a cancel scope the VirtualClock cancels (VirtualClock.move_on_after),
ReplayMarket.saw_all looks through a kept part only when a listing of its name became a
candidate since (5.0% -> 0.8% of the samples), no cookie pass for answers that set none
(~1.7%), the stalest names sorted as (time, name) pairs (~2.5%). tracemalloc found httpx's
read answers kept alive by a response <-> stream cycle until a full collection (200 MB of
Python objects held at the end of 3 h, 70 MB after a collection): the client now unbinds
a read answer's stream, so it dies with its last reference. Whole report byte-identical
on the 1.2 h recording. Load 1.2-1.3, session 9's main (b99247a) and this merge
alternated 3 times: 2.9 / 3.3 / 3.6 s -> 2.4 / 2.5 / 2.9 s CPU (1,238-1,493x real time).
A week, at load ~3 (other work on the other core): 387 s CPU (6.5 min, 1,563x), 631 MB
peak RSS (b99247a: 616 s quiet, 676 MB); 12 h of it: 222 MB peak RSS (281 MB before).
What grows with length is the replay's bookkeeping for the report (sightings of every
listing ever shown, ~8.5k an hour; decision times) and caches filling up to their bounds
(the client's listing memo, 100,000; the replay's entry texts); the engine's own state
levels off.

Session 11 (main 50ac63e: recordings inflated by zlib-ng and read by msgspec, shared with
the feed's replay): the week, quiet, 341.5 s CPU (5.7 min, 1,771x), 621 MB peak RSS; the
hour unchanged (2.5-2.9 s CPU, same report).
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

START = 1_767_225_600.0


def make_recording(directory: Path, *, hours: float, size: int, seed: int = 5) -> None:
    from engine.backtest import RecordWriter
    from engine.sandbox import Market, MarketConfig

    market = Market(seed=seed, start=START, config=MarketConfig(size=size))
    events = market._events  # the market's own event queue: peeked, never changed
    added: list[object] = []
    market.on_arrival = lambda listing: bool(added.append(listing))

    def row(listing: object) -> tuple[str, str, int, int | None, int | None]:
        unlock = listing.unlock_at  # type: ignore[attr-defined]
        send = listing.send_until  # type: ignore[attr-defined]
        return (
            str(listing.item_id),  # type: ignore[attr-defined]
            listing.snapshot_name,  # type: ignore[attr-defined]
            listing.price,  # type: ignore[attr-defined]
            None if unlock is None else int(unlock),
            None if send is None else int(send),
        )

    with RecordWriter(directory, include_hold=True, segment_bytes=64 << 20) as writer:
        writer.changes(START, add=[row(x) for x in market.listings.values()])
        t = START
        end = START + hours * 3600
        while t < end:
            t += 10.0
            gone: list[str] = []
            repriced: dict[str, int] = {}
            while events and events[0][0] <= t:
                item_id = events[0][3]
                present = item_id in market.listings
                market.step()
                if present and item_id not in market.listings:
                    gone.append(str(item_id))
                elif present:  # a reprice
                    repriced[str(item_id)] = market.listings[item_id].price
            fresh = [row(x) for x in added if x.item_id in market.listings]  # type: ignore[attr-defined]
            added.clear()
            writer.changes(t, add=fresh, delete=gone, price=list(repriced.items()))


def read_only(directory: Path) -> tuple[int, float]:
    from engine.backtest import read_records

    began = time.process_time()
    count = 0
    for record in read_records(directory):
        body = record.body
        for columns in (body.get("rows"), body.get("add"), body.get("px")):
            count += len(columns["id"]) if columns else 0
        count += len(body.get("del", ()))
    return count, time.process_time() - began


def replay(directory: Path, until: float | None = None) -> tuple[int, float, int]:
    from engine.backtest import ReplayMarket, read_records

    records = read_records(directory)
    if until is not None:
        # recordings are in time order: stop at the cut rather than read the rest
        records = itertools.takewhile(lambda r: r.t <= until, records)
    began = time.process_time()
    market = ReplayMarket(records)
    market.advance_to(float("inf"))
    return market.counters.events, time.process_time() - began, len(market.listings)


def memory_child(directory: str, until: float) -> None:
    import tracemalloc

    tracemalloc.start()
    events, _, _ = replay(Path(directory), until)
    print(json.dumps({"peak": tracemalloc.get_traced_memory()[1], "events": events}))


def engine_run(directory: Path, hours: float) -> tuple[float, float, dict[str, object]]:
    import logging

    import anyio

    from engine._plugins import make_plugin_host
    from engine.backtest import BacktestOptions, build_report, read_records, run_backtest
    from engine.rules import load_rules

    logging.getLogger("snipe").setLevel(logging.CRITICAL)  # buy orders are not replayed
    host = make_plugin_host(load_entry_points=False)
    rules = load_rules(Path(__file__).parent.parent / "rules.example.yaml", host=host)
    end = START + hours * 3600

    async def main() -> object:
        records = itertools.takewhile(lambda r: r.t <= end, read_records(directory))
        return await run_backtest(rules, records, host=host, end=end, options=BacktestOptions())

    began, cpu = time.perf_counter(), time.process_time()
    run = anyio.run(main)
    wall, cpu = time.perf_counter() - began, time.process_time() - cpu
    return wall, cpu, build_report(run).summary["totals"]  # type: ignore[arg-type]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hours", type=float, default=24.0)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--engine-hours", type=float, default=1.0)
    parser.add_argument("--keep", help="directory to keep (and reuse) the recording in")
    parser.add_argument("--engine-only", action="store_true", help="(d) alone")
    parser.add_argument("--memory-child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_child:
        memory_child(args.memory_child[0], float(args.memory_child[1]))
        return
    directory = Path(args.keep or tempfile.mkdtemp()) / f"h{args.hours:g}-n{args.size}"
    if not (directory / "recording.json").exists():
        began = time.perf_counter()
        make_recording(directory, hours=args.hours, size=args.size)
        print(f"recording made in {time.perf_counter() - began:.1f} s: {directory}")
    size = sum(p.stat().st_size for p in directory.iterdir())
    print(f"recording: {args.hours:g} h, {args.size} listings, {size / 1e6:.1f} MB on disk")

    if not args.engine_only:
        replay_figures(directory, args.hours)
    engine_figures(directory, args.engine_hours)


def replay_figures(directory: Path, hours: float) -> None:
    count, base = read_only(directory)
    print(f"(a) read only: {count:,} listing events in {base:.2f} s CPU ({count / base:,.0f}/s)")
    events, took, listings = replay(directory)
    rate = events / took
    print(
        f"(b) replay:    {events:,} listing events in {took:.2f} s CPU ({rate:,.0f}/s), "
        f"{listings:,} listings at the end; ratio to (a) {took / base:.2f}x; "
        f"target 500,000/s {'met' if rate >= 500_000 else 'NOT met'}"
    )
    peaks = []
    for fraction in (0.25, 1.0):
        until = START + hours * 3600 * fraction
        out = subprocess.run(
            [sys.executable, __file__, "--memory-child", str(directory), str(until)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        peaks.append(json.loads(out)["peak"])
        print(f"(c) peak memory, first {fraction:.0%}: {peaks[-1] / 1e6:.1f} MB")
    print(f"    growth with length (x4 longer): {peaks[1] / peaks[0]:.2f}x")


def engine_figures(directory: Path, hours: float) -> None:
    # same-run baseline: the same hour replayed with no engine (what the data costs)
    _, alone, _ = replay(directory, START + hours * 3600)
    wall, cpu, totals = engine_run(directory, hours)
    print(
        f"(d) engine on the first {hours:g} h (rules.example.yaml): {wall:.1f} s wall, "
        f"{cpu:.1f} s CPU: {hours * 3600 / cpu:,.0f}x real time on the CPU it got "
        f"({hours * 3600 / wall:,.0f}x by the wall clock; target 1,000x); "
        f"{totals['searches']} searches, {totals['snapshots']} snapshots, "
        f"{totals['attempts']} purchase attempts; the replay alone: {alone:.2f} s CPU "
        f"(engine / replay {cpu / alone:.0f}x)"
    )


if __name__ == "__main__":
    main()
