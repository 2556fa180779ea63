"""Detection latency: from a qualifying listing's appearance to our purchase request,
with the live listing feed and with the snapshot alone, on the same market.

Issue 17 ("How it is shown"): both ways in one run on the same seeded market (1,000
watched names, feed traffic at the live rate: ~430 events/s with bursts of 2,800/s).
Target with the feed, for listings whose rule needs no confirming search: median <=
0.25 s, p95 <= 1 s; those whose rule needs one are reported apart; the ratio to the
snapshot way is printed. The same run measures the bytes on the wire of each way and
extrapolates them to a day of the live market (target with the feed, audited every 5
minutes: <= 5 GB/day for csgo).

The market: the in-process sandbox on a :class:`~engine.VirtualClock` (market time), its
default arrival process (~3,000 listings; deals ~6% of arrivals, taken by other buyers
within ~10 minutes on average) plus *churn* (``MarketConfig.churn_per_second``): 430
changes a second of short-lived ordinary listings (``new``, ``update``, ``removed`` in
turn), with a burst of 2,800/s for 3 s every 2 minutes, so the feed carries the live
volume. The real search limit (20 requests per 60 s, 50 names each) applies; the same
seed gives both ways exactly the same arrivals. On top of them, so that both groups below
have a sample worth a median and a p95 in minutes of market, a qualifying listing is
planted every 1.5 s on average while arrivals are counted, of each rule in turn (:class:`Planter`:
deals of watched names; stickered listings at about their reference price with $20+ of
stickers), arriving as the market's own do, never bought by anyone else.

- **snapshot** (issue 5's way): the snapshot every 10 s flags names with a new or cheaper
  listing, flagged names are searched first; driven as the engine's loops do, one step at
  a time on virtual time (``engine.poll_snapshot()`` every 10 s, ``engine.search_once()``
  when ``engine.next_search_at()`` says). Its latency is market time alone: seconds,
  against which the engine's CPU time is noise.
- **feed**: the engine as ``snipe run`` sets it up with the feed on (``account.feed: on``,
  healed at the start, audited every 300 s in two tiers: ``GET /v1/prices`` against what
  the feed told, and the full snapshot every 3600 s and after a heal; no background
  search while the feed is trusted). Every change of a csgo listing (the
  client subscribes to csgo) is written as the sandbox's feed writes it
  (``change_frame``) and *delivered* after a wire delay drawn uniformly from
  ``--wire-delay`` (default 50-300 ms: the service's push and the network, an assumption
  stated here, not a measurement; in-process there is no wire). The engine then handles
  the events one at a time, in delivery order, as a live engine does: each frame goes
  through the feed client's own decoding (``FeedClient._event``) and
  :meth:`Engine.on_feed_event`; the snapshot and search steps run when due (the engine's
  ``next_due``). **Queueing is real**: each handling is timed in CPU seconds of this
  process (minus the in-process sandbox's own share, measured at its transport) and the
  engine is busy for that long in market time, so an event delivered while it is busy
  waits. A purchase request's time is the market time its handling began plus the CPU
  spent until the request reached the transport.

A listing qualifies when a rule accepts it as the search shows it at its arrival (the
engine's own rules). The two groups are reported apart, each with the ratio of the
snapshot way to the feed: rule ``deals`` (discount 20%, 1,000 names) needs no
confirming search; rule ``stickered`` (stickers worth $20+, 40 names: the most listed,
so the feed tells one of their listings under $300 many times a second) reads sticker
values, which the feed lacks, so its feed listings wait for a confirming search in the
priority lane (``engine/sniper/_confirm.py``), whose counts are printed: searches, the
feed listings that waited, those the answer showed, those skipped (gone, beyond the 50
cheapest of their name, removed first). Latency is from the listing's ``listed_at`` to
our first purchase request for it; a qualifying listing never asked for (taken by
another buyer first, or unseen at the end) is missed.

Bytes: see ``bench/detection_bytes.py`` (what is counted, measured and assumed).

The snapshot is built at each 10 s boundary and downloadable 1 s later, as the service
publishes it, in both ways.

    .venv/bin/python bench/bench_detection.py [--hours 0.05] [--seed 7] [--wire-delay 0.05 0.3]
        [--naive]  (also issue 5's baseline: a poller searching the names round-robin)

Last measured (2026-11-25 04:42 UTC, branch s7-feed17; ``--hours 0.05`` (the default):
0.05 h of arrivals + 180 s, ~120 planted listings, seed 7, wire delay 50-300 ms; 2-core
machine, shared, load ~8):

- no confirming search (rule ``deals``): feed median 0.170 s, p95 0.289 s (58 of 58
  requested): target (<= 0.25 s / <= 1 s) met; the snapshot way median 20.2 s, p95
  57.3 s: 119x / 199x. Confirmed by a search (rule ``stickered``): median 2.17 s, p95
  22.55 s: the start's search of every watched name (0dee3c8) filled the search window,
  and confirmations waited for slots to leave it. Now (main, 04:50 UTC) a background
  search leaves half the window to them while the feed is connected
  (``SearchPacer.feed_keeps_free``): stickered median 1.61 s, p95 3.65 s (55 of 56).
- the engine under the feed: 150,623 events handled (418/s, bursts of 2,800/s), busy
  4.8% of the time; an event waited p50 0 ms, p99 29 ms, max 313 ms; 0 missed.
- frames: the sandbox sends a connection its subscribed games' events only: csgo made
  96.7% of the run's 155,874 changes, and the client was sent those 150,623. Live,
  csgo's share of ~430 events/s is ASSUMED the same (~416/s; 69% by snapshot size).
- bytes per day, live csgo: **watching 4.92 GB** (target <= 5 GB: met; 3.38 GB if the
  service gzips its JSON): frames 1.67 GB deflated (46.5 B a frame on a socket; plain
  9.44 GB), full audits 1.08 GB (24 x 45 MB), cheap audits 1.75 GB (296 answers x
  30,000 rows assumed x 197 B), heals 0.36 GB (4 reconnections assumed), the start's
  search of every watched name 1.3 MB (once a day assumed), the rest 0.06 GB. **Per
  confirmed purchase 14.2 KB** of confirming searches (1.2 KB gzip'd): 9.7 MB of 97
  searches for 685 purchases made on their answers; totals 7.25 GB/day at the run's
  volume (164,400 purchases a day: the rule takes any stickered listing of 40 names)
  and 4.92 GB/day at 100 confirmed purchases a day (assumed realistic: +1.4 MB). Counted
  as before (every game's frames, the run's every search scaled to a day, its start's
  sweep of 1,000 names included): 7.70 GB/day. Of the 819 names the confirming searches
  asked for, 54 had been searched at most 3 s before (the pace of 20 a minute), each
  for a listing told after that search was sent: no repeat without a new candidate.
- the audits: no waste found to cut without weakening them (``GET /v1/prices`` has no
  name filter; the base after a full snapshot could come from that snapshot, ~0.2
  GB/day less, only if its counts are the snapshot's: hold listings may differ).
"""

from __future__ import annotations

import argparse
import contextlib
import heapq
import itertools
import math
import random
import sys
import time
from collections import Counter
from dataclasses import dataclass, field

import anyio
import httpx
from detection_bytes import (
    AUDIT_EVERY,
    DAY,
    FULL_AUDIT_EVERY,
    SAMPLE_FRAMES,
    Meter,
    SearchSent,
    measure_frames,
    report_bytes,
    tag_searches,
)

from engine import VirtualClock
from engine._errors import APIError
from engine._limiter import DEFAULT_LIMITS, RateLimiter
from engine._plugins import make_plugin_host
from engine.client import FeedClient, FeedConnected, MarketClient, TradeLink, _eio
from engine.hookspecs import hookimpl
from engine.ledger import MEMORY, Ledger
from engine.models import Listing
from engine.rules import Decision, EvalContext, RuleSet, evaluate, load_rules_text
from engine.sandbox import Listing as SandboxListing
from engine.sandbox import MarketConfig, Sandbox, SandboxConfig
from engine.sandbox._catalogue import sticker_kinds
from engine.sandbox._feed import change_frame
from engine.sandbox._market import PlacedSticker
from engine.sandbox._routes_market import search_entry
from engine.sandbox._snapshot import Snapshot
from engine.sniper import Engine, EngineMode, EngineSettings, FeedSettings

TRADE_LINK = "https://steamcommunity.com/tradeoffer/new/?partner=123456789&token=AbCdEfGh"
WATCHED = 1_000
STICKERED = 40
SNAPSHOT_EVERY = 10.0
TAIL = 180.0  # the run goes on this long after the last counted arrival
CHURN = {"churn_per_second": 430.0, "burst_every": 120.0, "burst_seconds": 3.0}
PLANT_EVERY = 1.5
"""Mean seconds between two planted listings (see :class:`Planter`), of each rule in
turn; the gaps are drawn (exponential), so plantings never fall in step with the searches
(every 3 s when the priority lane is busy), which would show them at once."""
TARGET_MEDIAN, TARGET_P95 = 0.25, 1.0


def watch_list(sandbox: Sandbox) -> list[str]:
    """1,000 csgo names: every csgo name of the catalogue, then quiet StatTrak variants."""
    items = sorted(i.name for i in sandbox.market.items if i.game == "csgo")
    known = set(items)
    quiet = (f"StatTrak™ {n}" for n in items if not n.startswith("★"))
    quiet_names = [n for n in quiet if n not in known]
    return (items + quiet_names)[:WATCHED]


def stickered_names(sandbox: Sandbox) -> list[str]:
    """The 40 most listed csgo names that take stickers."""
    items = [i for i in sandbox.market.items if i.game == "csgo" and i.takes_stickers]
    items.sort(key=lambda i: (-i.popularity, i.name))
    return sorted(i.name for i in items[:STICKERED])


def _quoted(names: list[str]) -> str:
    return ", ".join('"' + n.replace('"', '\\"') + '"' for n in names)


def rules_for(names: list[str], stickered: list[str]) -> str:
    return f"""
version: 1
account:
  base_url: "http://sandbox"
  trade_link: "{TRADE_LINK}"
budgets: {{per_day: "10000000.00", total: "10000000.00"}}
rules:
  - name: deals
    match: {{names: [{_quoted(names)}], game: csgo}}
    discount: 20
    max_price: "20000.00"
  - name: stickered
    match: {{names: [{_quoted(stickered)}], game: csgo}}
    stickers: {{min_value: "20.00"}}
    max_price: "300.00"
"""


class RequestLog:
    """A plugin that notes each purchase the buyer is about to send, and lets it through."""

    def __init__(self, meter: Meter) -> None:
        self.meter = meter

    @hookimpl
    def snipe_veto_purchase(self, decision: Decision, context: EvalContext) -> bool | None:
        self.meter.pending.append(decision.item_id)
        return None


@dataclass
class Arrivals:
    """Every listing that arrives on the market, as it arrives: the qualifying ones, by
    the rule that accepts them."""

    ruleset: RuleSet
    qualifying: dict[str, SandboxListing] = field(default_factory=dict)
    rule: dict[str, str] = field(default_factory=dict)
    count: int = 0

    def observe(self, listing: SandboxListing) -> None:
        self.count += 1
        if listing.locked(listing.listed_at) or listing.item_id >= 80_000_000_000:
            return  # not in a search without include_hold; churn is never a deal
        entry = search_entry(listing, listing.listed_at, v2=True, minified=True, delivery=False)
        seen = Listing.model_validate(entry)
        context = EvalContext(now=listing.listed_at, game=listing.game)
        accepted = [d for d in evaluate(self.ruleset, [seen], context) if d.accepted]
        if accepted:
            self.qualifying[seen.item_id] = listing
            self.rule[seen.item_id] = accepted[0].rule


@dataclass
class RunResult:
    label: str
    latencies: dict[str, list[float]]  # per rule
    qualifying: Counter[str]
    missed_taken: int
    missed_unseen: int
    searches: int
    snapshots: int
    rate_limited: int
    hours: float
    bytes: Counter[str]
    cpu: float
    events: int = 0
    frame_bytes: float = 0.0
    deflated_bytes: float = 0.0
    sampled_frames: int = 0
    frame_cpu: tuple[float, float] = (0.0, 0.0)  # s a frame, both ends: plain, deflated
    engine_share: list[float] = field(default_factory=list)
    waits: list[float] = field(default_factory=list)
    busy: float = 0.0
    by_search: int = 0
    audit_missed: int = 0
    confirm: Counter[str] = field(default_factory=Counter)
    """The feed's confirming searches and what became of the listings that waited."""
    price_calls: int = 0
    price_bytes: int = 0
    price_rows: int = 0
    price_gzip: int = 0  # the same answers' bodies gzip'd here (level 6), for a gzip'ing service
    search_gzip: int = 0  # the search answers likewise (request line and headers included)
    price_encodings: Counter[str] = field(default_factory=Counter)
    audits_cheap: int = 0
    audits_full: int = 0
    suspects: int = 0
    search_log: list[SearchSent] = field(default_factory=list)
    search_purchases: int = 0
    """Purchase requests sent on a search's answer (in the feed way: confirmed ones)."""
    search_gzip_by: Counter[str] = field(default_factory=Counter)
    games: Counter[str] = field(default_factory=Counter)
    """The market's changes of the run by game (the client is sent csgo's)."""

    def figures(self, rule: str) -> tuple[float, float]:
        lat = sorted(self.latencies.get(rule, []))
        return _percentile(lat, 50), _percentile(lat, 95)

    def per_day(self) -> float:
        return sum(self.bytes.values()) / ((self.hours * 3600 + TAIL) / DAY)


def _percentile(values: list[float], pct: float) -> float:
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(0, math.ceil(pct / 100 * len(ordered)) - 1)  # nearest-rank
    return ordered[rank]


@dataclass
class Setup:
    clock: VirtualClock
    sandbox: Sandbox
    arrivals: Arrivals
    meter: Meter
    engine: Engine
    client: MarketClient
    ledger: Ledger
    until: float
    cpu0: float
    planter: Planter


async def _setup(seed: int, hours: float, settings: EngineSettings) -> Setup:
    cpu0 = time.process_time()
    clock = VirtualClock()
    config = SandboxConfig(seed=seed, balance=10**12, market=MarketConfig(**CHURN))
    sandbox = Sandbox(config, clock=clock)
    meter = Meter(httpx.ASGITransport(app=sandbox.app), clock)
    host = make_plugin_host(load_entry_points=False, plugins=[("request-log", RequestLog(meter))])
    text = rules_for(watch_list(sandbox), stickered_names(sandbox))
    ruleset = load_rules_text(text, "<bench rules>", host=host)
    arrivals = Arrivals(ruleset)
    market = sandbox.market
    fill_orders = market.on_arrival
    counted_until = clock.now() + hours * 3600.0

    def on_arrival(listing: SandboxListing) -> bool:
        if listing.listed_at < counted_until:
            arrivals.observe(listing)
        return fill_orders(listing)

    market.on_arrival = on_arrival
    limiter = RateLimiter(clock, DEFAULT_LIMITS)  # 20 searches per 60 s, as the service
    ledger = await Ledger.open(MEMORY, clock=clock)
    client = MarketClient(
        sandbox.api_key, base_url="http://sandbox", transport=meter, limiter=limiter, clock=clock
    )
    engine = Engine(
        ruleset=ruleset,
        client=client,
        ledger=ledger,
        clock=clock,
        limiter=limiter,
        host=host,
        trade_link=TradeLink.parse(TRADE_LINK),
        trade_link_url=TRADE_LINK,
        settings=settings,
    )
    planter = Planter(sandbox, seed, counted_until)
    return Setup(
        clock, sandbox, arrivals, meter, engine, client, ledger, counted_until, cpu0, planter
    )


class Planter:
    """Qualifying listings on top of the market's own, so that both groups have a sample
    worth a median and a p95 in minutes of market (the default market's arrivals give
    a few of each in 0.2 h): every :data:`PLANT_EVERY` seconds on average until the counted
    arrivals end, in turn, a deal of a watched name (55-75% of its reference price,
    which the rule ``deals`` buys on the feed's word) and a listing of a stickered name
    at about its reference price, under $300, with one or two stickers of $20 or more
    (which the rule ``stickered`` buys after a confirming search). They arrive as the
    market's own do (``add_listing(arrive=True)``: the feed tells them, the snapshot
    shows them) and nobody else buys them. Drawn from a source of their own, at the same
    market times in both ways."""

    def __init__(self, sandbox: Sandbox, seed: int, until: float) -> None:
        self.sandbox = sandbox
        self.rng = random.Random(f"plant:{seed}")
        by_name = {i.name: i for i in sandbox.market.items}
        self.deal_items = [
            by_name[n] for n in watch_list(sandbox) if n in by_name and not by_name[n].phases
        ]
        self.sticker_items = [
            by_name[n]
            for n in stickered_names(sandbox)
            if by_name[n].reference < 280_000 and not by_name[n].phases
        ]
        self.kinds = [k for k in sticker_kinds() if k.price >= 20_000]
        self.ids = itertools.count(70_000_000_000)  # apart from the market's and the churn's
        self.until = until
        self.next_at = sandbox.advance() + self.rng.expovariate(1 / PLANT_EVERY)
        self.turn = 0

    def due(self) -> float:
        return self.next_at if self.next_at < self.until else math.inf

    def run(self, clock: VirtualClock) -> None:
        """Plant the next listing (:meth:`due`), moving ``clock`` there."""
        clock.jump_to(self.next_at)
        now = self.sandbox.advance()
        rng = self.rng
        stickers: tuple[PlacedSticker, ...] = ()
        if self.turn % 2 == 0:
            item = rng.choice(self.deal_items)
            price = round(item.reference * rng.uniform(0.55, 0.75))
        else:
            item = rng.choice(self.sticker_items)
            price = round(item.reference * rng.uniform(0.95, 1.05))
            kinds = rng.sample(self.kinds, rng.choice((1, 2)))
            stickers = tuple(
                PlacedSticker(k.name, k.image, None, slot, k.price) for slot, k in enumerate(kinds)
            )
        low_high = item.float_range
        listing = SandboxListing(
            item_id=next(self.ids),
            item=item,
            price=max(10, price),
            listed_at=now,
            phase=None,
            float_value=None if low_high is None else (low_high[0] + low_high[1]) / 2,
            stickers=stickers,
            unlock_at=None,
            send_until=None,
            paintseed=1,
            initial_price=max(10, price),
        )
        self.sandbox.market.add_listing(listing, arrive=True)
        self.turn += 1
        self.next_at += rng.expovariate(1 / PLANT_EVERY)


def _result(label: str, s: Setup, hours: float) -> RunResult:
    truth = s.sandbox.ground_truth()
    latencies: dict[str, list[float]] = {}
    taken = unseen = 0
    for item_id, listing in s.arrivals.qualifying.items():
        asked = s.meter.requested.get(item_id)
        if asked is not None:
            latencies.setdefault(s.arrivals.rule[item_id], []).append(asked - listing.listed_at)
        elif listing.item_id in s.sandbox.market.listings:
            unseen += 1
        else:
            taken += 1
    return RunResult(
        label=label,
        latencies=latencies,
        qualifying=Counter(s.arrivals.rule.values()),
        missed_taken=taken,
        missed_unseen=unseen,
        searches=s.engine.status.searches,
        snapshots=s.engine.status.snapshots,
        rate_limited=sum(n for k, n in truth["requests"].items() if k.endswith(" 429")),
        hours=hours,
        bytes=Counter(s.meter.bytes),
        cpu=time.process_time() - s.cpu0,
    )


PUBLISHED_AFTER = 1.0  # seconds from a snapshot's build to its download (live: seconds)


class Publisher:
    """The snapshot as the service makes it: built at each 10 s boundary from the market
    then, downloadable :data:`PUBLISHED_AFTER` later, the previous one served meanwhile.
    (The sandbox alone builds it at the first request of each 10 s, of the market at that
    instant: a listing made a moment before would be in it while its feed event is still
    on the wire, and the audit would call it missed.)"""

    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox
        now = sandbox.advance()
        self.current = self._build(now)
        sandbox.pin_snapshot(self.current)
        self.coming: Snapshot | None = None
        self.boundary = (math.floor(now / SNAPSHOT_EVERY) + 1) * SNAPSHOT_EVERY
        self.publish_at = math.inf

    def _build(self, now: float) -> Snapshot:
        return Snapshot.from_listings(self.sandbox.market.listings.values(), timestamp=now)

    def due(self) -> float:
        return min(self.boundary, self.publish_at)

    def run(self, clock: VirtualClock) -> None:
        """Do what is due (:meth:`due`), moving ``clock`` there."""
        at = self.due()
        clock.jump_to(at)
        now = self.sandbox.advance()
        if at == self.boundary:
            self.coming = self._build(now)
            self.sandbox.pin_snapshot(self.current)  # still the one served, for a moment
            self.publish_at = at + PUBLISHED_AFTER
            self.boundary += SNAPSHOT_EVERY
        elif self.coming is not None:
            self.current, self.coming = self.coming, None
            self.sandbox.pin_snapshot(self.current)
            self.publish_at = math.inf


# -- the snapshot way ----------------------------------------------------------------------


async def _drive(
    engine: Engine,
    sandbox: Sandbox,
    clock: VirtualClock,
    meter: Meter,
    planter: Planter,
    *,
    until: float,
    snapshots: bool = True,
) -> None:
    """The engine's loops, one step at a time, on explicitly moved virtual time (without
    ``snapshots``: issue 5's naive poller, searching as fast as the limit allows, the
    names stalest first: round-robin)."""
    next_snapshot = clock.now()
    publisher = Publisher(sandbox)
    while clock.now() < until:
        now = clock.now()
        if now >= publisher.due():
            publisher.run(clock)
            continue
        if now >= planter.due():
            planter.run(clock)
            continue
        meter.began = (now, time.process_time(), meter.server_cpu)
        if snapshots and now >= next_snapshot:
            with contextlib.suppress(APIError):  # the engine says when to try again
                await engine.poll_snapshot()
            next_snapshot = engine.next_snapshot_at or now + SNAPSHOT_EVERY
            continue
        due = engine.next_search_at() if snapshots else engine.limiter.next_free("search")
        if due <= now:
            await engine.search_once()
            continue
        later = min(until, publisher.due(), planter.due())
        clock.jump_to(min(due, next_snapshot if snapshots else math.inf, later))


async def run_snapshot(seed: int, hours: float, *, naive: bool = False) -> RunResult:
    settings = EngineSettings(
        use_snapshot=not naive, snapshot_every=SNAPSHOT_EVERY, feed=FeedSettings(mode="off")
    )
    s = await _setup(seed, hours, settings)
    try:
        await s.engine.start_gate()
        s.engine.status.mode = EngineMode.RUNNING  # as Engine.run does after the gate
        until = s.until + TAIL
        await _drive(
            s.engine, s.sandbox, s.clock, s.meter, s.planter, until=until, snapshots=not naive
        )
    finally:
        await s.client.aclose()
        await s.ledger.close()
    return _result("naive" if naive else "snapshot", s, hours)


# -- the feed way --------------------------------------------------------------------------


@dataclass
class Wire:
    """The feed's frames on their way: written at the change, delivered after a delay."""

    low: float
    high: float
    rng: random.Random
    queue: list[tuple[float, int, str]] = field(default_factory=list)
    seq: itertools.count[int] = field(default_factory=itertools.count)
    frames: int = 0
    sample: list[str] = field(default_factory=list)
    """The first :data:`SAMPLE_FRAMES` frames as written, in order (what a connection's
    deflate context sees), for :func:`measure_frames`."""

    def send(self, at: float, frame: str) -> float:
        """Put ``frame``, written at ``at``, on the wire; when it arrives."""
        self.frames += 1
        if len(self.sample) < SAMPLE_FRAMES:
            self.sample.append(frame)
        arrives = at + self.rng.uniform(self.low, self.high)
        heapq.heappush(self.queue, (arrives, next(self.seq), frame))
        return arrives

    def next_at(self) -> float:
        return self.queue[0][0] if self.queue else math.inf


async def run_feed(seed: int, hours: float, delay: tuple[float, float]) -> RunResult:
    feed_settings = FeedSettings(
        mode="on", audit_every=AUDIT_EVERY, full_audit_every=FULL_AUDIT_EVERY
    )
    settings = EngineSettings(use_snapshot=True, snapshot_every=SNAPSHOT_EVERY, feed=feed_settings)
    s = await _setup(seed, hours, settings)
    engine, clock, meter, market = s.engine, s.clock, s.meter, s.sandbox.market
    feed = FeedClient("http://sandbox", games=["csgo"], clock=clock)
    engine.feedwatch.client = feed  # the connection itself is played here, below
    searched = tag_searches(engine, meter, clock)
    wire = Wire(delay[0], delay[1], random.Random(f"wire:{seed}"))
    waits: list[float] = []
    arrive: dict[str, float] = {}  # a qualifying listing's new event: when it arrives
    games: Counter[str] = Counter()
    busy = 0.0
    try:
        await engine.start()
        await engine.on_feed_event(FeedConnected(1, clock.now(), "bench", ("csgo",), 25.0, 20.0))
        cursor = market.changes.cursor
        free_at = clock.now()
        end = s.until + TAIL
        publisher = Publisher(s.sandbox)
        while True:
            upcoming = market.next_event_time()
            at_market = min(
                math.inf if upcoming is None else upcoming, publisher.due(), s.planter.due()
            )
            delivered = wire.next_at()
            at_feed = max(delivered, free_at)
            at_step = max(min(engine.next_due("snapshot"), engine.next_due("search")), free_at)
            if min(at_market, at_feed, at_step) > end:
                break
            if at_market <= at_feed and at_market <= at_step:
                if at_market == publisher.due():
                    publisher.run(clock)
                elif at_market == s.planter.due():
                    s.planter.run(clock)
                else:
                    clock.jump_to(at_market)
                    s.sandbox.advance()
            else:
                at = min(at_feed, at_step)
                clock.jump_to(at)
                cpu, server = time.process_time(), meter.server_cpu
                meter.began = (at, cpu, server)
                if at_feed <= at_step:
                    _, _, frame = heapq.heappop(wire.queue)
                    waits.append(at - delivered)
                    meter.source = "feed"
                    parts = _eio.event_parts(frame)  # the client's decoding, its hot path
                    event = feed._event(*parts, at, 1) if parts is not None else None
                    if event is not None:
                        await engine.on_feed_event(event)
                else:
                    meter.source = "search"
                    for kind in ("snapshot", "search"):
                        if engine.next_due(kind) <= at:
                            await engine.step(kind)
                work = max(0.0, time.process_time() - cpu - (meter.server_cpu - server))
                busy += work
                free_at = clock.now() + work
            # what the market did meanwhile (requests advance it too) goes on the wire
            changes, cursor, _ = market.changes.read(cursor)
            for change in changes:
                games[change.listing.game] += 1
                if change.listing.game == "csgo":
                    arrives = wire.send(change.at, change_frame(change))
                    item_id = str(change.listing.item_id)
                    if change.kind == "new" and item_id in s.arrivals.rule:
                        arrive.setdefault(item_id, arrives)
    finally:
        await s.client.aclose()
        await s.ledger.close()
    result = _result("feed", s, hours)
    result.events = feed.health().events_received
    measured = await measure_frames(wire.sample)
    plain, deflated = measured["off"], measured["auto"]
    result.frame_bytes, result.deflated_bytes = plain[0], deflated[0]
    result.frame_cpu = (plain[1], deflated[1])
    result.sampled_frames = len(wire.sample)
    result.bytes["feed"] = round(wire.frames * result.deflated_bytes)  # snipe's default: auto
    result.waits = waits
    result.busy = busy
    result.by_search = sum(
        1 for item_id in s.arrivals.rule if meter.sources.get(item_id) == "search"
    )
    watch = engine.feedwatch
    result.audit_missed = watch.missed
    result.audits_cheap, result.audits_full = watch.audits_cheap, watch.audits_full
    result.suspects = watch.suspects
    result.price_calls = meter.calls["prices"]
    result.price_bytes = meter.bytes["prices"]
    result.price_rows = meter.price_rows
    result.price_gzip = meter.price_gzip
    result.search_gzip = meter.search_gzip
    result.search_gzip_by = meter.search_gzip_by
    result.search_log = searched
    result.search_purchases = sum(1 for source in meter.sources.values() if source == "search")
    result.games = games
    result.price_encodings = meter.price_encodings
    queue = engine.feedwatch.confirm
    result.confirm.update(queue.skipped)
    known = engine.feedwatch.known
    result.confirm.update(
        searches=engine.feedwatch.confirm_searches,
        told=queue.told,
        found=queue.found,
        reused=known.reused,
        stale=known.stale,
        changed=known.changed,
    )
    for item_id, arrived in arrive.items():
        asked = meter.requested.get(item_id)
        if asked is not None and meter.sources.get(item_id) == "feed":
            result.engine_share.append(asked - arrived)  # waiting for the engine + its work
    return result


# -- the report ----------------------------------------------------------------------------


def report(snap: RunResult, feed: RunResult, delay: tuple[float, float]) -> None:
    print(
        f"market time: {feed.hours:g} h of arrivals (+{TAIL:.0f} s tail), {WATCHED} watched "
        f"names; churn {CHURN['churn_per_second']:g}/s with bursts of 2800/s "
        f"({CHURN['burst_seconds']:g} s every {CHURN['burst_every']:g} s); feed wire delay "
        f"{delay[0]:g}-{delay[1]:g} s (assumed)"
    )
    print(
        f"{'way':9} {'rule':10} {'qualifying':>10} {'requested':>9} {'median s':>9} "
        f"{'p95 s':>7} {'missed':>6} {'searches':>8} {'snaps':>5} {'429s':>4} {'cpu s':>6}"
    )
    for r in (snap, feed):
        for rule in ("deals", "stickered"):
            median, p95 = r.figures(rule)
            print(
                f"{r.label:9} {rule:10} {r.qualifying[rule]:>10} "
                f"{len(r.latencies.get(rule, [])):>9} {median:>9.3f} {p95:>7.3f} "
                f"{r.missed_taken + r.missed_unseen if rule == 'deals' else '':>6} "
                f"{r.searches if rule == 'deals' else '':>8} "
                f"{r.snapshots if rule == 'deals' else '':>5} "
                f"{r.rate_limited if rule == 'deals' else '':>4} "
                f"{f'{r.cpu:.0f}' if rule == 'deals' else '':>6}"
            )
    for rule, group in GROUPS:
        _report_group(rule, group, snap, feed)
    c = feed.confirm
    print(
        f"  the feed's confirming searches: {c['searches']} (of {feed.searches} searches); "
        f"feed listings that waited for one: {c['told']:,}, shown and decided {c['found']:,}, "
        f"skipped: {c['gone']:,} gone (sold or withdrawn), {c['beyond_cheapest']:,} beyond "
        f"the 50 cheapest of their name, {c['removed']:,} removed before it; events decided "
        f"on what an earlier search showed (no search): {c['reused']:,} ({c['stale']:,} "
        f"searched again: older than sticker_prices_for; {c['changed']:,}: sticker names "
        "changed)"
    )
    duration = feed.hours * 3600 + TAIL
    waits = feed.waits
    print(
        f"feed queue: {feed.events:,} events handled ({feed.events / duration:.0f}/s), engine "
        f"busy {100 * feed.busy / duration:.1f}% of the time; wait for the engine p50 "
        f"{_percentile(waits, 50) * 1000:.2f} ms, p99 {_percentile(waits, 99) * 1000:.1f} "
        f"ms, max {max(waits, default=0) * 1000:.0f} ms; bought by the feed "
        f"{sum(len(v) for v in feed.latencies.values()) - feed.by_search}, after a search "
        f"{feed.by_search}; audit: {feed.audit_missed} listings the feed missed"
    )
    report_bytes(snap, feed, (feed.hours * 3600 + TAIL) / DAY)


GROUPS = (("deals", "no confirming search"), ("stickered", "confirmed by a search"))
"""The two groups of qualifying listings, by the rule that accepts them."""


def _report_group(rule: str, group: str, snap: RunResult, feed: RunResult) -> None:
    """One group's latency with the feed and with the snapshot alone, and their ratio."""
    median, p95 = feed.figures(rule)
    snap_median, snap_p95 = snap.figures(rule)
    asked = f"{len(feed.latencies.get(rule, []))} of {feed.qualifying[rule]}"
    snap_asked = f"{len(snap.latencies.get(rule, []))} of {snap.qualifying[rule]}"
    line = (
        f"{group} (rule {rule}): feed median {median:.3f} s, p95 {p95:.3f} s ({asked} "
        f"requested); snapshot way median {snap_median:.3f} s, p95 {snap_p95:.3f} s "
        f"({snap_asked}); ratio snapshot/feed: median {snap_median / median:.1f}x, p95 "
        f"{snap_p95 / p95:.1f}x"
    )
    if rule == "deals":
        ok = "meets" if median <= TARGET_MEDIAN and p95 <= TARGET_P95 else "MISSES"
        line += f"; target <= {TARGET_MEDIAN} s / <= {TARGET_P95:g} s: {ok}"
    print(line)


async def amain(args: argparse.Namespace) -> None:
    delay = (args.wire_delay[0], args.wire_delay[1])
    feed = await run_feed(args.seed, args.hours, delay)
    snap = await run_snapshot(args.seed, args.hours)
    report(snap, feed, delay)
    if args.naive:
        naive = await run_snapshot(args.seed, args.hours, naive=True)
        ratio = naive.figures("deals")[0] / snap.figures("deals")[0]
        print(
            f"issue 5's round-robin poller (no snapshot): median {naive.figures('deals')[0]:.1f}"
            f" s, p95 {naive.figures('deals')[1]:.1f} s, {naive.rate_limited} 429s; ratio "
            f"naive/snapshot {ratio:.1f}x (issue 5's target >= 5x)"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--hours", type=float, default=0.05, help="market hours of counted arrivals"
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--wire-delay",
        type=float,
        nargs=2,
        default=(0.05, 0.3),
        metavar=("LOW", "HIGH"),
        help="seconds from a change to its frame's arrival, drawn uniformly (assumed)",
    )
    parser.add_argument(
        "--naive", action="store_true", help="also run issue 5's round-robin poller"
    )
    args = parser.parse_args(argv)
    anyio.run(amain, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
