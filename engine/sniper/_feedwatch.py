"""The live listing feed as the engine's first way of seeing a listing; the snapshot as
its safety net (issue 17, points 2, 3 and 6).

:class:`FeedWatch` belongs to an :class:`~engine.sniper.Engine` (``engine.feedwatch``).
Live, its runner (:meth:`FeedWatch.run`) consumes a
:class:`~engine.client.FeedClient`'s events and hands each to
:meth:`Engine.on_feed_event`, which a backtest may call as well: one kernel.

- **Detection.** A ``new`` or ``update`` event of a name a rule watches, cheap enough
  for one of them, goes through :meth:`Engine.decide` (the one decision path: rules,
  held references, budget, what is already bought, balance) and the :class:`Buyer`,
  by item id at the listed price, with nothing awaited before the buy but the ledger.
  A rule that reads what the feed lacks (:attr:`CompiledRule.needs_search`: stickers'
  wear or value, an undeclared plugin criterion) is not trusted with the event: a
  listing that passes what the feed can tell of it (:attr:`CompiledRule.feed_passes`)
  waits, by item id, for one v2 search of its name in the priority lane, whose answer
  decides (``_confirm.py``); one that fails it costs no search. ``removed`` is counted
  only (and drops a waiting candidate): a removal is not a sale, so it never reaches
  the reference book.
- **Healing.** The feed has no replay: after every connection (the first included) the
  snapshot step is made due at once, and the feed is trusted only once a snapshot that
  started after the connection has been diffed (the gap healed). A heal begun less than
  :data:`SNAPSHOT_REBUILT_EVERY` after the connection may have read a snapshot built
  before it: the next snapshot poll, full and not auditing, is then due as soon as the
  snapshot has been rebuilt since the connection (:meth:`FeedWatch.next_poll_at`), so a
  listing of those seconds is searched within seconds, not an ``audit_every`` later.
- **Auditing, in two tiers.** While trusted, the snapshot step runs every
  ``audit_every`` seconds (300) instead of ``snapshot_every``, and is one of:

  - the **full audit**, a snapshot poll, every ``full_audit_every`` seconds (3600, and
    every poll while the feed is not trusted): its diff's new listings of watched names
    that the feed never told (by item id) are counted as missed
    (``snipe_feed_missed_total``, tier ``full``), and only their names are flagged for a
    search;
  - the **cheap audit** in between: one ``GET /v1/prices`` per watched game (kilobytes
    where the snapshot is tens of megabytes; outside the search budget), each watched
    name's ``count`` and ``min`` compared with the engine's own view (the previous answer
    moved by the feed's events, :class:`~engine.sniper._auditbook.AuditBook`), judged
    ``audit_grace`` seconds after the answer (a step of its own, no request: the events
    of changes it shows may still be on their way). A name whose ``min`` is below
    anything the engine knows, or whose count is off by more than the timing explains,
    is a *suspect*, flagged for one search in the priority lane. The
    search tells what is listed now and goes through the one decision path (a deal is
    bought there, never by the audit); its listings the feed never told and the last
    snapshot did not hold (or held dearer) are counted as missed (tier ``cheap``).

  More than ``missed_limit`` missed in one audit and the feed is distrusted: snapshot
  polling at the normal period until a full audit finds it whole again. A disconnect (a
  stall included) makes a snapshot due at once and the normal period apply until the
  next heal. Item ids the feed told are remembered for ``remember_for`` seconds, and at
  least since the last full snapshot, so a search can tell a listing never told.

A feed event never settles money: it can only start a purchase the buyer writes to the
ledger first, like a search's answer.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

import anyio
import anyio.lowlevel
from anyio.streams.memory import MemoryObjectReceiveStream

from ..client import (
    FeedBatch,
    FeedClient,
    FeedConnected,
    FeedDisconnected,
    FeedEvent,
    FeedListingEvent,
    FeedRemovalEvent,
    Game,
)
from ..models import Listing
from ..rules import Decision
from ..snapshot import NameSummary, NewListing, SnapshotDiff
from ._auditbook import AuditBook, NameCount, Suspect
from ._confirm import REMOVED, SKIP_KINDS, Candidate, ConfirmQueue
from ._feedlisting import CONFIRM, FeedListings, Named, Watching
from ._feedrun import run_feed
from ._feedsettings import FeedSettings, FeedView
from ._known import KnownListings

if TYPE_CHECKING:
    from ._engine import Engine

__all__ = ["FEED_MODES", "FeedSettings", "FeedView", "FeedWatch"]

FEED_MODES = ("auto", "on", "off")
"""``account.feed``: ``auto`` gives up on a feed that never answers the handshake."""

SNAPSHOT_REBUILT_EVERY = 10.0
"""The service rebuilds the snapshot this often: a poll begun less than this after a
connection may read a snapshot built before it, whose successor then shows listings of
before the connection as new. Such a poll is no base for an audit."""

DRAIN_SECONDS = 0.01
"""The longest the consumer works through a batch of events without a turn of the event
loop (on the engine's clock): an event costs tens of microseconds, a purchase
milliseconds, so a batch is cut short there and resumed after the turn. 10 ms, not 20:
with the reader's own turn and a pass of the cyclic GC between two, the loop's longest
stall in bench/bench_feed_decode.py went from 34-45 ms to 22-25 ms, at no cost in rate."""

log = logging.getLogger("snipe.engine.feed")


@dataclass(frozen=True, slots=True)
class _Pending:
    """A cheap audit's answer waiting for its judgement."""

    rows: dict[str, NameCount]
    game_of: dict[str, str | None]
    started: float
    ended: float


class FeedWatch(FeedListings):
    """The feed's side of an engine (see the module docstring).

    The cheap audit (``GET /v1/prices``) takes two snapshot steps: the request, then
    ``audit_grace`` seconds later its judgement (no request)."""

    def __init__(self, engine: Engine, settings: FeedSettings) -> None:
        self.engine = engine
        self.settings = settings  # (and _cheap_tier: see the property)
        self.client: FeedClient | None = None
        self.replayed = False
        """A backtest hands the engine a recording's feed events (no client): healing,
        auditing and fallback then apply as live."""
        self.observer: Callable[[FeedEvent], None] | None = None
        """Sees every event before the engine acts on it (``snipe run --record``)."""
        self.unavailable = False
        self.errors = 0
        """Unexpected errors of the client, each retried after backoff (``_feedrun.py``)."""
        self.last_error: str | None = None
        """The latest of them, named by type (:func:`~._guard.describe`: never a key)."""
        self.connected = False
        self.generation = 0
        self._healed_generation = 0
        self._heal_after = math.inf
        self._audit_generation = -1
        self.distrusted = False
        self._seen: dict[str, float] = {}
        self._auditing = False
        self._missed_now = 0
        self.gaps_healed = 0
        self.missed = 0
        self.events = 0
        self.bought = 0
        self.confirm_searches = 0
        self.bought_items: set[str] = set()
        """Item ids the feed saw first that were bought: a purchase a feed event started
        (at once, or after its confirming search) that the service said was bought or
        reserved; not one refused, capped or of unknown outcome (one per purchase: bounded
        by the budget), so a summary can tell which purchases the feed saw first."""
        self._first_connected_at: float | None = None
        self._last_event_at: float | None = None
        self.down_at: float | None = None
        """When the client found the connection gone (its clock), at the last disconnect."""
        self._confirms: dict[str, bool] = {}
        self._confirms_of: object = None
        self._any_confirms = False
        # what the event path needs of a name's watching rules, by their tuple (_watching)
        self._ceilings: dict[int, Watching] = {}
        self._names: dict[str, Named] = {}
        """Name -> what its events need (:meth:`_name`), for the rules running now."""
        self.confirm = ConfirmQueue()
        self.known = KnownListings(settings.sticker_prices_for, settings.known_limit)
        """What recent searches showed of listings and stickers' prices (``_known.py``)."""
        """Feed listings waiting for their confirming search (``_confirm.py``)."""
        self.book = AuditBook(skew=settings.audit_skew, count_slack=settings.count_slack)
        """The cheap audit's view of the watched names (see :mod:`._auditbook`)."""
        self._full_at: float | None = None
        """When the last successful snapshot poll with this connection healed began."""
        self._pending: _Pending | None = None
        """A cheap audit's answer waiting ``audit_grace`` for its judgement."""
        self._slot_started = -math.inf
        self._suspects: dict[str, tuple[Suspect, str | None]] = {}
        """Searched name -> why the cheap audit suspects it and the game whose answer
        showed it, until its search answers."""
        self._missed_round = 0
        self.missed_full = 0
        self.missed_cheap = 0
        self.audits_full = 0
        self.audits_cheap = 0
        self.suspects = 0
        self.audit_bytes = 0

    # -- state ---------------------------------------------------------------------------

    @property
    def enabled(self) -> bool:
        return (self.client is not None or self.replayed) and not self.unavailable

    @property
    def trusted(self) -> bool:
        """Connected, its gap healed, and not caught missing listings."""
        return self.connected and self._healed_generation == self.generation and not self.distrusted

    @property
    def heal_pending(self) -> bool:
        """Connected, and no snapshot has healed this connection's gap yet."""
        return self.enabled and self.connected and self._healed_generation != self.generation

    @property
    def settings(self) -> FeedSettings:
        return self._settings

    @settings.setter
    def settings(self, settings: FeedSettings) -> None:
        self._settings = settings
        # read per feed event: worked out once
        self._cheap_tier = settings.full_audit_every > settings.audit_every

    @property
    def cheap_tier(self) -> bool:
        """Whether the audits between two full ones are cheap (``full_audit_every`` above
        ``audit_every``)."""
        return self._cheap_tier

    def cheap_audit_due(self, now: float) -> bool:
        if self._pending is not None and not self.trusted:
            self._pending = None  # down or distrusted since: the snapshot takes over
        return self._pending is not None or self._cheap_slot(now)

    def _cheap_slot(self, now: float) -> bool:
        """Whether the snapshot step at ``now`` is a cheap audit rather than a snapshot
        poll: the feed trusted, and the next full audit not due. The first poll after a
        heal is always full: the heal's snapshot may have been built before the
        connection, so it is no base for the full audit to come (see
        :data:`SNAPSHOT_REBUILT_EVERY`); the next one is."""
        return (
            self.enabled
            and self.cheap_tier
            and self.trusted
            and self._audit_generation == self.generation
            and self._full_at is not None
            and now < self._full_at + self.settings.full_audit_every
        )

    def wants_base(self) -> bool:
        """After a snapshot poll: whether the cheap audit's base is to be taken now (the
        feed trusted on this connection after a full poll, so the two pictures agree)."""
        return self.enabled and self.cheap_tier and self.trusted and self._full_at is not None

    def snapshot_period(self, every: float) -> float:
        """Seconds to the next snapshot poll: ``audit_every`` while trusted, else ``every``."""
        return max(every, self.settings.audit_every) if self.trusted else every

    def next_poll_at(self, started: float, every: float) -> float:
        """After a snapshot poll begun at ``started``: when the next is due. Normally
        :meth:`snapshot_period` after it; but a heal begun less than
        :data:`SNAPSHOT_REBUILT_EVERY` after the connection may have read a snapshot built
        before it, so a listing of those seconds is in neither that snapshot nor the feed:
        a second, full look is due once the snapshot has been rebuilt since the
        connection, not an ``audit_every`` later (its diff flags the new listings for a
        search; it audits nothing, see :meth:`poll_started`)."""
        due = started + self.snapshot_period(every)
        if (
            self.enabled
            and self.connected
            and self._healed_generation == self.generation
            and self._audit_generation != self.generation
        ):
            due = min(due, self._heal_after + SNAPSHOT_REBUILT_EVERY)
        return due

    def view(self, now: float) -> FeedView | None:
        if self.client is None and not self.replayed:
            return None
        health = self.client.health() if self.client is not None else None
        if self.unavailable:
            state = "unavailable"
        elif not self.connected:
            state = "connecting" if self.generation == 0 else "down"
        elif self._healed_generation != self.generation:
            state = "healing"
        else:
            state = "distrusted" if self.distrusted else "trusted"
        per_day = None
        received = health.bytes_received if health is not None else 0
        # the traffic is what the socket carried (compressed or not), not the payload
        wire = health.wire_bytes_received if health is not None else 0
        if self._first_connected_at is not None and now > self._first_connected_at:
            per_day = wire / (now - self._first_connected_at) * 86_400
        since = None if self._last_event_at is None else max(0.0, now - self._last_event_at)
        return FeedView(
            state=state,
            connected=self.connected,
            events=self.events,
            events_per_second=health.events_per_second if health is not None else 0.0,
            reconnects=max(0, self.generation - 1),
            gaps_healed=self.gaps_healed,
            seconds_since_event=since,
            missed=self.missed,
            bytes_received=received,
            bytes_per_day=per_day,
            bought=self.bought,
            confirm_searches=self.confirm_searches,
            set_aside=sum(health.set_aside.values()) if health is not None else 0,
            compressed=health.compressed if health is not None else None,
            confirm_waiting=len(self.confirm),
            confirm_told=self.confirm.told,
            confirm_found=self.confirm.found,
            confirm_skipped=tuple(sorted(self.confirm.skipped.items())),
            confirm_reused=self.known.reused,
            missed_full=self.missed_full,
            missed_cheap=self.missed_cheap,
            audits_full=self.audits_full,
            audits_cheap=self.audits_cheap,
            suspects=self.suspects,
            audit_bytes=self.audit_bytes,
            errors=self.errors,
            last_error=self.last_error,
        )

    # -- live ----------------------------------------------------------------------------

    async def run(self) -> None:
        """Live: run the client and hand every event to :meth:`Engine.on_feed_event`; an
        unexpected error of the client is logged, counted and retried after backoff; in
        ``auto``, give up when the feed never answers (see :mod:`._feedrun`)."""
        await run_feed(self)

    async def consume(self, receive: MemoryObjectReceiveStream[FeedBatch]) -> None:
        """Hand every event of ``receive``'s batches (:meth:`FeedClient.run_batches`) to
        :meth:`Engine.on_feed_event`, in order, until it is closed: one wake-up of this
        task per batch, not per event, and a turn of the event loop at least every
        :data:`DRAIN_SECONDS` of the clock, so a burst never holds the loop for long."""
        on_event = self.engine.on_feed_event
        now = self.engine.clock.now
        checkpoint = anyio.lowlevel.checkpoint
        async with receive:
            async for batch in receive:
                until = now() + DRAIN_SECONDS
                for event in batch:
                    await on_event(event)
                    if now() >= until:
                        await checkpoint()
                        until = now() + DRAIN_SECONDS

    # -- events --------------------------------------------------------------------------

    async def on_event(self, event: FeedEvent) -> None:
        """Act on ``event`` (:meth:`take`, then what it leaves to await)."""
        later = self.take(event)
        if later is not None:
            await later

    def take(self, event: FeedEvent) -> Awaitable[None] | None:
        """Act on ``event`` as far as it goes without waiting (all of it, but for a listing
        some rule's checks pass); returns what is left to await, its way through
        :meth:`Engine.decide` and the buyer, or ``None``. A plain call: no coroutine made
        and awaited per event (hundreds a second live, ~400,000 a backtest hour)."""
        if self.observer is not None:
            self.observer(event)
        if type(event) is FeedListingEvent or isinstance(event, FeedListingEvent):
            return self._listing(event)
        if isinstance(event, FeedRemovalEvent):
            self.events += 1  # never a sale: nothing reaches the reference book
            now = self.engine.clock.now()
            self._last_event_at = now
            removal = event.removal
            self.known.removed(removal.item_id, now)
            gone = self.confirm.removed(removal.item_id)
            if gone is not None:
                self._skipped([(gone, REMOVED)])
                self._unflag(gone.listing.name)
            name = removal.name
            # (a removal without a name: the book knows its name if it was told)
            if self._cheap_tier and (name is None or self._name(name)):
                self.book.told(name, removal.item_id, None, "removed", now)
        elif isinstance(event, FeedConnected):
            self._connected(event)
        elif isinstance(event, FeedDisconnected):
            self.connected = False
            self.down_at = event.at
            log.warning(
                "feed down (%s): polling the snapshot every %g s",
                event.reason,
                self.engine.settings.snapshot_every,
            )
            self.engine.snapshot_soon()
        return None

    def _connected(self, event: FeedConnected) -> None:
        now = self.engine.clock.now()
        self.connected = True
        self.generation = event.generation
        self.book.reset()  # no replay: what the engine knew is rebuilt after the heal
        self._pending = None
        self._full_at = None
        self._heal_after = now
        if self._first_connected_at is None:
            self._first_connected_at = now
        log.info(
            "feed connected (generation %d): healing the gap with a snapshot", event.generation
        )
        self.engine.snapshot_soon()

    # -- confirming searches ---------------------------------------------------------------

    def confirming(self, batch: tuple[str, ...]) -> dict[str, list[Candidate]]:
        """A search of ``batch`` is about to be sent: the candidates it confirms."""
        taken = self.confirm.take(batch)
        if taken:
            self.confirm_searches += 1
        return taken

    def confirmed(
        self,
        taken: dict[str, list[Candidate]],
        answer: Mapping[str, Sequence[Listing]],
        decisions: Sequence[Decision],
    ) -> set[str]:
        """The answer to a search that carried ``taken``: the candidates it shows were
        decided with the rest of its listings (``decisions``); those it does not show are
        skipped, counted and logged. Names with candidates told while it was on its way
        are flagged again. Returns the item ids of the candidates the rules accepted (the
        feed saw them first: :meth:`credit` them with what the buyer bought)."""
        settled = self.confirm.settle(taken, answer)
        accepted = {d.item_id for d in decisions if d.accepted}
        found = {c.listing.item_id for c in settled.found} & accepted
        self._skipped(settled.skipped)
        if settled.skipped:
            log.info(
                "confirming search: %d of %d feed listing(s) shown and decided; skipped %s",
                len(settled.found),
                len(settled.found) + len(settled.skipped),
                ", ".join(
                    f"{n} {k}"
                    for k, n in Counter(SKIP_KINDS[w] for _, w in settled.skipped).items()
                ),
            )
        now = self.engine.clock.now()
        for name in taken:
            if self.confirm.waiting(name):
                self._flag(name, self.confirm.promise(name), now, CONFIRM)
        return found

    def credit(self, found: set[str], bought: set[str]) -> None:
        """The confirmed candidates ``found`` (:meth:`confirmed`) that the buyer then
        ``bought``: purchases the feed saw first."""
        self.bought_items |= found & bought

    # -- the snapshot as safety net ------------------------------------------------------

    def poll_started(self) -> None:
        """A snapshot poll begins: it audits the feed when the previous poll began with
        the feed healed on this very connection, and late enough to read a snapshot built
        after the connection (see :data:`SNAPSHOT_REBUILT_EVERY`)."""
        self._auditing = (
            self.enabled
            and self.connected
            and self._healed_generation == self.generation
            and self._audit_generation == self.generation
        )
        self._missed_now = 0

    def to_flag(self, diff: SnapshotDiff, summaries: list[NameSummary]) -> list[NameSummary]:
        """The names of ``diff`` to flag for a search. Auditing: only those with new
        listings the feed never told (counted as missed); else all of them."""
        if not self._auditing or diff.first:
            return summaries
        now = self.engine.clock.now()
        view = self.engine.ruleset.view
        missed: set[str] = set()
        for change in diff:
            if (
                isinstance(change, NewListing)
                and change.item_id not in self._seen
                and view(change.name).rules
            ):
                missed.add(change.name)
                self._missed_now += 1
        self._forget(now)
        if missed:
            log.warning("feed audit: %d new listing(s) the feed never told", len(missed))
        return [s for s in summaries if s.name in missed]

    def poll_done(self, started: float) -> None:
        """A snapshot poll that began at ``started`` succeeded: a heal if it began after
        the connection, an audit's verdict if it audited."""
        if not self.enabled:
            return
        if self._auditing:
            self.audits_full += 1
            self.missed += self._missed_now
            self.missed_full += self._missed_now
            distrust = self._missed_now > self.settings.missed_limit
            if distrust and not self.distrusted:
                log.warning(
                    "feed distrusted: an audit found %d missed listings; polling the "
                    "snapshot every %g s",
                    self._missed_now,
                    self.engine.settings.snapshot_every,
                )
            self.distrusted = distrust
        if (
            self.connected
            and self._healed_generation != self.generation
            and started >= self._heal_after
        ):
            self._healed_generation = self.generation
            self.gaps_healed += 1
            self.distrusted = False
            log.info("feed gap healed (generation %d)", self.generation)
        if (
            self.connected
            and self._healed_generation == self.generation
            and started >= self._heal_after + SNAPSHOT_REBUILT_EVERY
        ):
            self._audit_generation = self.generation
        if self.connected and self._healed_generation == self.generation:
            self._full_at = started
        self._auditing = False

    # -- the cheap audit -----------------------------------------------------------------

    async def cheap_audit(self, games: Iterable[str | None], *, base_only: bool = False) -> None:
        """The cheap audit's step. With an answer waiting for its judgement: judge it
        (:meth:`_judge`). Else one ``GET /v1/prices`` per game in ``games``, kept for its
        judgement ``audit_grace`` seconds later (events of changes it shows may still be
        on their way), or made the base at once when there is none yet, or with
        ``base_only`` (right after a snapshot poll, which judged that time already)."""
        engine = self.engine
        clock = engine.clock
        if self._pending is not None and not base_only:
            self._judge(clock.now())
            return
        started = clock.now()
        view = engine.ruleset.view
        rows: dict[str, NameCount] = {}
        game_of: dict[str, str | None] = {}
        for game in games:
            async with engine.client.prices(game=cast("Game | None", game)) as stream:
                try:
                    async for item in stream:
                        if view(item.name).rules:
                            rows[item.name] = NameCount(item.count or 0, item.min)
                            game_of[item.name] = game
                finally:
                    self.audit_bytes += stream.bytes_downloaded
        ended = clock.now()
        self._slot_started = started
        if base_only or not self.book.has_base:
            self.book.judge(rows, started, ended, learn_only=True)
            self._pending = None
        else:
            self._pending = _Pending(rows, game_of, started, ended)

    def next_audit_at(self, every: float) -> float:
        """After a cheap audit's step: when the next step is due (the judgement of the
        answer just fetched, or the next audit slot)."""
        if self._pending is not None:
            return self._pending.ended + self.settings.audit_grace
        return self._slot_started + self.snapshot_period(every)

    def _judge(self, now: float) -> list[Suspect]:
        """Judge the answer waiting (:class:`AuditBook`) with the events told until
        ``now``, and flag the suspects for a search in the priority lane."""
        pending = self._pending
        assert pending is not None
        self._pending = None
        engine = self.engine
        judged = self.book.judge(pending.rows, pending.started, now) or []
        self.audits_cheap += 1
        self._missed_round = 0
        self._forget(now)
        for suspect in judged:
            name = engine._searched_name(suspect.name)
            self._suspects[name] = (suspect, pending.game_of.get(suspect.name))
            self.suspects += 1
            ceiling = engine._ceiling(suspect.name) or 0
            promise = ceiling - suspect.low if suspect.low is not None else 0
            self._flag(name, max(0, promise), now)
        if judged:
            log.warning(
                "feed audit (GET /v1/prices): %d suspect name(s), searched: %s",
                len(judged),
                ", ".join(f"{s.name} ({s.why})" for s in judged[:5]),
            )
        return judged

    def searched(self, items: Mapping[str, Sequence[Listing]], game: str | None) -> None:
        """A search of ``game`` answered (``items``: name -> its listings): for a name the
        cheap audit suspected, count the listings the feed should have told and did not
        (never told, and not in the last snapshot or dearer there); too many and the feed
        is distrusted. The listings themselves go through the engine's decisions as any
        search's do; what they show of stickers is kept (``_known.py``)."""
        if self.enabled:
            now = self.engine.clock.now()
            self.known.saw_answer(items, now)
            self.confirm.shown(items)  # told while it was on its way: no second search
            for name in items:  # the answer took their flag (SearchSchedule.searched)
                if self.confirm.waiting(name):
                    self._flag(name, self.confirm.promise(name), now, CONFIRM)
        if not self._suspects:
            return
        engine = self.engine
        now = engine.clock.now()
        proven = 0
        for name, listings in items.items():
            suspected = self._suspects.pop(name, None)
            if suspected is None:
                continue
            # else "not in the last snapshot" proves nothing
            if not engine._snapshot_covers(game or suspected[1]):
                continue
            for listing in listings:
                if listing.item_id in self._seen:
                    continue
                item = listing.item_id
                key: int | str = int(item) if item.isdigit() else item
                (before,) = engine.current_prices([key])
                if before == -1 or listing.price < before:
                    proven += 1
                    self._seen[listing.item_id] = now  # counted once (the full audit too)
        if not proven:
            return
        self.missed += proven
        self.missed_cheap += proven
        self._missed_round += proven
        log.warning("feed audit: a search found %d listing(s) the feed never told", proven)
        if self._missed_round > self.settings.missed_limit and not self.distrusted:
            self.distrusted = True
            log.warning(
                "feed distrusted: the cheap audit's searches found %d missed listings; "
                "polling the snapshot every %g s",
                self._missed_round,
                engine.settings.snapshot_every,
            )
            engine.snapshot_soon()

    def _forget(self, now: float) -> None:
        horizon = now - self.settings.remember_for
        if self.cheap_tier and self._full_at is not None:
            # a search of a suspect tells a listing never told from the ids told since the
            # last full snapshot: those must be remembered
            horizon = min(
                horizon, self._full_at - SNAPSHOT_REBUILT_EVERY - self.settings.audit_skew
            )
        seen = self._seen
        while seen:
            key = next(iter(seen))
            if seen[key] >= horizon:
                return
            del seen[key]


def feed_games(games: Iterable[str | None] | None, every: Iterable[str]) -> list[str]:
    """The games to subscribe to: the rules' (``None`` in them, or none: every game)."""
    chosen = list(games) if games is not None else [None]
    if None in chosen:
        return sorted(every)
    return sorted(g for g in chosen if g is not None)
