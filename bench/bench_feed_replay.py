"""Replaying the live feed's records (recording format version 2): events per second.

The live feed tells ~430 events/s (bursts near 2,800/s), so a day of it is ~37 million
records; a backtest reads and applies every one. This bench writes ``--events`` feed
records (``new`` 50 %, ``update`` 30 %, ``removed`` 20 %, over ``--names`` names of which
``--watched`` are watched by a rule) with ``RecordWriter.feed``, then measures:

  (a) baseline: the records only read (gunzip + JSON decode + checks), nothing applied;
  (b) replay: the same records applied to a ``ReplayMarket`` (each event decoded by the
      client's own per-item decode, listings learned, the event queued and taken), as a
      backtest does; ratio (b)/(a), and how many times faster than the live feed's mean
      rate (430 events/s) the replay goes.

    python bench/bench_feed_replay.py [--events 200000] [--names 20000] [--watched 50]

Last measured (2 shared cores, CPython 3.11, heavily loaded by other work, 100,000
events): written at ~3,500/s including building each event (RecordWriter.feed alone:
~11,000/s, up from ~6,700/s once the listing is serialised by pydantic-core and feed
records flushed at most every 0.1 s; the feed's bursts are ~2,800/s), 25 bytes/event;
(a) read only 26,300 records/s; (b) replayed 13,700/s (ratio 1.92; 7,800/s before the
events of unwatched names were skipped undecoded), 32x the live feed's mean rate: a day
of the feed (~37 million events) replays in roughly 45 minutes on this machine.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

START = 1_767_225_600.0
LIVE_RATE = 430.0


def make_recording(directory: Path, *, events: int, names: int, seed: int = 7) -> None:
    from engine.backtest import RecordWriter
    from engine.client import FeedConnected, FeedListingEvent, FeedRemovalEvent
    from engine.models import FeedListing, FeedRemoval

    rng = random.Random(seed)
    live: list[tuple[str, str, int]] = []
    with RecordWriter(directory) as writer:
        writer.feed(START, FeedConnected(1, START, "sid", ("csgo",), 25.0, 20.0))
        writer.snapshot(START, [])
        for n in range(events):
            t = START + n / LIVE_RATE
            roll = rng.random()
            if roll < 0.2 and live:
                item_id, name, price = live.pop(rng.randrange(len(live)))
                removal = FeedRemoval(item_id=item_id, name=name, price=price, game="csgo")
                writer.feed(t, FeedRemovalEvent(removal, t, 1))
                continue
            if roll < 0.5 and live:
                item_id, name, price = live[rng.randrange(len(live))]
                kind = "update"
                price = max(1, price - rng.randrange(100))
            else:
                item_id, name = f"{n:09d}", f"Item {rng.randrange(names):05d}"
                price, kind = rng.randrange(1_000, 100_000), "new"
                live.append((item_id, name, price))
            listing = FeedListing.model_validate(
                {
                    "item_id": item_id,
                    "name": name,
                    "price": price,
                    "platform_price": price + 1_000,
                    "game": "csgo",
                    "float": round(rng.random(), 6),
                    "sticker_names": ["Sticker | A", "Sticker | B"][: rng.randrange(3)],
                }
            )
            writer.feed(t, FeedListingEvent(kind, listing, t, 1))  # type: ignore[arg-type]


def read_only(directory: Path) -> tuple[int, float]:
    from engine.backtest import read_records

    began = time.perf_counter()
    count = sum(1 for r in read_records(directory) if r.k == "feed")
    return count, time.perf_counter() - began


def replay(directory: Path, watched: int) -> tuple[int, float]:
    from engine.backtest import ReplayMarket, read_records

    kept = {f"Item {n:05d}" for n in range(watched)}
    began = time.perf_counter()
    market = ReplayMarket(read_records(directory), keep=kept.__contains__)
    taken = 0
    while not market.exhausted:
        at = market.next_feed_at(float("inf"))
        if at is None:
            break
        market.advance_to(at)
        taken += len(market.take_feed())
    market.advance_to(float("inf"))
    taken += len(market.take_feed())
    return taken, time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--names", type=int, default=20_000)
    parser.add_argument("--watched", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp) / "rec"
        began = time.perf_counter()
        make_recording(directory, events=args.events, names=args.names)
        size = sum(p.stat().st_size for p in directory.iterdir())
        print(
            f"recording: {args.events:,} feed events ({args.events / LIVE_RATE / 3600:.2f} h "
            f"of the live feed) written in {time.perf_counter() - began:.1f} s, "
            f"{size / 1e6:.1f} MB ({size / args.events:.0f} bytes/event)"
        )
        count, read_s = read_only(directory)
        print(f"(a) read only: {count:,} records in {read_s:.2f} s ({count / read_s:,.0f}/s)")
        taken, replay_s = replay(directory, args.watched)
        rate = count / replay_s
        print(
            f"(b) replayed: {count:,} records in {replay_s:.2f} s ({rate:,.0f}/s; "
            f"{taken:,} events handed over); ratio (b)/(a) {replay_s / read_s:.2f}; "
            f"{rate / LIVE_RATE:,.0f}x the live feed's mean rate"
        )


if __name__ == "__main__":
    main()
