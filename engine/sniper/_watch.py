"""Watching the prices snapshot: the snapshot step's polls, diffs and flags.

:class:`SnapshotWatch` is a part of :class:`~engine.sniper.Engine` (a mixin, so the
engine's attributes are its own): it fetches and diffs the snapshot of the games the rules
watch, resolves the rules' name patterns from the first one, and flags watched names with
a new listing or a price drop a rule could afford for an early search. It lives apart only
to keep ``_engine.py`` a readable size; the engine's docstring says how the steps fit.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, cast

import anyio

from .._clock import Clock
from .._errors import APIError, RateLimited, Unavailable
from ..client import GAMES, Game, MarketClient
from ..reference import ReferenceHub
from ..rules import RuleSet
from ..snapshot import NameSummary, SnapshotTracker
from ._bandwidth import REDISCOVER_EVERY
from ._schedule import SearchSchedule
from ._status import EngineStatus

if TYPE_CHECKING:
    from ._engine import EngineSettings
    from ._feedwatch import FeedWatch

__all__ = ["SnapshotWatch"]

log = logging.getLogger("snipe.engine")


class SnapshotWatch:
    """The snapshot-watching methods of :class:`~engine.sniper.Engine` (see the module
    docstring); the attributes below are the engine's, set by its constructor."""

    ruleset: RuleSet
    client: MarketClient
    clock: Clock
    settings: EngineSettings
    status: EngineStatus
    schedule: SearchSchedule
    references: ReferenceHub
    include_hold: bool
    _trackers: dict[str | None, SnapshotTracker]
    _rule_games: tuple[str | None, ...] | None
    _games_found: set[str]
    _games_seen_at: float | None
    _next_snapshot_at: float | None
    _snapshot_failures: int
    _polling: bool
    _wake: anyio.Event
    _due_at: dict[str, float]
    feedwatch: FeedWatch

    def wake(self) -> None:
        """Live: make every runner read its due time again (a flag, a snapshot made due)."""
        woken, self._wake = self._wake, anyio.Event()
        woken.set()

    def snapshot_soon(self) -> None:
        """Make the snapshot step due now (a feed connected: its gap is to heal; the feed
        went down: the snapshot takes over), unless it is already."""
        self._due_at["snapshot"] = min(self._due_at.get("snapshot", math.inf), self.clock.now())
        self.wake()

    def _ceiling(self, name: str) -> int | None:
        rules = self.ruleset.view(name).rules
        return max((r.max_price for r in rules), default=None)

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
        if self.feedwatch.cheap_audit_due(started):
            # a trusted feed between two full audits: GET /v1/prices, not the snapshot
            try:
                await self.feedwatch.cheap_audit(self.snapshot_games())
                next_at = self.feedwatch.next_audit_at(every)
            finally:
                self._next_snapshot_at = max(next_at, self.clock.now())
                self.wake()
            return
        self._polling = True
        self.feedwatch.poll_started()
        try:
            await self._poll_snapshot()
            self._snapshot_failures = 0
            self.feedwatch.poll_done(started)
            if self.feedwatch.wants_base():
                await self._audit_base()
            # A trusted feed: the snapshot only audits it, slowly. A poll slower than half
            # the period (a huge market, a busy machine) is followed by a rest as long as
            # itself, so polling never takes all the CPU.
            ended = self.clock.now()
            next_at = self.feedwatch.next_poll_at(started, every)
            next_at = max(next_at, ended + (ended - started))
            if self.feedwatch.heal_pending:  # connected during this poll: heal at once
                next_at = ended
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
            self.wake()

    async def _audit_base(self) -> None:
        """The cheap audit's base, taken right after a full snapshot poll. A failure only
        delays it: the next cheap audit's answer becomes the base instead of a verdict."""
        try:
            await self.feedwatch.cheap_audit(self.snapshot_games(), base_only=True)
        except (APIError, OSError) as exc:
            log.warning("feed audit: GET /v1/prices failed, no base yet: %s", exc)

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

    def _snapshot_covers(self, game: str | None) -> bool:
        """Whether the snapshots last polled hold every listing of ``game`` (``None``: of
        whichever game): a listing missing from them is not listed."""
        if None in self._trackers:
            return True
        if game is None:
            return set(GAMES) <= set(self._trackers)
        return game in self._trackers

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
                # Parsed and compared as it streams in; only the rows that changed are parsed
                # (a replay's answer may tell them itself: stream.changes).
                diff = await tracker.aupdate_csv(stream, changes=stream.changes)
            finally:
                self.status.snapshot_bytes[label] += stream.bytes_downloaded
        self.references.observe_diff(diff, self, self.clock.now())
        if diff.first:  # the first snapshot is always parsed whole
            names = diff.snapshot.names if diff.snapshot is not None else ()
            self._watch(names)
            return names
        summaries = diff.names_cheapest_first()
        self._flag(self.feedwatch.to_flag(diff, summaries))
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
