"""When each kind of the engine's step is next due.

:class:`StepTimes` is a part of :class:`~engine.sniper.Engine` (a mixin, so the engine's
attributes are its own): :meth:`~StepTimes.next_due` per kind, for the live runners and
:meth:`Engine.step`, and for them all, for a backtest's driver, which asks it after every
feed record it hands over (a quarter of the ~430 events a second): so it is worked out
with no call per kind, and the search's time (the rate limiter's and the pacer's windows)
only when the feed does not settle it first; and it is kept while nothing can have changed
it (see :meth:`StepTimes.next_due`). It lives apart to keep ``_engine.py`` a readable
size.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import anyio

from .._clock import Clock
from .._limiter import RateLimiter
from ..reference import ReferenceHub
from ._schedule import SearchPacer, SearchSchedule

if TYPE_CHECKING:
    from ._engine import EngineSettings
    from ._feedwatch import FeedWatch

__all__ = ["STEP_KINDS", "StepTimes"]

STEP_KINDS = ("snapshot", "references", "reconcile", "search", "status")
"""The kinds of step, in the order they run when due at the same instant: a snapshot's
flags are searched at once, and a search reads the references and the balance of now."""


class StepTimes:
    """The due times of :class:`~engine.sniper.Engine`'s steps (see the module
    docstring); the attributes below are the engine's, set by its constructor."""

    settings: EngineSettings
    clock: Clock
    limiter: RateLimiter
    pacer: SearchPacer
    schedule: SearchSchedule
    references: ReferenceHub
    feedwatch: FeedWatch
    _due_at: dict[str, float]
    _wake: anyio.Event
    _due_kept: tuple[anyio.Event, float] | None
    """``next_due()`` and the wake event it was worked out under, while it cannot change
    (see :meth:`next_due`); ``None`` after a step."""
    _search_stopped: bool
    _catalogue_games: list[str]
    _polling: bool
    _next_snapshot_at: float | None

    def step_kinds(self) -> tuple[str, ...]:
        """The kinds of step this engine runs, in the order they run at one instant."""
        if self.settings.use_snapshot:
            return STEP_KINDS
        return tuple(k for k in STEP_KINDS if k != "snapshot")

    def next_due(self, kind: str | None = None) -> float:
        """When ``kind`` (or, without it, the earliest kind) of step is next due, on the
        engine's clock; ``math.inf`` when nothing will be due before something else
        changes (a search with nothing to search waits for a snapshot). Only meaningful
        after :meth:`start`.

        Without ``kind``, the answer is kept until the next step or wake (:meth:`wake`,
        whose event is replaced), while the search is settled by the engine's state
        alone (nothing to search, or a trusted feed with no flagged name and every name
        searched once): then every kind's time is a time set by a step, and what makes
        one sooner between steps (a flag, a snapshot made due, the feed connected or
        lost) wakes the live runners, which rely on the same. The pacer's and the
        limiter's windows are read from the clock: with them, it is worked out anew."""
        due_at = self._due_at
        inf = math.inf
        if kind is None:  # the least of every kind's next_due(kind), inline
            kept, woken = self._due_kept, self._wake
            if kept is not None and kept[0] is woken:  # (once per feed record: mostly)
                return kept[1]
            # (comparisons, not min and max: a builtin min or max call costs about a
            # thousand instructions, and a backtest asks this once per feed record)
            due = due_at.get("reconcile", inf)
            status = due_at.get("status", inf)
            if status < due:
                due = status
            references, hub = due_at.get("references", inf), self.references.next_due()
            if hub > references:
                references = hub
            if references < due:
                due = references
            if self.settings.use_snapshot:
                snapshot = due_at.get("snapshot", inf)
                if snapshot < due:
                    due = snapshot
            if self._search_settled():
                self._due_kept = (woken, due)
                return due
            search = self._search_due(due_at.get("search", inf))
            return search if search < due else due
        if kind == "search":
            return self._search_due(due_at.get(kind, inf))
        if kind == "references":
            return max(due_at.get(kind, inf), self.references.next_due())
        return due_at.get(kind, inf)

    def _search_settled(self) -> bool:
        """Whether no search is due, whatever the time, until a step or a wake: what
        :meth:`_search_due` and :meth:`next_search_at` return ``math.inf`` for first."""
        schedule = self.schedule
        if self._search_stopped or not (schedule.watched or self._catalogue_games):
            return True
        return not schedule.hot_count and self.feedwatch.trusted and not schedule.never_searched()

    def _search_due(self, due: float) -> float:
        if self._search_stopped or not (self.schedule.watched or self._catalogue_games):
            return math.inf
        at = self.next_search_at()
        return at if at > due else due

    def next_search_at(self) -> float:
        """When the next search should go out: for flagged names, at once (as the rate
        limiter allows), but evenly spaced when the priority lane is busy while the live
        feed is connected (see :class:`SearchPacer`); else when the :class:`SearchPacer`
        lets a background search go; ``math.inf`` while it waits for the next snapshot."""
        schedule, feed = self.schedule, self.feedwatch
        if schedule.hot_count:
            free = self.limiter.next_free("search")
            # Only with the feed: its candidates are few names flagged again and again, a
            # search each would spend the window in seconds. The snapshot's flags can be
            # hundreds of names, ranked: spaced searches would serve the first ranks again
            # and again and leave the rest unsearched (bench_detection: a third of the
            # snapshot way's deals never searched), where a burst clears them all.
            if feed.connected:
                return max(free, self.pacer.priority_at(self.clock.now()))
            return free
        if feed.trusted and not schedule.never_searched():
            # The feed tells every new listing and price change as it happens: a background
            # search of a name searched before would only repeat it (and cost the bandwidth
            # of its answer). Searches that confirm an event or a suspect are flagged: above.
            # (Settled before the limiter's and pacer's windows are worked out.)
            return math.inf
        free = self.limiter.next_free("search")
        now = self.clock.now()
        flags_at = now if self._polling else self._next_snapshot_at
        return max(free, self.pacer.background_at(now, flags_at, feed.connected))
