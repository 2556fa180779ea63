"""The live engine: watch within the limit, decide, buy exactly once, reconcile.

An :class:`Engine` is stepped: :meth:`Engine.next_due` says when each kind of step is due
and :meth:`Engine.step` does what is due now (:data:`STEP_KINDS`, their order at one
instant; docs/architecture.md draws it):

- **snapshot**: every ``snapshot_every`` seconds the prices snapshot (free of the search
  limit) of the games the rules watch (:meth:`Engine.snapshot_games`) is streamed and
  diffed; watched names with a new listing or a price drop a rule could afford are
  flagged for an early search. The first snapshot resolves the rules' name patterns.
- **references**: the reference lists and the plugins' price sources, each on its own
  period, fetched off the buying path (:class:`~engine.reference.ReferenceHub`).
- **reconcile**: unknown outcomes resolved by ``project_id``, bought and reserved ones
  followed; the balance refreshed and the buy orders synced (withdrawn while HALTED).
- **search**: v2 search-by-name in batches of up to 50 names of one game (flagged first,
  then stalest) within the search budget: flagged names at once, background searches
  paced by the :class:`SearchPacer`; every ``catalogue_every`` turns a catalogue page
  instead. The listings go through the rules and accepted decisions to the :class:`Buyer`.
- **status**: a periodic status line; a kill file halts buying; the daily summary at
  each UTC midnight.

The plugins hear of refunds, HALT and each day's end from the engine itself
(``snipe_refund`` from the reconciler and the order manager, ``snipe_halted`` when the
status goes HALTED, ``snipe_daily_summary`` from :class:`DayEnds`). Observers read
:meth:`Engine.view`, one bounded :class:`EngineView` of the engine's state.

:meth:`Engine.start` is the start-up live and backtest share: the kill file, the start-up
gate (:meth:`Engine.start_gate`: key and trade link checked, transient failures waited
out; only a rejected key or an invalid link refuses, :class:`TradingRefused`), the buy
orders. Leftover purchases are resolved by the reconcile step beside buying (``_gate.py``
says why that is safe). :meth:`Engine.run` (live) runs a runner per kind that sleeps until
due and steps; a backtest moves a virtual clock to :meth:`Engine.next_due` and steps.
Every step survives the unexpected: an error outside snipe's own types becomes a retried
step or a HALT (``_guard.py``), never the end of the process.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from itertools import compress
from operator import itemgetter
from typing import cast

import anyio

from .._clock import Clock, event_or_deadline
from .._errors import APIError, KeyRejected, RateLimited
from .._limiter import Lane, RateLimiter
from .._plugins import PluginHost
from ..client import FeedEvent, Game, MarketClient, TradeLink
from ..ledger import Ledger, utc_day_start
from ..models import Listing
from ..paper import PaperDesk, PaperSettings
from ..reference import ReferenceHub
from ..rules import (
    BudgetState,
    Decision,
    EvalContext,
    RuleSet,
    eval_context_of,
    evaluate,
    scan,
)
from ..snapshot import SnapshotTracker
from ._bandwidth import rule_games
from ._budget import budget_state, caps_for_rule, within_balance
from ._buyer import Buyer, BuyerSettings
from ._controls import OperatorControls
from ._daily import DayEnds
from ._due import STEP_KINDS, StepTimes
from ._feedwatch import FeedSettings, FeedWatch
from ._gate import GateSettings, StartGate, TradingRefused
from ._guard import LoopGuard, unwrap
from ._heap import HeapPolicy, HeapSettings
from ._judged import JudgedNames, decide_search, judged_listings, search_screen
from ._orders import OrderManager
from ._reconciler import Reconciler, ReconcilerSettings
from ._schedule import SearchPacer, SearchSchedule
from ._status import EngineMode, EngineStatus
from ._view import EngineView, build_view, status_line
from ._watch import SnapshotWatch

__all__ = ["STEP_KINDS", "Engine", "EngineSettings", "StepDone", "TradingRefused"]

TURN_WAIT = 0.001
"""Live: how long a kind due at the same instant as an earlier one waits for it (see
:meth:`Engine._turn`)."""

_UNSET = object()

ALREADY_BOUGHT = "already bought or purchase pending (a listing is bought at most once)"
"""The skip reason of a listing that already has a live purchase in the ledger."""

log = logging.getLogger("snipe.engine")
_ACCEPTED = itemgetter(2)
"""A :class:`Decision`'s ``accepted`` (it is a tuple): read in C over a batch's pairs."""
_NO_BUDGET = BudgetState()
"""An evaluation context's budget until the ledger is read (frozen: one for all)."""


@dataclass(frozen=True)
class EngineSettings:
    dry_run: bool = False
    snapshot_every: float = 10.0
    reconcile_every: float = 15.0
    status_every: float = 60.0
    error_backoff: float = 5.0
    use_snapshot: bool = True
    snapshot_by_game: bool = True
    """Fetch only the games the rules watch (``game=``, one request per game); false: the
    whole snapshot in one request (a backtest's recording is the whole market)."""
    search_reserve: int = 1
    """Search slots a background search leaves free for the search right after the next
    snapshot, so names it flags are searched at once (see :class:`SearchPacer`)."""
    catalogue_every: int = 5
    """With rules that watch name patterns, every this many searches one v2 catalogue page
    (deepest discount first, followed by its cursor) is read instead; 0: never."""
    catalogue_pages: int = 10
    """Pages of one catalogue walk before it starts again from the deepest discount."""
    kill_file: str | None = None
    """While this file exists, the engine is HALTED."""
    gate: GateSettings = field(default_factory=GateSettings)
    max_unexpected_in_a_row: int = 5
    """Unexpected errors in a row in one loop before the engine HALTs (see ``_guard.py``)."""
    buyer: BuyerSettings = field(default_factory=BuyerSettings)
    reconciler: ReconcilerSettings = field(default_factory=ReconcilerSettings)
    feed: FeedSettings = field(default_factory=FeedSettings)
    paper: PaperSettings | None = None
    """A paper run (``snipe run --paper``): decide and write every purchase as in the real
    mode, send none, judge each by what the engine sees next (``engine.paper``); no buy
    order is placed (their plan is reported, as in a dry run). The ledger is the paper
    ledger."""
    heap: HeapSettings = field(default_factory=HeapSettings)
    """The cyclic GC's policy of :meth:`Engine.run` (``_heap.py``): off here, on in
    ``snipe run``."""

    @property
    def simulated(self) -> bool:
        """A dry run or a paper run: nothing that moves money is sent."""
        return self.dry_run or self.paper is not None


@dataclass(frozen=True, slots=True)
class StepDone:
    """One kind of step that ran: its kind, the engine's time when it began, and for a
    search turn that got an answer, the rules' decisions on it (``None`` otherwise)."""

    kind: str
    at: float
    decisions: Sequence[Decision] | None = None


class Engine(StepTimes, SnapshotWatch, OperatorControls):
    """Watches the market and buys what the rules accept. See the module docstring."""

    def __init__(
        self,
        *,
        ruleset: RuleSet,
        client: MarketClient,
        ledger: Ledger,
        clock: Clock,
        limiter: RateLimiter,
        host: PluginHost,
        trade_link: TradeLink,
        trade_link_url: str,
        settings: EngineSettings = EngineSettings(),
        references: ReferenceHub | None = None,
    ) -> None:
        self.ruleset = ruleset
        self.client = client
        self.ledger = ledger
        self.clock = clock
        self.limiter = limiter
        self.host = host
        self.settings = settings
        self.status = EngineStatus(on_halt=host.notify_halted)
        client.malformed_observer = self.status.item_set_aside
        self._trade_link_url = trade_link_url
        self.schedule = SearchSchedule(watched=ruleset.watched_names)
        search_calls = limiter.usage("search")[1]
        self.pacer = SearchPacer.for_limit(search_calls, settings.search_reserve)
        self._next_snapshot_at: float | None = None
        self._snapshot_failures = 0
        self._polling = False
        self._wake = anyio.Event()
        """Set (and replaced) when a snapshot ends: live runners re-read their due time."""
        self._due_at: dict[str, float] = {}
        self._due_kept = None
        self._next_status_line = math.inf
        self._search_stopped = False
        self._reconciled = False
        self._stepping: set[str] = set()
        self._stepped = anyio.Event()
        self.orders = OrderManager(
            ruleset=ruleset,
            client=client,
            ledger=ledger,
            clock=clock,
            status=self.status,
            host=host,
        )
        self.buyer = Buyer(
            ruleset=ruleset,
            client=client,
            ledger=ledger,
            clock=clock,
            host=host,
            trade_link=trade_link,
            status=self.status,
            settings=replace(settings.buyer, dry_run=settings.dry_run),
        )
        self.paper = PaperDesk(ledger, settings.paper) if settings.paper is not None else None
        """A paper run's desk: its would-be purchases and their judgement."""
        self.buyer.paper = self.paper
        self.buyer.recheck = self._still_fits
        self.reconciler = Reconciler(
            client=client,
            ledger=ledger,
            clock=clock,
            status=self.status,
            settings=settings.reconciler,
            # the engine's rules of the moment: a reload swaps them (replace_rules)
            caps_for=lambda rule, at: caps_for_rule(self.ruleset, rule, at),
            host=host,
        )
        self.daily = DayEnds()
        """The daily summary, at each UTC midnight while the engine runs."""
        self.guard = LoopGuard(
            self.status,
            max_in_a_row=settings.max_unexpected_in_a_row,
            first_backoff=settings.error_backoff,
        )
        self.gate = StartGate(
            client=client,
            clock=clock,
            status=self.status,
            guard=self.guard,
            trade_link_url=trade_link_url,
            settings=settings.gate,
        )
        self.balance: int | None = None
        self._trackers: dict[str | None, SnapshotTracker] = {}
        self._games_found: set[str] = set()
        self._games_seen_at: float | None = None
        self._catalogue_turn = 0
        self._games: dict[str, str | object | None] = {}
        self._follow_rules(ruleset)
        self.references = references or ReferenceHub(
            ruleset.prices, clock=clock, wanted=ruleset.sources_used
        )
        """Reference prices (``market.*`` learned here, ``service.*``, ``file.*``, and the
        plugins' sources the rules name, fetched by the references step)."""
        self.references.use_sources(host.price_sources())
        self.stop_requested = anyio.Event()
        """Set by :meth:`request_stop`; ``snipe run`` then stops as on SIGTERM."""
        self.stop_reason: str | None = None
        self.feedwatch = FeedWatch(self, settings.feed)
        """The live listing feed (its client set by the session when enabled)."""
        self._budget_cache: tuple[tuple[int, float], BudgetState, int] | None = None
        """The budget as last read: the ledger's write count and UTC day it is good for,
        and the ledger's intent count when it was read (for ``Buyer``)."""
        self.heap = HeapPolicy(settings.heap, clock)
        """The cyclic GC's policy while :meth:`run` runs (``_heap.py``)."""
        self._held_back = set()
        self.judged = JudgedNames()
        """Each searched name's decisions, kept while its listings stand (``_judged.py``)."""

    def _follow_rules(self, ruleset: RuleSet) -> None:
        """What the engine derives from its rules (at start, and when they are replaced)."""
        self.ruleset = ruleset
        self.include_hold = ruleset.fetch_trade_locked
        self._rule_games: tuple[str | None, ...] | None = rule_games(ruleset)
        self._catalogue_games = sorted({r.game or "" for r in ruleset.rules if r.patterns})
        self._catalogue_cursor: str | None = None
        self._catalogue_page = 0
        self._catalogue_game = 0
        self._games.clear()
        self._due_kept = None

    # -- start-up gate -------------------------------------------------------------------

    async def start_gate(self) -> None:
        """Check the key and the trade link before any purchase, waiting out transient
        failures (see ``_gate.py``). Raises :class:`TradingRefused` for a rejected key or
        an invalid trade link. Unresolved purchases of an earlier run are not waited for:
        the reconcile task resolves them while the engine runs."""
        await self.gate.wait_until_open()
        await self._refresh_balance()
        if not self.settings.simulated:
            # Fills and settling only: nothing is placed before the engine runs (HALTED
            # by a kill file already present: the open orders are withdrawn).
            await self.orders.sync(allow_new=False, withdraw=self.status.halted)

    async def _refresh_balance(self) -> None:
        if self.paper is not None and self.paper.wallet_start is not None:
            self.balance = await self.paper.wallet_left()  # the account's is not this run's
            return
        try:
            answer = await self.client.get_user()
        except KeyRejected as exc:
            self.status.halt(f"the API key was rejected: {exc.message}")
            return
        except APIError as exc:
            self.status.error(f"balance: {exc}")
            return
        real = answer.user.wallet if answer.user is not None else None
        if self.paper is not None:
            self.balance = await self.paper.open_wallet(real)
            return
        if real is not None:
            self.balance = real

    # -- running -------------------------------------------------------------------------

    async def start(self) -> None:
        """Start-up, shared by :meth:`run` and a backtest: the kill file (before anything
        that can spend, buy orders included), the start-up gate, buying allowed, then the
        buy orders the rules want. Every kind of step is due at once afterwards."""
        self.status.started_at = self.clock.now()
        if self.paper is not None:
            await self.paper.load()
        self._check_kill_file()
        await self.start_gate()
        if self.status.mode is EngineMode.STARTING:
            self.status.mode = EngineMode.RUNNING
            self.status.buying_since = self.clock.now()
            log.info(
                "buying allowed %.1f s after start",
                self.status.buying_since - self.status.started_at,
            )
        await self._start_orders()
        now = self.clock.now()
        self._due_at = {kind: now for kind in STEP_KINDS}
        self._due_kept = None
        self._next_status_line = now + self.settings.status_every

    async def run(self, *, duration: float | None = None) -> EngineStatus:
        """:meth:`start`, then step until cancelled or ``duration`` seconds (of the
        engine's clock) have passed. Purchases in flight are finished.

        One runner per kind of step sleeps until that kind is due (:meth:`next_due`) and
        steps it (:meth:`step`), so a long snapshot download never holds back a due search
        or reconcile pass; kinds due at the same instant start in :data:`STEP_KINDS` order,
        as a backtest runs them (see :meth:`_turn`)."""
        await self.start()
        # the start-up heap is long-lived: out of the cyclic GC's passes (a stall each)
        self.heap.started()
        try:
            async with anyio.create_task_group() as tg:
                for kind in self.step_kinds():
                    tg.start_soon(self._runner, kind)
                if self.feedwatch.client is not None:
                    tg.start_soon(self.feedwatch.run)
                if duration is not None:
                    await self.clock.sleep(duration)
                    tg.cancel_scope.cancel()
        except Exception as exc:  # every step is guarded: this is a bug of a runner
            self.guard.failed("engine", unwrap(exc), halt=True)
        finally:
            self.heap.release()
            if self.status.mode is not EngineMode.HALTED:
                self.status.mode = EngineMode.STOPPED
        return self.status

    async def on_feed_event(self, event: FeedEvent) -> None:
        """One event of the live listing feed (live: from the feed runner; a backtest may
        call it): a listing goes through :meth:`decide` and the buyer, or is confirmed by
        a search first; a (re)connection heals with a snapshot. See ``_feedwatch.py``."""
        try:
            if self.paper is not None:
                await self.paper.saw_feed(event)
            later = self.feedwatch.take(event)  # (a plain call: most events end there)
            if later is not None:
                await later
        except Exception as exc:
            self.guard.failed("feed", exc)
        else:
            self.guard.succeeded("feed")

    async def _start_orders(self) -> None:
        """Place the buy orders the rules want, once the gate has passed and only while
        buying is allowed; a dry run reports what it would place instead."""
        if not self.ruleset.buy_order_rules or not self.status.buying_allowed:
            return
        if self.settings.simulated:
            await self.orders.plan("paper" if self.paper is not None else "dry run")
        else:
            await self.orders.sync()

    # -- the step ------------------------------------------------------------------------

    async def step(self, kind: str | None = None) -> list[StepDone]:
        """Do what is due now (on the engine's clock): each kind of step whose time has
        come (only ``kind``, with it), in :data:`STEP_KINDS` order, each seeing what the
        ones before it did. An unexpected error in a step is the :class:`LoopGuard`'s
        (logged once, counted per kind, retried after a backoff; HALT after too many in a
        row, or at once on the buying path). Returns what was done, for observers (a
        backtest's report)."""
        done: list[StepDone] = []
        self._due_kept = None
        for k in (kind,) if kind is not None else self.step_kinds():
            # the due time first: some are "now or later", read from the clock
            if self.next_due(k) > self.clock.now():
                continue
            at = self.clock.now()
            self._stepping.add(k)
            try:
                decisions = await self._step_one(k, at)
            finally:
                self._stepping.discard(k)
                self._stepped.set()
                self._stepped = anyio.Event()
            done.append(StepDone(k, at, decisions))
        self.release_held_back(self.clock.now())
        self._due_kept = None  # a step sets due times (next_due keeps its answer till then)
        return done

    async def _step_one(self, kind: str, now: float) -> Sequence[Decision] | None:
        if kind == "search":
            return await self._step_search(now)
        other = {"snapshot": self._step_snapshot, "references": self._step_references}
        await {**other, "reconcile": self._step_reconcile, "status": self._step_status}[kind](now)
        return None

    async def _runner(self, kind: str) -> None:
        """Live: sleep until ``kind`` is due, take its turn, step it; for ever."""
        while True:
            due = self.next_due(kind)
            if due > self.clock.now():
                # or until a snapshot ends: its flags may make a search due sooner
                await event_or_deadline(self.clock, self._wake, due)
                continue
            await self._turn(kind, self.clock.now())
            await self.step(kind)

    async def _turn(self, kind: str, at: float) -> None:
        """Live: let the kinds before ``kind`` in :data:`STEP_KINDS` that are due by ``at``
        (now) go first, as a backtest runs them; but never wait for one whose step takes
        time (a long download): past ``at`` + :data:`TURN_WAIT`, ``kind`` goes."""
        kinds = self.step_kinds()
        earlier = kinds[: kinds.index(kind)]
        limit = at + TURN_WAIT
        while any(k in self._stepping or self.next_due(k) <= at for k in earlier):
            if self.clock.now() >= limit:
                return
            await event_or_deadline(self.clock, self._stepped, limit)

    async def _step_snapshot(self, now: float) -> None:
        try:
            polls = self.status.snapshots
            await self.poll_snapshot()
            # a cheap audit of the feed polls no snapshot: nothing new to judge paper by
            if self.status.snapshots != polls:
                if self.paper is not None:
                    await self.paper.saw_snapshot(self.current_prices, self._snapshot_covers, now)
                self.heap.polled()  # after the full audit: what it learnt is long-lived
        except APIError as exc:
            self.status.error(f"snapshot: {exc}")
        except Exception as exc:
            self._due_at["snapshot"] = self.clock.now() + self.guard.failed("snapshot", exc)
            return
        else:
            self.guard.succeeded("snapshot")
        self._due_at["snapshot"] = self.next_snapshot_at or self.clock.now()

    async def _step_search(self, now: float) -> Sequence[Decision] | None:
        """One search turn: a catalogue page every ``catalogue_every`` turns (or when no
        name is watched yet), else the next batch of names. The decisions, or ``None``
        when the turn failed."""
        # a trusted feed tells every new listing: the catalogue's pages would only repeat it
        catalogue = not self.feedwatch.trusted and (
            self._catalogue_due() or not self.schedule.watched
        )
        decisions: Sequence[Decision]
        try:
            if catalogue:
                decisions = await self.catalogue_once()
            else:
                decisions = await self.search_once()
        except RateLimited:
            self.status.rate_limited += 1  # the limiter is paused; the next call waits
        except KeyRejected as exc:
            self.status.halt(f"the API key was rejected: {exc.message}")
            self._search_stopped = True
        except APIError as exc:
            self.status.error(f"search: {exc}")
            self._due_at["search"] = self.clock.now() + self.settings.error_backoff
        except Exception as exc:
            self._due_at["search"] = self.clock.now() + self.guard.failed("search", exc)
        else:
            self.guard.succeeded("search")
            return decisions
        return None

    async def search_once(self) -> Sequence[Decision]:
        """Search the next batch of names, decide, and buy what is accepted. Feed
        listings waiting for a search of these names to confirm them (``_confirm.py``)
        are decided with the answer, by item id; those it does not show are skipped."""
        # the feed trusted: a search for flagged names asks for those alone
        batch = self.schedule.next_batch(self.game_of, flagged_only=self.feedwatch.trusted)
        if not batch:
            return []
        game = self.game_of(batch[0])
        lane = Lane.BUY if self.schedule.hot_count else Lane.BACKGROUND
        # paced from when it was sent: waiting for the answer is not spacing (the rate
        # limiter holds the slot until the answer has arrived, which keeps the limit exact)
        sent_at = self.clock.now()
        # taken now: one told in flight waits, unless the answer shows it (ConfirmQueue.shown)
        screen = search_screen(self, game, confirming := self.feedwatch.confirming(batch))
        try:
            answer = await self.client.search_items_by_name(
                batch, game=game, include_hold=self.include_hold, lane=lane, screen=screen
            )
        except BaseException:
            self.feedwatch.confirm.put_back(confirming)  # its names are still flagged
            raise
        now = self.clock.now()
        self.pacer.sent(sent_at, background=lane is Lane.BACKGROUND)
        self.schedule.searched(batch, at=now)
        self.status.searches += 1
        items, listings = judged_listings(answer, screen, self.ruleset)  # stand-ins too
        self.feedwatch.searched(items, game)
        if self.paper is not None:  # before this answer's own decisions: it judges older ones
            await self.paper.saw_search(items, sent_at, game)
        self.status.listings_seen += len(listings)
        self.references.learn_phases(listings)
        # only what changed since it was last judged is judged again (_judged.py)
        decisions, context = await decide_search(self, items, listings, now, game)
        confirmed: set[str] = (
            self.feedwatch.confirmed(confirming, items, decisions) if confirming else set()
        )
        bought = await self._buy(decisions, context)
        if confirmed:
            self.feedwatch.credit(confirmed, bought)
        return decisions

    async def _buy(self, decisions: Sequence[Decision], context: EvalContext) -> set[str]:
        """Hand accepted decisions to the buyer while buying is allowed (else hold them
        back); returns the item ids the service said were bought (or reserved). An
        unexpected error on the buying path HALTs: the ledger may be behind the service
        now, and the purchase in flight stays INTENT/UNKNOWN for the reconciler."""
        if not self.status.buying_allowed:
            self.hold_back(decisions)
            return set()
        cached = self._budget_cache
        # -1: the budget was read again since this one (after a write of this engine)
        read_at = cached[2] if cached is not None and cached[1] is context.budget else -1
        try:
            return await self.buyer.execute(decisions, context, budget_read_at=read_at)
        except Exception as exc:
            self.guard.failed("buyer", exc, halt=True)
            return set()

    def game_of(self, name: str) -> Game | None:
        """The game to search ``name`` in: the one every rule watching it names, if any."""
        game = self._games.get(name, _UNSET)
        if game is _UNSET:
            games = {r.game for r in self.ruleset.view(name).rules}
            game = games.pop() if len(games) == 1 else None
            self._games[name] = game
        return cast("Game | None", game)

    def _catalogue_due(self) -> bool:
        every = self.settings.catalogue_every
        if not every or not self._catalogue_games:
            return False
        self._catalogue_turn = (self._catalogue_turn + 1) % (every + 1)
        return self._catalogue_turn == 0

    async def catalogue_once(self) -> list[Decision]:
        """Read the next v2 catalogue page for the rules that watch name patterns (deepest
        discount first, following the cursor), decide and buy; flag its watched names for
        a detailed search (catalogue listings carry no stickers)."""
        game_text = self._catalogue_games[self._catalogue_game]
        game = cast("Game | None", game_text or None)
        sent_at = self.clock.now()
        page = await self.client.get_items_list(
            game=game,
            order_by="discount",
            sort="DESC",
            limit=100,
            cursor=self._catalogue_cursor,
            include_hold=self.include_hold,
        )
        self._catalogue_page += 1
        self.pacer.sent(sent_at, background=True)
        restart = not page.has_more or self._catalogue_page >= self.settings.catalogue_pages
        self._catalogue_cursor = None if restart else page.next_cursor
        if restart:  # next walk: the next game, from the deepest discount again
            self._catalogue_page = 0
            self._catalogue_game = (self._catalogue_game + 1) % len(self._catalogue_games)
        now = self.clock.now()
        listings = list(page.items)
        if self.paper is not None:
            await self.paper.saw_listings(listings, sent_at, "catalogue")
        self.status.listings_seen += len(listings)
        for listing in listings:
            ceiling = self._ceiling(listing.name)
            if ceiling is not None and listing.price <= ceiling:
                self.schedule.watch(self.schedule.watched | {listing.name})
                self.schedule.flag(listing.name, promise=ceiling - listing.price, at=now)
        decisions, context = await self.decide(listings, now, game=game)
        await self._buy(decisions, context)
        return decisions

    async def decide(
        self, listings: list[Listing], now: float, *, game: str | None = None
    ) -> tuple[list[Decision], EvalContext]:
        """The rules' decisions for ``listings`` at ``now``, with the budget as the ledger
        has it (in-flight purchases included) and the known balance."""
        context = self.eval_context(listings, now, game)
        # The rules' checks first, without the budget: the budget only turns down pairs
        # that pass them (the caps), so when none passes these are evaluate()'s decisions
        # whatever the ledger holds, and the ledger is not read. Most listings pass no
        # rule's checks, and at the feed's rate (bursts near 2,800 events a second) a
        # ledger read per event would be most of the engine's time.
        checked = scan(self.ruleset, listings, context)
        if not checked.decisions:
            decisions = checked.all_decisions()
            # their reasons are worked out when the skip counts are read (EngineStatus)
            self.status.skipped_all(decisions)
        else:
            context = replace(context, budget=await self._budget_now(now))
            decisions = evaluate(self.ruleset, listings, context)
            if self.paper is not None:  # the simulated wallet, as the ledger has it now
                self.balance = await self.paper.wallet_left()
            decisions = within_balance(decisions, self.balance)
            decisions = await self._not_bought_yet(decisions)
            candidates = sum(map(_ACCEPTED, decisions))
            self.status.candidates += candidates
            self.status.skipped_all(decisions, buying=candidates > 0)
        if log.isEnabledFor(logging.DEBUG):
            for decision in decisions:
                log.debug("%s", decision)
        return decisions, context

    def eval_context(self, listings: list[Listing], now: float, game: str | None) -> EvalContext:
        """What the rules judge ``listings`` with at ``now``, the budget aside."""
        # the plugins' sources as last fetched by the references step: never fetched here
        prices, as_of = self.references.held_prices()
        return eval_context_of(  # EvalContext(...), faster: one per feed event
            now,
            prices,
            _NO_BUDGET,  # (the default's factory, a call per feed event)
            game,
            self.references.quotes(listings, self.ruleset.view, now),
            as_of,
            self.feedwatch.known.sticker_prices(now),
        )

    async def _budget_now(self, now: float) -> BudgetState:
        """The budget as the ledger has it, read again only when this engine's ledger has
        written something or the UTC day changed since the last read: a feed event of a
        watched name is decided without a trip to the ledger's thread. Advisory only:
        the caps are checked again in the ledger's own transaction when a purchase is
        written (``Buyer``), so another process's write seen late cannot overspend."""
        key = (self.ledger.writes, utc_day_start(now))
        cached = self._budget_cache
        if cached is not None and cached[0] == key:
            return cached[1]
        intents = self.ledger.intents  # before the read: one written meanwhile is "since"
        state = await budget_state(self.ledger, now)
        self._budget_cache = (key, state, intents)
        return state

    async def _still_fits(self, decisions: Sequence[Decision], context: EvalContext) -> bool:
        """Whether ``decisions`` are still accepted with the budget as the ledger has it
        now (the buyer asks after a cap refusal: see ``Buyer._lost_to_own_purchase``)."""
        now = self.clock.now()
        fresh = replace(context, now=now, budget=await budget_state(self.ledger, now))
        wanted = {(d.item_id, d.rule) for d in decisions}
        again = evaluate(self.ruleset, [d.listing for d in decisions], fresh)
        return all(d.accepted for d in again if (d.item_id, d.rule) in wanted)

    async def _not_bought_yet(self, decisions: list[Decision]) -> list[Decision]:
        """Turn down listings that already have a live purchase (bought, or its outcome
        still unknown): without this, every search while a purchase is unresolved would
        hand the same item to the buyer, to be refused by the ledger and logged again."""
        accepted = [d.item_id for d in compress(decisions, map(_ACCEPTED, decisions))]
        live = await self.ledger.live_items(accepted) if accepted else set()
        if not live:
            return decisions
        return [
            Decision(
                d.listing, d.rule, False, (ALREADY_BOUGHT,), d.price, d.action, d.priority, False
            )
            if d.accepted and d.item_id in live
            else d
            for d in decisions
        ]

    async def _step_reconcile(self, now: float) -> None:
        # The first pass at start: purchases an earlier run left unresolved are looked up
        # as soon as their grace has passed, beside the buying that has already resumed.
        first, self._reconciled = not self._reconciled, True
        wait = self.settings.reconcile_every
        try:
            await self._reconcile_step(first)
        except Exception as exc:
            wait += self.guard.failed("reconcile", exc)
        else:
            self.guard.succeeded("reconcile")
        self._due_at["reconcile"] = self.clock.now() + wait

    async def _step_references(self, now: float) -> None:
        # The reference lists and the plugins' price sources, each on its own period:
        # fetched here, beside the buying path, never between an answer and a purchase.
        try:
            names = lambda: sorted(self.schedule.watched)  # noqa: E731 - asked only when due
            await self.references.step(self.client, now, names=names)
        except Exception as exc:  # a reference is never a reason to stop buying
            wait = self.guard.failed("references", exc, may_halt=False)
            self._due_at["references"] = self.clock.now() + wait
        else:
            self.guard.succeeded("references")
            self._due_at["references"] = now

    async def _reconcile_step(self, first: bool) -> None:
        if self.settings.dry_run:
            return
        if self.paper is not None:  # nothing was sent: only the wallet (and its start)
            await self._refresh_balance()
            return
        await self.reconciler.run_once()
        if not first:  # the start-up gate has just done these
            await self._refresh_balance()
            await self.orders.sync(
                allow_new=self.status.buying_allowed, withdraw=self.status.halted
            )

    async def _step_status(self, now: float) -> None:
        """The kill file (every second when one is configured) and the status line."""
        try:
            self._check_kill_file()
            if now >= self._next_status_line:
                log.info("%s", await self.status_line())
                self._next_status_line += self.settings.status_every
            await self.daily.step(self)
        except Exception as exc:
            self._due_at["status"] = self.clock.now() + self.guard.failed("status", exc)
            return
        self.guard.succeeded("status")
        kill_check = now + 1.0 if self.settings.kill_file else math.inf
        self._due_at["status"] = min(
            kill_check, self._next_status_line, self.daily.due_at(self.clock.now())
        )

    def _check_kill_file(self) -> None:
        path = self.settings.kill_file
        if path and os.path.exists(path):
            self.status.halt(f"kill file {path} exists")

    async def view(self) -> EngineView:
        """The engine's state now, bounded, for every observer (see ``_view.py``)."""
        return await build_view(self)

    async def status_line(self) -> str:
        """Spend against caps, search budget used, coverage, candidates, purchase states. A
        dry run says so and speaks of what it would have spent and bought."""
        return status_line(await self.view())
