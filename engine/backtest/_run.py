"""Running the live engine's code on a recording.

:func:`run_backtest` wires the same :class:`~engine.sniper.Engine` (rules, buyer,
reconciler, an in-memory :class:`~engine.ledger.Ledger`, the :class:`MarketClient` with its
rate limiter) to a :class:`ReplayTransport` on a :class:`VirtualClock`, and drives the
engine itself: after :meth:`Engine.start` (as live), it moves the clock to
:meth:`Engine.next_due` and calls :meth:`Engine.step`, which does what is due in a fixed
order (the same schedule and the same code as live; only live runs kinds of step beside
each other). No step runs concurrently with another, so the same inputs give the same
ledger. The report's look-ahead check and budget notes come from what the steps return.

A recording's feed events (format version 2) are handed to :meth:`Engine.on_feed_event`
at their recorded times, interleaved with the steps: the driver moves the clock to the
next feed record when it comes before the next due step. At one instant the feed goes
first: the events recorded at or before it (in recorded order), then the steps due then
(in :data:`~engine.sniper.STEP_KINDS` order), which see what the events did. Events applied
while a step ran (its requests move the clock on) are handed over when it ends, late as
live would be. With ``account.feed: off`` the events are not handed over (the market
still learns the listings they tell). A recording without feed events is driven exactly
as before.
"""

from __future__ import annotations

import gc
import random
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio

from .._clock import VirtualClock
from .._plugins import PluginHost
from ..client import FeedListingEvent
from ..ledger import MEMORY
from ..portfolio import Portfolio, hub_lookup, value_portfolio
from ..rules import Decision, RuleSet
from ..sniper import BuyerSettings, Engine, EngineSettings, SessionOptions, open_engine
from ._format import Record
from ._market import FillModel, ReplayMarket, ReplayTrade
from ._network import NetworkLog
from ._transport import ReplayTransport
from ._versions import ListVersions

__all__ = ["BacktestOptions", "BacktestRun", "run_backtest"]

_TRADE_LINK = "https://steamcommunity.com/tradeoffer/new/?partner=1&token=BackTest"
_BUDGET_WORDS = ("rule max_count", "rule cap", "daily budget", "total budget", "balance")


@dataclass(frozen=True)
class BacktestOptions:
    """What a backtest may vary. Times in seconds, money USD x 1000."""

    seed: int = 0
    latency: float = 0.25
    race_factor: float = 1.5
    """A competing buyer takes a listing first with probability ``min(0.9, discount x
    race_factor)``; 0 turns the competitor off."""
    balance: int | None = None
    """The account's balance; the rules' total budget when unset."""
    value_after: float = 86_400.0
    """The realised value of a purchase is the cheapest listing of its name this long
    after it (or at the end of the recording)."""
    snapshot_every: float = 10.0
    reconcile_every: float = 15.0
    until: float | None = None
    """Stop at this time (epoch seconds) instead of the end of the recording."""
    start: float | None = None
    """Start the engine at this time when it is before the first record (a live run's
    first request was sent before its answer, the first record, arrived)."""
    taken: frozenset[str] = frozenset()
    """Listings lost to another buyer whatever the competitor model draws (a live run's
    lost purchases, for ``--against``)."""


@dataclass
class BacktestRun:
    """Everything a report is made of."""

    ruleset: RuleSet
    options: BacktestOptions
    start: float
    end: float
    purchases: list[dict[str, Any]]
    events: list[dict[str, Any]]
    trades: dict[str, ReplayTrade]
    refusals: dict[str, int]
    missed_budget: dict[str, int]
    unseen_by_name: dict[str, int]
    searches: int
    snapshots: int
    events_replayed: int
    records_replayed: int
    halt_reason: str | None = None
    """Why the engine stopped buying during the replay, if it did."""
    decision_times: list[tuple[float, float]] = field(default_factory=list)
    """``(decision time, time of the latest record applied then)``: the look-ahead check."""
    warnings: dict[str, int] = field(default_factory=dict)
    """Each kind of error the engine met (its first text) and how often: said once, with
    the count, not once per occurrence."""
    references_at_end: dict[str, dict[str, tuple[int | None, int | None]]] = field(
        default_factory=dict
    )
    """Watched name -> {source: (reference, observations)} when the replay ended."""
    references_later: dict[str, dict[str, int]] = field(default_factory=dict)
    """project_id -> {reference source: its value for the purchase's name at the end of
    the replay}: what each reference says the purchase was worth later."""
    listings_seen: int = 0
    """Listings the engine's searches and catalogue pages showed it."""
    skips: dict[str, dict[str, int]] = field(default_factory=dict)
    """Rule -> {a full reason of each kind that turned listings down: how often}, most
    frequent first: why a rule bought nothing."""
    portfolio: Portfolio | None = None
    """What was held at the end, valued by the same code as ``snipe portfolio``."""
    seen_first: dict[str, str] = field(default_factory=dict)
    """item_id of each purchase -> the source that first showed it to the engine: ``feed``,
    ``snapshot`` (a snapshot held it: the way a snapshot-flagged search starts),
    ``catalogue`` or ``search``."""
    feed_events: int = 0
    """Feed records replayed (listings, removals, connection markers)."""
    feed: dict[str, int] | None = None
    """The engine's use of a replayed feed (None: no feed event was handed over):
    ``connections``, ``gaps_healed``, ``missed`` (new listings the audit found the feed
    never told), ``bought`` (bought on an event), ``confirm_searches``."""


async def run_backtest(
    ruleset: RuleSet,
    records: Iterator[Record],
    *,
    host: PluginHost,
    end: float,
    options: BacktestOptions = BacktestOptions(),
    progress: Callable[[float], None] | None = None,
    live: bool = False,
    on_decisions: Callable[[float, list[Decision]], None] | None = None,
    lists: ListVersions | None = None,
    network: NetworkLog | None = None,
) -> BacktestRun:
    """Replay ``records`` (ending at ``end``) through the engine; see the module docstring.

    ``live``: run the engine's live loop (:meth:`Engine.run`, a runner per kind of step)
    on the virtual clock, jumping whenever every task waits, instead of stepping it: the
    parity check that live and backtest decide alike (no look-ahead times, no budget
    notes: those come from the steps' returns).

    ``on_decisions(at, decisions)``: called with each search step's decisions (accepted
    and rejected) and the time the step began, right after it (not with ``live``): the
    look-ahead check compares them across cut recordings.

    ``lists``: the price list versions kept with the recording; each list is read as it
    was at the engine's time (a list without a recorded version is read as it is now,
    and said in the warnings). ``network``: the live run's requests, whose latencies and
    failures the replay's requests meet (:class:`ReplayTransport`)."""
    ceilings: dict[str, int | None] = {}

    def ceiling(name: str) -> int | None:
        if name not in ceilings:
            ceilings[name] = max((r.max_price for r in ruleset.view(name).rules), default=None)
        return ceilings[name]

    market = ReplayMarket(
        records,
        fill=FillModel(seed=options.seed, latency=options.latency, race_factor=options.race_factor),
        keep=lambda name: bool(ruleset.view(name).rules),
        ceiling=ceiling,
        balance=options.balance if options.balance is not None else ruleset.budgets.total,
        value_after=options.value_after,
        taken=options.taken,
    )
    start = market.first_time
    if start is None:
        raise ValueError("the recording is empty")
    if options.start is not None:
        start = min(start, options.start)
    stop = min(end, options.until) if options.until is not None else end
    clock = VirtualClock(start)
    market.advance_to(start)
    entropy = random.Random(options.seed)
    settings = EngineSettings(
        snapshot_every=options.snapshot_every,
        snapshot_by_game=False,  # the recording is the whole market, whatever the game
        reconcile_every=options.reconcile_every,
        buyer=BuyerSettings(project_id_entropy=lambda: entropy.randbytes(10)),
    )
    transport = ReplayTransport(market, clock, network=network, concurrent=live)
    session = SessionOptions(
        base_url="http://replay.invalid",
        ledger=MEMORY,
        transport=transport,
        trade_link=_TRADE_LINK,
        reference_store="none",
    )
    async with open_engine(
        ruleset, api_key="backtest", clock=clock, host=host, settings=settings, options=session
    ) as engine:
        ledger = engine.ledger
        if lists is not None:
            engine.references.list_reader = _versioned_reader(lists, engine)
        use_feed = ruleset.account.feed != "off"
        driver = _Driver(engine, market, clock, progress, on_decisions, use_feed=use_feed)
        if live:
            async with clock.autojump(), anyio.create_task_group() as tg:
                tg.start_soon(driver.feed_live, stop)
                await engine.run(duration=stop - clock.now())
                tg.cancel_scope.cancel()
        else:
            await driver.run(stop)
        market.finish()
        ledger_purchases = await ledger.purchases()
        purchases = [p.to_json() for p in ledger_purchases]
        worth = ruleset.portfolio
        portfolio = value_portfolio(
            ledger_purchases,
            hub_lookup(engine.references, worth.value_by, clock.now()),
            worth,
            now=clock.now(),
        )
        references_later = _references_later(engine, purchases, clock.now())
        feed = _feed_use(engine)
        references_at_end = {
            name: {
                r.source: (r.price, r.observations)
                for r in engine.references.readings(name, None, clock.now())
            }
            for name in sorted(engine.schedule.watched)
        }
        events = [
            {
                "project_id": e.project_id,
                "at": e.at,
                "from": e.from_state.value if e.from_state else None,
                "to": e.to_state.value,
                "details": dict(e.details),
            }
            for e in await ledger.events()
        ]
    return BacktestRun(
        ruleset=ruleset,
        options=options,
        start=start,
        end=stop,
        purchases=purchases,
        events=events,
        trades=market.trades,
        refusals=dict(market.counters.refusals),
        missed_budget=driver.missed_budget_by_rule(),
        unseen_by_name=dict(market.counters.unseen_by_name),
        searches=engine.status.searches,
        snapshots=engine.status.snapshots,
        events_replayed=market.counters.events,
        records_replayed=market.counters.records,
        halt_reason=engine.status.halt_reason,
        decision_times=driver.decision_times,
        warnings=engine.status.repeated_errors(),
        references_later=references_later,
        references_at_end=references_at_end,
        listings_seen=engine.status.listings_seen,
        skips=_skips(engine),
        portfolio=portfolio,
        seen_first=_seen_first(market, purchases),
        feed_events=market.feed_records,
        feed=feed,
    )


def _feed_use(engine: Engine) -> dict[str, int] | None:
    watch = engine.feedwatch
    if not watch.replayed:
        return None
    return {
        "connections": watch.generation,
        "gaps_healed": watch.gaps_healed,
        "missed": watch.missed,
        "bought": watch.bought,
        "confirm_searches": watch.confirm_searches,
    }


def _seen_first(market: ReplayMarket, purchases: list[dict[str, Any]]) -> dict[str, str]:
    out: dict[str, str] = {}
    for purchase in purchases:
        item_id = purchase.get("item_id")
        sighting = market.sightings.get(str(item_id)) if item_id is not None else None
        if sighting is not None:
            out[str(item_id)] = sighting[1]
    return out


def _versioned_reader(lists: ListVersions, engine: Engine) -> Callable[[str, float], bytes | None]:
    def read(source: str, now: float) -> bytes | None:
        data = lists.read_at(source, now)
        if data is None:
            engine.status.error(f"price list {source} has no recorded version: read as it is now")
        return data

    return read


def _skips(engine: Engine) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    status = engine.status
    for (rule, kind), count in status.skip_by_rule.most_common():
        out.setdefault(rule, {})[status.skip_examples[rule, kind]] = count
    return out


def _references_later(
    engine: Engine, purchases: list[dict[str, Any]], now: float
) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for purchase in purchases:
        view = engine.ruleset.view(purchase["name"])
        readings = engine.references.readings(view.base_name, view.phase, now)
        out[purchase["project_id"]] = {r.source: r.price for r in readings if r.price}
    return out


@contextmanager
def _fewer_collections() -> Iterator[None]:
    """The cyclic garbage collector runs less often while the engine is stepped: a
    backtest allocates millions of short-lived decisions and listings that reference
    counting frees, and each collection walked the whole replay market (7% of the time
    of bench_backtest (d)). Cycles are still collected, later; restored afterwards."""
    before = gc.get_threshold()
    gc.set_threshold(50_000, 20, 50)
    try:
        yield
    finally:
        gc.set_threshold(*before)


class _Driver:
    """Moves the virtual clock to the engine's next due time and steps it; keeps what the
    report needs from what each step returns."""

    def __init__(
        self,
        engine: Engine,
        market: ReplayMarket,
        clock: VirtualClock,
        progress: Callable[[float], None] | None,
        on_decisions: Callable[[float, list[Decision]], None] | None = None,
        *,
        use_feed: bool = True,
    ) -> None:
        self.engine = engine
        self.on_decisions = on_decisions
        self.use_feed = use_feed
        self.market = market
        self.clock = clock
        self.progress = progress
        self.decision_times: list[tuple[float, float]] = []
        self._budget_missed: set[tuple[str, str]] = set()
        self._ceilings = {r.name: r.max_price for r in engine.ruleset.rules}

    async def run(self, stop: float) -> None:
        with _fewer_collections():
            await self._run(stop)

    async def _run(self, stop: float) -> None:
        # Hot (once per watched feed event): bound methods in locals, the hand-over only
        # when there are events, and the events the reader skipped taken only before a
        # step (settle), which is when the replay's progress is read.
        engine, clock, market = self.engine, self.clock, self.market
        await engine.start()
        next_due, now, jump_to = engine.next_due, clock.now, clock.jump_to
        next_feed_at, advance_to = market.next_feed_at, market.advance_to
        events = market.feed_events
        unsettled: float | None = None  # the time of a feed advance that did not settle
        hand_over, feedwatch = self.use_feed, engine.feedwatch
        on_feed_event, sightings = engine.on_feed_event, market.sightings
        while True:
            if events:  # _hand_over_feed inline (a coroutine fewer per feed record)
                if not hand_over:
                    events.clear()
                elif not feedwatch.replayed:
                    feedwatch.replayed = True
                while events:
                    event = events.popleft()
                    if isinstance(event, FeedListingEvent):
                        item_id = event.listing.item_id
                        if item_id not in sightings:
                            sightings[item_id] = (now(), "feed")
                    await on_feed_event(event)
            then, at = next_due(), now()
            if at > then:  # (max and min, without their calls)
                then = at
            feed_at = next_feed_at(stop if stop < then else then)
            if feed_at is not None:  # ties: the feed first
                jump_to(feed_at)  # (never backwards: a late event is handed over now)
                unsettled = feed_at if feed_at > at else at  # now(), without its call
                advance_to(unsettled, settle=False)
                continue
            if then > stop:
                if unsettled is not None:  # (nothing new applied: the skipped taken)
                    advance_to(unsettled)
                break
            unsettled = None
            jump_to(then)
            advance_to(now())
            if self.progress is not None:
                self.progress(clock.now())
            budget_skips = self._budget_skips()
            done = await engine.step()
            if not done:  # a due time that steps nothing would never end the replay
                raise RuntimeError(f"the engine was due at {then} but stepped nothing")
            for step in done:
                if step.decisions is None:
                    continue
                self.decision_times.append((step.at, self.market.applied_until))
                if self.on_decisions is not None:
                    self.on_decisions(step.at, list(step.decisions))
                if self._budget_skips() != budget_skips:
                    self._note(step.decisions)  # costly (reasons computed on demand)
        if self.progress is not None:
            self.progress(stop)

    async def feed_live(self, stop: float) -> None:
        """The parity run (:meth:`Engine.run` on an autojumping clock): sleep until each
        feed record's time, then hand its events over, like the live feed's runner."""
        clock, market = self.clock, self.market
        while True:
            await self._hand_over_feed()
            feed_at = market.next_feed_at(stop)
            if feed_at is None:
                return
            await clock.sleep_until(feed_at)
            market.advance_to(clock.now())

    async def _hand_over_feed(self) -> None:
        """Hand the feed events the market applied to the engine, noting the listings'
        first sightings (the feed's). The market's queue is drained in place: an event
        the engine's handling makes the market apply joins it and is handed over after
        the others, as on the next turn of the loop (:meth:`_run` does the same inline:
        once per watched feed record)."""
        events = self.market.feed_events
        if not self.use_feed:
            events.clear()
            return
        engine, now, sightings = self.engine, self.clock.now, self.market.sightings
        engine.feedwatch.replayed = True
        on_feed_event = engine.on_feed_event
        while events:
            event = events.popleft()
            if isinstance(event, FeedListingEvent):
                item_id = event.listing.item_id
                if item_id not in sightings:  # (ReplayMarket.sighted: the first one counts)
                    sightings[item_id] = (now(), "feed")
            await on_feed_event(event)

    def _budget_skips(self) -> int:
        skips = self.engine.status.skip_reasons
        return sum(n for kind, n in skips.items() if kind.startswith(_BUDGET_WORDS))

    def _note(self, decisions: Sequence[Decision]) -> None:
        ceilings = self._ceilings
        for decision in decisions:
            # Reasons are computed on demand and cost a rule check: only a listing within
            # its rule's max_price can have been turned down for budget alone.
            if decision.accepted or decision.price > ceilings.get(decision.rule, 0):
                continue
            if all(r.startswith(_BUDGET_WORDS) for r in decision.reasons):
                self._budget_missed.add((decision.rule, decision.item_id))

    def missed_budget_by_rule(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for rule, _ in sorted(self._budget_missed):
            counts[rule] = counts.get(rule, 0) + 1
        return counts
