"""Bytes on the wire for bench/bench_detection.py: the feed's frames measured on a real
socket, and both ways' bytes per day, on the sandbox and extrapolated to the live csgo
market (issue 17: with the feed, audited every 5 minutes, <= 5 GB/day).

Every request and answer through the sandbox's transport is counted (raw bytes, gzip as
served) and every feed frame; each search is tagged with what it is for (confirming feed
listings, the start's search of every watched name, or names a heal or the audit
flagged: :func:`tag_searches`). The figures come in the parts a trader reasons with:

- **watching** (what the 5 GB/day target is about): the frames of csgo's events, ~430
  events a second over every game times csgo's share of the run's market changes (the
  sandbox's feed sends a connection its subscribed games' events only; the live service
  is ASSUMED to do the same, as the wire notes' per-game subscription says), of the size
  measured on a socket (:func:`measure_frames`: the run's first 20,000 frames sent by a
  Starlette websocket on hypercorn, the sandbox's stack, to snipe's feed client, whose
  network stream counts what it reads; with permessage-deflate, the default, and plain);
  the audits (the csgo snapshot, ~45 MB of gzip as ``snipe check`` has it, every hour;
  one ``GET /v1/prices?game=csgo`` an audit slot at the bytes a row measured on the
  sandbox times an assumed 30,000 rows); the heals (4 reconnections a day assumed, each
  two full snapshots and the searches of the names they flag, as this run's heal
  measured); the start's search of every watched name (once a day assumed); the rest as
  measured;
- **per confirmed purchase**: the confirming searches' bytes over the purchases made on
  their answers, and the total at the run's purchase volume and at an assumed realistic
  one (100 a day).

The sandbox serves JSON without gzip although httpx asks for it: the answers' gzip'd
sizes (level 6, computed here) give the figures of a service that honours
``Accept-Encoding``. Before this version the run's every search was scaled to a day (its
start's sweep of 1,000 names too) and the frames were every game's: that sum is printed
for comparison.
"""

from __future__ import annotations

import gzip
import json
import math
import socket
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

import anyio
import httpx

from engine import VirtualClock
from engine.client import FeedClient
from engine.sandbox._feed import FeedConfig, event_frame, open_packet
from engine.sniper import Engine
from engine.sniper._bandwidth import GAME_SNAPSHOT_BYTES

__all__ = ["Meter", "SearchSent", "measure_frames", "report_bytes", "tag_searches"]

TARGET_BYTES = 5e9
AUDIT_EVERY = 300.0
FULL_AUDIT_EVERY = 3600.0  # account.full_audit_every's default
LIVE_CSGO_PRICE_ROWS = 30_000
"""ASSUMPTION: rows of GET /v1/prices?game=csgo on the live market (distinct names with
listings, a Doppler phase a row of its own). Not measured: the snapshot's ~1.3 million
listings over every game (wire-notes.md) hold some tens of thousands of names."""
RECONNECTS_PER_DAY = 4.0
"""ASSUMPTION: feed reconnections a day (one every 6 hours); each is healed by a full
snapshot, and the poll after it is full too (the base of the full audit to come)."""
LIVE_EVENTS_PER_SECOND = 430.0
SAMPLE_FRAMES = 20_000  # the first frames, replayed over a real socket to measure them
DAY = 86_400.0
SNAPSHOT_WAY_LIVE = 388.8e9  # `snipe check`'s figure for csgo every 10 s
STARTS_PER_DAY = 1.0
"""ASSUMPTION: process starts a day; each searches every watched name once."""
REALISTIC_PURCHASES_PER_DAY = 100.0
"""ASSUMPTION: confirmed purchases a day of a busy sniper (the bench's sticker rule, which
takes any stickered listing of 40 names, makes tens of thousands)."""


def head_bytes(request: httpx.Request) -> int:
    return len(str(request.url)) + sum(len(k) + len(v) + 4 for k, v in request.headers.raw)


class Meter(httpx.AsyncBaseTransport):
    """The sandbox's transport, measuring: the sandbox's own CPU time (not the engine's
    work), raw bytes per endpoint, and when each purchase request arrives."""

    def __init__(self, inner: httpx.AsyncBaseTransport, clock: VirtualClock) -> None:
        self.inner = inner
        self.clock = clock
        self.server_cpu = 0.0
        self.bytes: Counter[str] = Counter()
        self.calls: Counter[str] = Counter()
        self.pending: list[str] = []  # item ids the buyer let through, request not seen yet
        self.requested: dict[str, float] = {}
        self.began = (0.0, 0.0, 0.0)  # market time, CPU, server CPU of the handling under way
        self.source = ""
        self.sources: dict[str, str] = {}
        self.price_rows = 0  # rows of every GET /v1/prices answer (the cheap audit)
        self.price_gzip = 0
        self.search_gzip = 0  # search answers' bodies gzip'd here, for a gzip'ing service
        self.price_encodings: Counter[str] = Counter()
        self.search_tag = "search"
        """What the next search request is for (``search``: a confirming search; ``sweep``:
        watched names never searched yet, once a run; ``flagged``: names a snapshot's diff
        (the heal's) or the cheap audit flagged), set by the bench before it is sent."""
        self.search_gzip_by: Counter[str] = Counter()

    def now(self) -> float:
        """Market time now: the handling's start plus the engine's CPU since."""
        at, cpu, server = self.began
        return at + max(0.0, time.process_time() - cpu - (self.server_cpu - server))

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path.startswith("/v1/buy") and self.pending:
            at = self.now()
            for item_id in self.pending:
                self.requested.setdefault(item_id, at)
                self.sources.setdefault(item_id, self.source)
            self.pending.clear()
        body = await request.aread()
        began = time.process_time()
        response = await self.inner.handle_async_request(request)
        await response.aread()
        self.server_cpu += time.process_time() - began
        kind = "snapshot" if "snapshot" in path else "search" if "search" in path else "other"
        if path == "/v1/prices" and request.url.params.get("game") == "csgo":
            kind = "prices"  # the cheap audit's (the references step asks for every game)
            self.price_rows += len(json.loads(response.content).get("items") or ())
            self.price_encodings[response.headers.get("content-encoding", "identity")] += 1
            self.price_gzip += len(gzip.compress(response.content, 6))
        if kind == "search":
            kind = self.search_tag
            gzipped = head_bytes(request) + len(gzip.compress(response.content, 6))
            self.search_gzip_by[kind] += gzipped
            self.search_gzip += gzipped if kind == "search" else 0
        self.calls[kind] += 1
        head = head_bytes(request)
        self.bytes[kind] += head + len(body) + response.num_bytes_downloaded
        return response


def tag_searches(engine: Engine, meter: Meter, clock: VirtualClock) -> list[SearchSent]:
    """Tell the meter what each search of the feed way is for, as the engine is about to
    send it (:meth:`FeedWatch.confirming` runs just before the request): ``search`` when
    it confirms feed listings, ``sweep`` when its names were never searched (the once-a-run
    search of every watched name), ``flagged`` otherwise (names a heal's snapshot diff or
    the cheap audit flagged). Returns the list the searches are noted in, in order."""
    watch = engine.feedwatch
    confirming = watch.confirming
    sent: list[SearchSent] = []

    def tagged(batch: tuple[str, ...]) -> Any:
        never = engine.schedule.never_searched()
        taken = confirming(batch)
        tag = "search" if taken else "sweep" if never.issuperset(batch) else "flagged"
        meter.search_tag = tag
        sent.append(SearchSent(clock.now(), batch, tag, sum(map(len, taken.values()))))
        return taken

    watch.confirming = tagged  # type: ignore[method-assign]
    return sent


@dataclass(frozen=True)
class SearchSent:
    at: float
    names: tuple[str, ...]
    tag: str
    candidates: int


async def measure_frames(frames: list[str]) -> dict[str, tuple[float, float]]:
    """Bytes a frame takes on a real socket, and the CPU seconds of both ends per frame
    (server and client share this process), per compression mode of the feed client:
    ``frames`` sent in order by a Starlette websocket served by hypercorn (the sandbox's
    stack: it accepts permessage-deflate when offered) on 127.0.0.1 to snipe's
    :class:`FeedClient`, whose network stream counts what it reads
    (``wire_bytes_received``: frame headers and payloads, compressed or not; the open,
    namespace and ``subscribed`` packets, ~150 B in all, are counted too)."""
    from hypercorn.asyncio import serve
    from hypercorn.config import Config
    from starlette.applications import Starlette
    from starlette.routing import WebSocketRoute
    from starlette.websockets import WebSocket

    async def replay(ws: WebSocket) -> None:
        await ws.accept()
        await ws.send_text(open_packet("bench", FeedConfig(ping_interval=600, ping_timeout=600)))
        await ws.receive_text()  # 40
        await ws.send_text('40{"sid":"bench"}')
        await ws.receive_text()  # the subscription
        await ws.send_text(event_frame("subscribed", {"name": "csgo"}))
        for frame in frames:
            await ws.send_text(frame)
        await ws.receive()  # until the client leaves

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    config = Config()
    config.bind = [f"fd://{sock.detach()}"]
    config.accesslog = config.errorlog = None
    app: Any = Starlette(routes=[WebSocketRoute("/socket.io/", replay)])
    per_frame: dict[str, tuple[float, float]] = {}
    stop = anyio.Event()
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: serve(app, config, shutdown_trigger=stop.wait))
        for mode in ("off", "auto"):
            cpu = time.process_time()
            async with FeedClient(url, games=["csgo"], compression=mode) as feed:
                with anyio.fail_after(600):
                    async for _ in feed:
                        if feed.health().events_received >= len(frames):
                            break
                health = feed.health()
                assert health.compressed is (mode == "auto"), health
                count = max(1, len(frames))
                per_frame[mode] = (
                    health.wire_bytes_received / count,
                    (time.process_time() - cpu) / count,
                )
        stop.set()
    return per_frame


def _gb(count: float) -> str:
    return f"{count / 1e9:.2f} GB" if count >= 1e7 else f"{count / 1e6:.1f} MB"


def report_bytes(snap: Any, feed: Any, days: float) -> None:
    """The bytes of both ways (``RunResult``s of bench_detection.py), per day on the
    sandbox and extrapolated to the live csgo market (``days``: the market days run), in
    the parts a trader reasons with: the cost of *watching* (frames, audits, heals: what
    the 5 GB/day target is about), and the cost *per confirmed purchase* (its confirming
    search's bytes), with totals at the run's purchase volume and at a realistic one."""
    print(
        f"bytes on the wire per day, sandbox: snapshot way {_gb(snap.per_day())} "
        f"({', '.join(f'{k} {_gb(v / days)}' for k, v in sorted(snap.bytes.items()))}); "
        f"feed way {_gb(feed.per_day())} "
        f"({', '.join(f'{k} {_gb(v / days)}' for k, v in sorted(feed.bytes.items()))})"
    )
    rows = max(1, feed.price_rows)
    row, row_gzip = feed.price_bytes / rows, feed.price_gzip / rows
    encodings = ", ".join(f"{k} x{n}" for k, n in sorted(feed.price_encodings.items())) or "none"
    print(
        f"audit tiers on the sandbox: {feed.price_calls} GET /v1/prices?game=csgo answers "
        f"({feed.audits_cheap} judged as cheap audits; the others bases after a snapshot "
        f"poll, or fetched too late in the run to be judged), "
        f"{feed.price_rows / max(1, feed.price_calls):.0f} rows each, {row:.0f} B a row as "
        f"sent (request included; content-encoding {encodings}: the sandbox does not gzip "
        f"it although httpx asks for gzip; {row_gzip:.0f} B a row gzip'd here), "
        f"{feed.suspects} suspect name(s) searched; {feed.snapshots} snapshot polls "
        f"({feed.audits_full} full audits; the heal's and the one after it)"
    )
    # -- the frames: what a csgo subscriber is sent ------------------------------------
    every_game = sum(feed.games.values())
    share = feed.games["csgo"] / max(1, every_game)
    split = GAME_SNAPSHOT_BYTES["csgo"] / sum(GAME_SNAPSHOT_BYTES.values())
    print(
        f"frames: the sandbox's feed sends a connection the events of the games it "
        f"subscribed to, and no other (engine/sandbox/_feed.py; tests/sandbox/"
        f"test_sandbox_feed.py): this run's market changed {every_game:,} times over every "
        f"game, {feed.games['csgo']:,} of them csgo's ({share:.1%}), and the client, "
        f"subscribed to csgo, was sent those {feed.events:,}. ASSUMPTION (live): the "
        f"service likewise sends a subscriber its games' events only (wire-notes.md: the "
        f"client subscribes once per game), and csgo's share of its ~"
        f"{LIVE_EVENTS_PER_SECOND:g} events/s over every game is this market's "
        f"({share:.0%}: ~{LIVE_EVENTS_PER_SECOND * share:.0f}/s; not measured live: at "
        f"the snapshot-size split `snipe check` uses, {split:.0%}, it would be "
        f"~{LIVE_EVENTS_PER_SECOND * split:.0f}/s)"
    )
    csgo = GAME_SNAPSHOT_BYTES["csgo"]
    per_second = LIVE_EVENTS_PER_SECOND * share
    frames = per_second * feed.frame_bytes * DAY
    deflated = per_second * feed.deflated_bytes * DAY
    # -- watching --------------------------------------------------------------------------
    hourly = DAY / FULL_AUDIT_EVERY * csgo
    heal_snapshots = 2 * RECONNECTS_PER_DAY * csgo
    # one answer an audit slot (a cheap audit, or the base after a full one), and the
    # base after each of a reconnection's two full polls
    answers = DAY / AUDIT_EVERY + 2 * RECONNECTS_PER_DAY
    live_prices = answers * LIVE_CSGO_PRICE_ROWS * row
    live_prices_gzip = answers * LIVE_CSGO_PRICE_ROWS * row_gzip
    # searches the run made once (its start's sweep of every watched name, its one heal's
    # flagged names): a day has one start and RECONNECTS_PER_DAY heals, not days x them
    sweep = feed.bytes["sweep"] * STARTS_PER_DAY
    flagged = feed.bytes["flagged"] * RECONNECTS_PER_DAY
    gz = feed.search_gzip_by
    sweep_gzip, flagged_gzip = gz["sweep"] * STARTS_PER_DAY, gz["flagged"] * RECONNECTS_PER_DAY
    other = feed.bytes["other"] / days
    watching = deflated + hourly + live_prices + heal_snapshots + flagged + sweep + other
    watching_gzip = (
        deflated + hourly + live_prices_gzip + heal_snapshots + flagged_gzip + sweep_gzip + other
    )
    verdict = "meets" if watching <= TARGET_BYTES else "MISSES"
    print(
        f"WATCHING csgo, live, per day: {_gb(watching)}; target <= {_gb(TARGET_BYTES)}: "
        f"{verdict} ({_gb(watching_gzip)} if the service gzips its JSON)"
    )
    print(
        f"  frames {_gb(deflated)} with permessage-deflate ({per_second:.0f} events/s x "
        f"{feed.deflated_bytes:.1f} B, measured on a socket; plain {_gb(frames)}: "
        f"{feed.frame_bytes:.0f} B); audits {_gb(hourly + live_prices)}: the full one "
        f"{_gb(hourly)} ({DAY / FULL_AUDIT_EVERY:.0f} x {csgo / 1e6:.0f} MB), the cheap one "
        f"{_gb(live_prices)} ({answers:.0f} x {LIVE_CSGO_PRICE_ROWS:,} rows assumed x "
        f"{row:.0f} B; {_gb(live_prices_gzip)} gzip'd); heals {_gb(heal_snapshots + flagged)}"
        f" ({RECONNECTS_PER_DAY:g} reconnections assumed, each 2 full snapshots and the "
        f"searches of the names they flag, {feed.bytes['flagged'] / 1e6:.2f} MB measured "
        f"for this run's heal); the start's search of every watched name "
        f"{_gb(sweep)} ({feed.bytes['sweep'] / 1e6:.2f} MB, {STARTS_PER_DAY:g} start a day "
        f"assumed); the rest {_gb(other)} (balance and the like, as measured)"
    )
    # -- buying ------------------------------------------------------------------------------
    confirming = feed.bytes["search"]
    bought = max(1, feed.search_purchases)
    per_purchase, per_purchase_gzip = confirming / bought, gz["search"] / bought
    run_volume = feed.search_purchases / days
    again = searched_again(feed.search_log, 3.0)
    print(
        f"PER CONFIRMED PURCHASE: {per_purchase / 1e3:.1f} KB of confirming searches "
        f"({per_purchase_gzip / 1e3:.1f} KB gzip'd): {confirming / 1e6:.1f} MB of "
        f"{feed.confirm['searches']} confirming searches for the "
        f"{feed.search_purchases:,} purchases made on a search's answer in this run "
        f"(the rule `stickered` takes any listing of its 40 names with $20 of stickers "
        f"under $300, churn included; a rule that confirms more than it buys costs more "
        f"a purchase); of the {sum(len(s.names) for s in feed.search_log if s.tag == 'search')}"
        f" names they asked for, {again} had been searched at most 3 s before (the pacing "
        f"of 20 searches a minute; each for a listing told after that search was sent)"
    )
    for label, volume in (
        (f"at this run's volume ({run_volume:,.0f} purchases a day)", run_volume),
        (
            f"at a realistic volume ({REALISTIC_PURCHASES_PER_DAY:g} confirmed purchases a "
            "day, ASSUMED: a busy sniper's day)",
            REALISTIC_PURCHASES_PER_DAY,
        ),
    ):
        total = watching + volume * per_purchase
        print(
            f"  total {label}: {_gb(total)}/day (watching {_gb(watching)} + purchases "
            f"{_gb(volume * per_purchase)})"
        )
    before = (
        LIVE_EVENTS_PER_SECOND * feed.deflated_bytes * DAY
        + hourly
        + heal_snapshots
        + live_prices
        + sum(feed.bytes[k] for k in ("search", "sweep", "flagged")) / days
        + other
    )
    print(
        f"  as counted before this version (every game's {LIVE_EVENTS_PER_SECOND:g} "
        f"events/s, the run's every search scaled to a day, watching and buying in one "
        f"sum): {_gb(before)}/day; ratio to the snapshot way every 10 s "
        f"({_gb(SNAPSHOT_WAY_LIVE)}) for watching: {SNAPSHOT_WAY_LIVE / watching:.0f}x less"
    )
    print(
        f"  feed frames measured on a socket ({feed.sampled_frames:,} of this run's frames, "
        f"snipe's client against hypercorn): {feed.deflated_bytes:.1f} B a frame with "
        f"permessage-deflate, {feed.frame_bytes:.1f} B plain: "
        f"{feed.frame_bytes / feed.deflated_bytes:.1f}x less; CPU of both ends (server, "
        f"client's decoding) {feed.frame_cpu[1] * 1e6:.0f} us a frame against "
        f"{feed.frame_cpu[0] * 1e6:.0f} us plain"
    )


def searched_again(log: list[SearchSent], within: float) -> int:
    """Names of confirming searches that a search had asked for at most ``within``
    seconds before."""
    last: dict[str, float] = {}
    again = 0
    for sent in log:
        for name in sent.names:
            if sent.tag == "search" and sent.at - last.get(name, -math.inf) <= within:
                again += 1
            last[name] = sent.at
    return again
