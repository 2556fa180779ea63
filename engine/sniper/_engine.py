"""The live engine: watch within the limit, decide, buy exactly once, reconcile.

One :class:`Engine` runs these tasks in one anyio task group:

- **snapshot**: every ``snapshot_every`` seconds the prices snapshot (free of the search
  limit) of each game the rules watch (:meth:`Engine.snapshot_games`, bytes counted) is
  streamed and diffed against the previous one; watched names with a
  new listing or a price drop that a rule could afford are flagged for an early search. The
  first snapshot also resolves the rules' name patterns into watched names.
- **search**: v2 search-by-name in batches of up to 50 names (flagged names first, then the
  stalest), within the shared search budget of the rate limiter: flagged names at once,
  background searches evenly spaced and never into the slot the search right after the
  next snapshot needs (:class:`SearchPacer`); the listings go through the rules (a pure
  function) and accepted decisions to the :class:`Buyer`.
- **reconcile**: purchases of unknown outcome are resolved by ``project_id``; bought and
  reserved ones are followed until they complete or are refunded; the balance is refreshed.
- **status**: a periodic status line; a kill file halts buying; the daily summary at
  each UTC midnight.

The plugins hear of refunds, HALT and each day's end from the engine itself
(``snipe_refund`` from the reconciler and the order manager, ``snipe_halted`` when the
status goes HALTED, ``snipe_daily_summary`` from :class:`DayEnds`). Observers read
:meth:`Engine.view`, one bounded :class:`EngineView` of the engine's state.

Before the first purchase, :meth:`Engine.start_gate` checks the key and the trade link,
waiting out transient failures; only a rejected key or an invalid link refuses to trade
(:class:`TradingRefused`). Purchases a previous run left unresolved are resolved by the
reconcile task beside the running engine (see ``_gate.py`` for why that is safe).

Every loop survives the unexpected: an error outside snipe's own types becomes a retried
step or a HALT (``_guard.py``), never the end of the process.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import cast

import anyio

from .._clock import Clock
from .._errors import APIError, KeyRejected, RateLimited, Unavailable
from .._limiter import Lane, RateLimiter
from .._money import format_usd
from .._plugins import PluginHost
from ..client import Game, MarketClient, TradeLink
from ..client._params import GAMES
from ..ledger import Ledger
from ..models import Listing
from ..reference import ReferenceHub
from ..rules import Decision, EvalContext, RuleSet, evaluate
from ..snapshot import NameSummary, SnapshotTracker
from ._bandwidth import REDISCOVER_EVERY, rule_games
from ._budget import budget_state, caps_for_rule
from ._buyer import Buyer, BuyerSettings
from ._daily import DayEnds
from ._gate import GateSettings, StartGate, TradingRefused
from ._guard import LoopGuard
from ._orders import OrderManager
from ._reconciler import Reconciler, ReconcilerSettings
from ._schedule import SearchPacer, SearchSchedule
from ._status import EngineMode, EngineStatus
from ._view import EngineView, build_view, status_line

__all__ = ["Engine", "EngineSettings", "TradingRefused"]

_UNSET = object()

log = logging.getLogger("snipe.engine")


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


class Engine:
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
        self.pacer = SearchPacer(
            calls=search_calls,
            reserve=min(settings.search_reserve, (search_calls or 1) - 1),
        )
        self._next_snapshot_at: float | None = None
        self._snapshot_failures = 0
        self._polling = False
        self._search_wake = anyio.Event()
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
        self.include_hold = ruleset.fetch_trade_locked
        self.balance: int | None = None
        self._trackers: dict[str | None, SnapshotTracker] = {}
        self._rule_games: tuple[str | None, ...] | None = rule_games(ruleset)
        self._games_found: set[str] = set()
        self._games_seen_at: float | None = None
        self._catalogue_games = sorted({r.game or "" for r in ruleset.rules if r.patterns})
        self._catalogue_cursor: str | None = None
        self._catalogue_page = 0
        self._catalogue_game = 0
        self._catalogue_turn = 0
        self._games: dict[str, str | object | None] = {}
        self.references = references or ReferenceHub(
            ruleset.prices, clock=clock, wanted=ruleset.sources_used
        )
        """Reference prices (``market.*`` learned here, ``service.*``, ``file.*``)."""
        self.stop_requested = anyio.Event()
        """Set by :meth:`request_stop`; ``snipe run`` then stops as on SIGTERM."""
        self.stop_reason: str | None = None

    # -- start-up gate -------------------------------------------------------------------

    async def start_gate(self) -> None:
        """Check the key and the trade link before any purchase, waiting out transient
        failures (see ``_gate.py``). Raises :class:`TradingRefused` for a rejected key or
        an invalid trade link. Unresolved purchases of an earlier run are not waited for:
        the reconcile task resolves them while the engine runs."""
        await self.gate.wait_until_open()
        await self._refresh_balance()
        if not self.settings.dry_run:
            # Fills and settling only: nothing is placed before the engine runs (HALTED
            # by a kill file already present: the open orders are withdrawn).
            await self.orders.sync(allow_new=False, withdraw=self.status.halted)

    async def _refresh_balance(self) -> None:
        try:
            answer = await self.client.get_user()
        except KeyRejected as exc:
            self.status.halt(f"the API key was rejected: {exc.message}")
            return
        except APIError as exc:
            self.status.error(f"balance: {exc}")
            return
        if answer.user is not None:
            self.balance = answer.user.wallet

    # -- running -------------------------------------------------------------------------

    async def run(self, *, duration: float | None = None) -> EngineStatus:
        """Pass the start-up gate, then watch and buy until cancelled or ``duration``
        seconds (of the engine's clock) have passed. Purchases in flight are finished."""
        self.status.started_at = self.clock.now()
        self._check_kill_file()  # before anything that can spend, buy orders included
        await self.start_gate()
        if self.status.mode is EngineMode.STARTING:
            self.status.mode = EngineMode.RUNNING
            self.status.buying_since = self.clock.now()
            log.info(
                "buying allowed %.1f s after start",
                self.status.buying_since - self.status.started_at,
            )
        await self._start_orders()
        try:
            async with anyio.create_task_group() as tg:
                if self.settings.use_snapshot:
                    tg.start_soon(self._snapshot_loop)
                tg.start_soon(self._search_loop)
                tg.start_soon(self._reconcile_loop)
                tg.start_soon(self._status_loop)
                tg.start_soon(self.references.run, self.client)
                if duration is not None:
                    await self.clock.sleep(duration)
                    tg.cancel_scope.cancel()
        except Exception as exc:  # every loop guards its steps: this is a bug of a loop
            self.guard.failed("engine", _unwrap(exc), halt=True)
        finally:
            if self.status.mode is not EngineMode.HALTED:
                self.status.mode = EngineMode.STOPPED
        return self.status

    async def _start_orders(self) -> None:
        """Place the buy orders the rules want, once the gate has passed and only while
        buying is allowed; a dry run reports what it would place instead."""
        if not self.ruleset.buy_order_rules or not self.status.buying_allowed:
            return
        if self.settings.dry_run:
            await self.orders.plan()
        else:
            await self.orders.sync()

    async def _snapshot_loop(self) -> None:
        while True:
            try:
                await self.poll_snapshot()
            except APIError as exc:
                self.status.error(f"snapshot: {exc}")
            except Exception as exc:
                await self.clock.sleep(self.guard.failed("snapshot", exc))
                continue
            else:
                self.guard.succeeded("snapshot")
            await self.clock.sleep_until(self.next_snapshot_at or self.clock.now())

    @property
    def next_snapshot_at(self) -> float | None:
        """When the next snapshot poll is due (``None`` before the first): every
        ``snapshot_every`` seconds from the start of the last poll (or, after a poll that
        took more than half of that, as long again as it took); sooner after a 503
        ("being built") or an unreachable service (1 s, then doubling), or after the wait
        a 429 asked for."""
        return self._next_snapshot_at

    async def poll_snapshot(self) -> None:
        """Fetch the snapshot, resolve name patterns, and flag names with candidates."""
        every = self.settings.snapshot_every
        started = self.clock.now()
        next_at = started + every
        self._polling = True
        try:
            await self._poll_snapshot()
            self._snapshot_failures = 0
            # A poll slower than half the period (a huge market, a busy machine) is
            # followed by a rest as long as itself, so polling never takes all the CPU.
            ended = self.clock.now()
            next_at = max(next_at, ended + (ended - started))
        except RateLimited as exc:
            next_at = self.clock.now() + exc.retry_after
            raise
        except Unavailable:
            # The snapshot is rebuilt every 10 s and answers 503 for a moment meanwhile:
            # waiting a whole period would make this round's flags 10 s late.
            self._snapshot_failures += 1
            next_at = self.clock.now() + min(every, 2.0 ** (self._snapshot_failures - 1))
            raise
        finally:
            self._polling = False
            self._next_snapshot_at = max(next_at, self.clock.now())
            self._search_wake.set()

    def snapshot_games(self) -> tuple[str | None, ...]:
        """The games the next snapshot poll fetches (``game=``; ``None``: unfiltered).
        See :mod:`engine.sniper._bandwidth`."""
        if not self.settings.snapshot_by_game:
            return (None,)
        if self._rule_games is not None:
            return self._rule_games
        now = self.clock.now()
        if self._games_seen_at is None or now - self._games_seen_at >= REDISCOVER_EVERY:
            return tuple(sorted(GAMES))  # look at every game, one request each
        return tuple(sorted(self._games_found)) or tuple(sorted(GAMES))

    async def _poll_snapshot(self) -> None:
        games = self.snapshot_games()
        discovering = games != (None,) and self._rule_games is None and set(games) == set(GAMES)
        # A game kept since the last look has a tracker (no first snapshot to read names
        # from): it stays; the others are looked at afresh.
        found = {g for g in self._games_found if g in self._trackers}
        try:
            for game in games:
                tracker = self._trackers.setdefault(game, SnapshotTracker())
                names = await self._poll_game(game, tracker, names_of_changes=discovering)
                if any(self.ruleset.view(n).rules for n in names) and game is not None:
                    found.add(game)
        except BaseException:
            if discovering:
                # A look cut short (a 503, a timeout, cancelled) must not keep the trackers
                # it made: their first snapshot, the only one that names the game's items,
                # is spent, and the next look would find no game.
                for game in games:
                    if game not in found:
                        self._trackers.pop(game, None)
            raise
        self.status.snapshots += 1
        if discovering:
            self._games_found = found
            self._games_seen_at = self.clock.now()
            for game in set(self._trackers) - set(self.snapshot_games()):
                del self._trackers[game]  # not fetched again before the next look

    def current_prices(self, ids: Iterable[int | str]) -> list[int]:
        """The price of each item id now, in whichever game's snapshot lists it (-1: not
        listed): what the reference prices ask of listings that waited for their hold."""
        trackers = list(self._trackers.values())
        if len(trackers) == 1:
            return trackers[0].current_prices(ids)
        ids = list(ids)
        prices = [-1] * len(ids)
        for tracker in trackers:
            prices = [max(a, b) for a, b in zip(prices, tracker.current_prices(ids), strict=True)]
        return prices

    async def _poll_game(
        self, game: str | None, tracker: SnapshotTracker, *, names_of_changes: bool = False
    ) -> Iterable[str]:
        """Fetch and diff one game's snapshot; returns the names of a first snapshot, and
        with ``names_of_changes`` those of a later one's new listings and drops (a watched
        name that was not listed at the first look is found when it is)."""
        label = game or "all"
        async with self.client.snapshot_csv(
            game=cast("Game | None", game), include_hold=self.include_hold
        ) as stream:
            try:
                # Parsed and compared as it streams in; only the rows that changed are parsed.
                diff = await tracker.aupdate_csv(stream)
            finally:
                self.status.snapshot_bytes[label] += stream.bytes_downloaded
        self.references.observe_diff(diff, self, self.clock.now())
        if diff.first:  # the first snapshot is always parsed whole
            names = diff.snapshot.names if diff.snapshot is not None else ()
            self._watch(names)
            return names
        summaries = diff.names_cheapest_first()
        self._flag(summaries)
        return [s.name for s in summaries] if names_of_changes else ()

    def _flag(self, summaries: Iterable[NameSummary]) -> None:
        now = self.clock.now()
        for summary in summaries:
            ceiling = self._ceiling(summary.name)
            if ceiling is not None and summary.cheapest <= ceiling:
                self.schedule.flag(
                    self._searched_name(summary.name), promise=ceiling - summary.cheapest, at=now
                )

    def _searched_name(self, name: str) -> str:
        # The snapshot writes a Doppler phase into the name; a rule that names the base
        # name watches (and searches) the base name.
        if name in self.schedule.watched:
            return name
        return self.ruleset.view(name).base_name

    def _watch(self, market_names: Iterable[str]) -> None:
        names = set(self.ruleset.watched_names) | set(self.schedule.watched)
        if self.ruleset.watched_patterns:
            names.update(n for n in market_names if self.ruleset.view(n).rules)
        self.schedule.watch(names)
        log.info("watching %d names", len(names))

    def _ceiling(self, name: str) -> int | None:
        rules = self.ruleset.view(name).rules
        return max((r.max_price for r in rules), default=None)

    async def _search_loop(self) -> None:
        while True:
            if not self.schedule.watched and not self._catalogue_games:
                await self.clock.sleep(self.settings.snapshot_every)
                continue
            if not await self._search_turn():
                continue
            catalogue = self._catalogue_due() or not self.schedule.watched
            try:
                if catalogue:
                    await self.catalogue_once()
                else:
                    await self.search_once()
            except RateLimited:
                self.status.rate_limited += 1  # the limiter is paused; the next call waits
            except KeyRejected as exc:
                self.status.halt(f"the API key was rejected: {exc.message}")
                return
            except APIError as exc:
                self.status.error(f"search: {exc}")
                await self.clock.sleep(self.settings.error_backoff)
            except Exception as exc:
                await self.clock.sleep(self.guard.failed("search", exc))
            else:
                self.guard.succeeded("search")

    def next_search_at(self) -> float:
        """When the next search should go out: at once (as the rate limiter allows) for
        names the snapshot flagged, else when the :class:`SearchPacer` lets a background
        search go; ``math.inf`` while it waits for the next snapshot."""
        free = self.limiter.next_free("search")
        if self.schedule.hot_count:
            return free
        now = self.clock.now()
        flags_at = now if self._polling else self._next_snapshot_at
        return max(free, self.pacer.background_at(now, flags_at=flags_at))

    async def _search_turn(self) -> bool:
        """Wait until :meth:`next_search_at`, or until a snapshot ends (which may flag
        names or move that time); ``True`` when it is time to search."""
        due = self.next_search_at()
        if due <= self.clock.now():
            return True
        self._search_wake = woken = anyio.Event()
        async with anyio.create_task_group() as tg:

            async def wake() -> None:
                await woken.wait()
                tg.cancel_scope.cancel()

            tg.start_soon(wake)
            if math.isfinite(due):
                await self.clock.sleep_until(due)
                tg.cancel_scope.cancel()
        return False

    async def search_once(self) -> list[Decision]:
        """Search the next batch of names, decide, and buy what is accepted."""
        batch = self.schedule.next_batch(self.game_of)
        if not batch:
            return []
        game = self.game_of(batch[0])
        lane = Lane.BUY if self.schedule.hot_count else Lane.BACKGROUND
        # paced from when it was sent: waiting for the answer is not spacing (the rate
        # limiter holds the slot until the answer has arrived, which keeps the limit exact)
        sent_at = self.clock.now()
        answer = await self.client.search_items_by_name(
            batch, game=game, include_hold=self.include_hold, lane=lane
        )
        now = self.clock.now()
        self.pacer.sent(sent_at, background=lane is Lane.BACKGROUND)
        self.schedule.searched(batch, at=now)
        self.status.searches += 1
        listings: list[Listing] = [x for found in answer.items.values() for x in found]
        self.status.listings_seen += len(listings)
        self.references.learn_phases(listings)
        decisions, context = await self.decide(listings, now, game=game)
        await self._buy(decisions, context)
        return decisions

    async def _buy(self, decisions: list[Decision], context: EvalContext) -> None:
        """Hand accepted decisions to the buyer while buying is allowed. An unexpected
        error on the buying path HALTs: the ledger may be behind the service now, and the
        purchase in flight stays INTENT/UNKNOWN for the reconciler, as after a crash."""
        if not self.status.buying_allowed:
            return
        try:
            await self.buyer.execute(decisions, context)
        except Exception as exc:
            self.guard.failed("buyer", exc, halt=True)

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
        context = EvalContext(
            now=now,
            reference_prices=await self._reference_prices(listings),
            budget=await budget_state(self.ledger, now),
            game=game,
            references=self.references.quotes(listings, self.ruleset.view, now),
        )
        decisions = evaluate(self.ruleset, listings, context)
        decisions = self._within_balance(decisions)
        if log.isEnabledFor(logging.DEBUG):
            for decision in decisions:
                log.debug("%s", decision)
        for decision in decisions:
            if decision.accepted:
                self.status.candidates += 1
            else:
                for reason in decision.reasons:
                    self.status.skipped(decision.rule, reason)
        return decisions, context

    def _within_balance(self, decisions: list[Decision]) -> list[Decision]:
        if self.balance is None:
            return decisions
        left = self.balance
        out = []
        for d in decisions:
            if d.accepted and d.price > left:
                why = f"balance {format_usd(left)} is below the price {format_usd(d.price)}"
                d = Decision(d.listing, d.rule, False, (why,), d.price, d.action, d.priority, False)
            elif d.accepted:
                left -= d.price
            out.append(d)
        return out

    async def _reference_prices(self, listings: list[Listing]) -> dict[str, dict[str, int]]:
        sources = self.host.price_sources()
        if not sources:
            return {}
        names = sorted({x.name for x in listings})
        prices: dict[str, dict[str, int]] = {}
        for name, source in sources.items():
            try:
                prices[name] = dict(await source.fetch(names))
            except Exception as exc:  # a plugin's failure must never stop buying
                self.status.error(f"price source {name!r} failed: {exc!r}")
        return prices

    async def _reconcile_loop(self) -> None:
        # The first pass at once: purchases an earlier run left unresolved are looked up
        # as soon as their grace has passed, beside the buying that has already resumed.
        first = True
        while True:
            if not first:
                await self.clock.sleep(self.settings.reconcile_every)
            try:
                await self._reconcile_step(first)
            except Exception as exc:
                await self.clock.sleep(self.guard.failed("reconcile", exc))
            else:
                self.guard.succeeded("reconcile")
            first = False

    async def _reconcile_step(self, first: bool) -> None:
        if self.settings.dry_run:
            return
        await self.reconciler.run_once()
        if not first:  # the start-up gate has just done these
            await self._refresh_balance()
            await self.orders.sync(
                allow_new=self.status.buying_allowed, withdraw=self.status.halted
            )

    async def _status_loop(self) -> None:
        next_line = self.clock.now() + self.settings.status_every
        while True:
            try:
                self._check_kill_file()
                if self.clock.now() >= next_line:
                    log.info("%s", await self.status_line())
                    next_line += self.settings.status_every
                await self.daily.step(self)
            except Exception as exc:
                await self.clock.sleep(self.guard.failed("status", exc))
                continue
            self.guard.succeeded("status")
            await self.clock.sleep(1.0)

    def _check_kill_file(self) -> None:
        path = self.settings.kill_file
        if path and os.path.exists(path):
            self.status.halt(f"kill file {path} exists")

    # -- operator controls (the API) -------------------------------------------------------

    async def pause(self, reason: str) -> int:
        """Stop buying until :meth:`resume`, as a kill file does but resumable: no new
        purchase or buy order, and the open buy orders are withdrawn (a fill would be a
        purchase while paused). Reconciling goes on. Returns the orders removed."""
        if self.status.paused is None:
            self.status.paused = reason
            log.warning("buying paused: %s", reason)
        if self.settings.dry_run:
            return 0
        return await self.orders.remove_all()

    def resume(self) -> bool:
        """Allow buying again after :meth:`pause`; ``False`` when HALTED (a HALT needs a
        person and a restart, not a resume) or not paused. Buy orders are placed again by
        the next order sync."""
        if self.status.paused is None or self.status.halted:
            return False
        self.status.paused = None
        log.warning("buying resumed")
        return True

    def replace_rules(self, ruleset: RuleSet) -> None:
        """Swap in ``ruleset`` (already loaded and checked) between two steps: decisions
        from now on use it, caps are checked against its budgets at the moment of buying,
        and buy orders follow it at the next sync. The ``account`` and ``prices`` sections
        take effect at the next start (the client, ledger and reference sources are
        open)."""
        self.ruleset = ruleset
        self.orders._ruleset = ruleset
        self.buyer._ruleset = ruleset
        kept = {n for n in self.schedule.watched if ruleset.view(n).rules}
        self.schedule.watch(set(ruleset.watched_names) | kept)
        self._rule_games = rule_games(ruleset)
        self._games.clear()
        self._catalogue_games = sorted({r.game or "" for r in ruleset.rules if r.patterns})
        self._catalogue_game, self._catalogue_page, self._catalogue_cursor = 0, 0, None
        self.include_hold = ruleset.fetch_trade_locked
        log.warning("rules replaced by %s (%d rules)", ruleset.filename, len(ruleset.rules))

    def request_stop(self, reason: str) -> None:
        """Ask ``snipe run`` to stop as on SIGTERM: purchases in flight are finished."""
        if self.stop_reason is None:
            self.stop_reason = reason
            log.warning("stop requested: %s", reason)
        self.stop_requested.set()

    async def view(self) -> EngineView:
        """The engine's state now, bounded, for every observer (see ``_view.py``)."""
        return await build_view(self)

    async def status_line(self) -> str:
        """Spend against caps, search budget used, coverage, candidates, purchase states. A
        dry run says so and speaks of what it would have spent and bought."""
        return status_line(await self.view())


def _unwrap(exc: Exception) -> Exception:
    """The first real error inside (nested) exception groups."""
    while isinstance(exc, ExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc
