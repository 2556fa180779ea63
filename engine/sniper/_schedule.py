"""Which names to search next: a pure function of what we know and the time.

The shared search budget (20 requests a minute, 50 names each) is the scarcest thing snipe
has. The whole-market snapshot is free and says, every 10 s, which names just got a new
listing or a cheaper one; those names are searched first (their details decide a purchase),
and the remaining budget walks the other watched names, stalest first, so every watched
name is still looked at regularly.

:class:`SearchSchedule` says *which* names; :class:`SearchPacer` says *when* a background
search may go out: evenly spaced rather than in bursts (a burst of 20 at the start of each
minute would leave nothing for a flagged name until the next minute), and never into the
slot the search right after the next snapshot needs, so a flagged name is searched as soon
as the snapshot shows it.
"""

from __future__ import annotations

import itertools
import math
import operator
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

__all__ = [
    "MAX_LISTINGS_PER_NAME",
    "MAX_NAMES_PER_SEARCH",
    "SEARCH_WINDOW",
    "SearchPacer",
    "SearchSchedule",
]

MAX_NAMES_PER_SEARCH = 50
MAX_LISTINGS_PER_NAME = 50
"""A v2 search shows at most this many listings of a name, the cheapest (interface.md
2.1): a dearer one is not in its answer."""
SEARCH_WINDOW = 60.0
"""Seconds of the service's sliding search window (interface.md section 8)."""


@dataclass
class SearchSchedule:
    """Keeps per-name freshness and the queue of names the snapshot flagged.

    ``hot`` names are served first, the most promising (largest drop below the previous
    cheapest, then earliest flagged) first; then watched names by the time they were last
    searched, never-searched first, ties broken by name so the order is deterministic.
    """

    watched: frozenset[str] = frozenset()
    batch_size: int = MAX_NAMES_PER_SEARCH
    _last_searched: dict[str, float] = field(default_factory=dict)
    _hot: dict[str, tuple[int, float]] = field(default_factory=dict)
    flagged_at: dict[str, float] = field(default_factory=dict)
    """Name -> when the snapshot first flagged it, for names whose latest search was
    flagged (metrics measure detection latency from there)."""
    _sources: dict[str, set[str]] = field(default_factory=dict)
    """Flagged name -> who flagged it (:meth:`flag`'s ``source``), for :meth:`unflag`."""
    _never: tuple[frozenset[str], int, frozenset[str]] | None = field(
        default=None, repr=False, compare=False
    )
    """:meth:`never_searched` as of ``(watched, len(_last_searched))``: names are only
    ever added to ``_last_searched``, so the answer holds while both do (the engine asks
    once per feed event, through ``Engine.next_due``)."""

    def __post_init__(self) -> None:
        if not 1 <= self.batch_size <= MAX_NAMES_PER_SEARCH:
            raise ValueError(f"batch_size must be 1 to {MAX_NAMES_PER_SEARCH}")

    def watch(self, names: Iterable[str]) -> None:
        """Replace the set of watched names (rules reloaded, patterns re-resolved)."""
        self.watched = frozenset(names)
        self._hot = {n: v for n, v in self._hot.items() if n in self.watched}
        self._sources = {n: v for n, v in self._sources.items() if n in self._hot}

    def flag(self, name: str, *, promise: int, at: float, source: str = "") -> None:
        """The snapshot shows a candidate for ``name``: search it soon. ``promise`` ranks
        flagged names (higher first), e.g. the saving against the previous cheapest.
        ``source`` names who flagged it, for :meth:`unflag` (``""``: never withdrawn)."""
        if name not in self.watched:
            return
        previous = self._hot.get(name)
        if previous is None or promise > previous[0]:
            self._hot[name] = (promise, previous[1] if previous else at)
        self._sources.setdefault(name, set()).add(source)

    def unflag(self, name: str, *, source: str) -> None:
        """``source`` no longer needs ``name`` searched: it leaves the flagged names when
        nobody else flagged it (a search of it would tell nobody anything)."""
        sources = self._sources.get(name)
        if sources is None:
            return
        sources.discard(source)
        if not sources:
            del self._sources[name]
            self._hot.pop(name, None)

    @property
    def hot_count(self) -> int:
        return len(self._hot)

    def next_batch(
        self, group_of: Callable[[str], object] | None = None, *, flagged_only: bool = False
    ) -> tuple[str, ...]:
        """The next names to search, at most ``batch_size``: flagged first, then stalest
        (with ``flagged_only``, only names never searched, and none when a name is
        flagged: every name costs its answer's bytes, ~11 KB of JSON for 50 listings, and
        the live feed already tells what a searched name's next search would; what was
        listed before it connected is shown by a name's first search alone).

        With ``group_of``, every name of the batch is in the group of the most urgent name
        (one search request covers one game), the others waiting for a later batch.
        """
        hot = sorted(self._hot, key=lambda n: (-self._hot[n][0], self._hot[n][1], n))
        if flagged_only:
            rest = [] if hot else sorted(self.never_searched())
        else:
            # (time, name) pairs sorted, not names by a key function: a lambda call per
            # watched name was most of a batch's cost
            names = self.watched if not hot else [n for n in self.watched if n not in self._hot]
            last = map(self._last_searched.get, names, itertools.repeat(float("-inf")))
            rest = list(map(operator.itemgetter(1), sorted(zip(last, names, strict=True))))
        ordered = itertools.chain(hot, rest)
        if group_of is not None:
            first = next(ordered, None)
            if first is None:
                return ()
            group = group_of(first)
            ordered = itertools.chain((first,), (n for n in ordered if group_of(n) == group))
        return tuple(itertools.islice(ordered, self.batch_size))

    def never_searched(self) -> frozenset[str]:
        """The watched names no search has shown yet (at start, or new in the rules)."""
        never = self._never
        if never is None or never[0] is not self.watched or never[1] != len(self._last_searched):
            searched = self._last_searched
            unsearched = frozenset(self.watched - searched.keys())
            never = self._never = (self.watched, len(searched), unsearched)
        return never[2]

    def searched(self, names: Iterable[str], *, at: float) -> None:
        """Record that ``names`` were searched at ``at``; they stop being flagged."""
        for name in names:
            self._last_searched[name] = at
            hot = self._hot.pop(name, None)
            self._sources.pop(name, None)
            if hot is not None:
                self.flagged_at[name] = hot[1]
            else:
                self.flagged_at.pop(name, None)

    def staleness(self, now: float) -> tuple[float, float]:
        """(median, worst) seconds since a watched name was last searched; never searched
        counts as infinitely stale."""
        if not self.watched:
            return (0.0, 0.0)
        ages = sorted(now - self._last_searched.get(n, float("-inf")) for n in self.watched)
        return (ages[len(ages) // 2], ages[-1])

    def coverage(self, now: float) -> tuple[int, float | None, float | None]:
        """(names not searched yet, median and worst seconds since a searched name was last
        searched; ``None`` when none was)."""
        last = self._last_searched
        ages = sorted(now - last[n] for n in self.watched if n in last)
        waiting = len(self.watched) - len(ages)
        if not ages:
            return (waiting, None, None)
        return (waiting, ages[len(ages) // 2], ages[-1])


@dataclass
class SearchPacer:
    """When the next background search may go out. Pure: it only knows the searches it
    was told of (:meth:`sent`) and the times it is given.

    A background search waits ``period / calls`` after the previous one (the budget spread
    evenly), and waits for the next snapshot rather than leave fewer than ``reserve`` free
    slots in the window as it will be when that snapshot's flags arrive.

    A search for flagged names (the priority lane) goes as soon as the rate limiter
    allows while the window holds fewer than ``paced_above`` searches (flags now and
    then: the snapshot's every 10 s). Beyond that, one every ``period / calls`` after
    the previous one (:meth:`priority_at`): when the live feed keeps names flagged, a
    search sent for each one flagged would spend the window's 20 searches in a few
    seconds on a name or two each, and every name flagged after them would wait most
    of a minute; spaced, each search carries every name flagged since the last and none
    waits more than 3 s, and the lane still gets the whole limit (20 a minute) when it
    needs it. ``paced_above`` is small: the searches sent at once before the pace
    count in the window, and the first minute of a saturated lane waits once for them
    to leave it (a burst of 10 left a gap of 30 s). (A bucket of tokens refilled over
    quiet spells was tried: its bursts left a gap each minute, or cost the lane 15% of
    its throughput.)
    ``calls=None`` is an unlimited budget (a partner account): nothing waits.
    """

    calls: int | None = 20
    period: float = SEARCH_WINDOW
    reserve: int = 1
    paced_above: int = 3
    feed_keeps_free: int = 10
    _sent: deque[float] = field(default_factory=deque)
    _last_background: float = -math.inf
    _last_priority: float = -math.inf

    @classmethod
    def for_limit(cls, calls: int | None, reserve: int) -> SearchPacer:
        """The pacer of a search limit the rules allow (1 to 600 a minute, or none): the
        reserve and the searches sent before the pace within it, and half the window
        kept free for the feed's confirmations, whatever the limit."""
        if calls is None:
            return cls(calls=None, reserve=0, feed_keeps_free=0)
        return cls(
            calls=calls,
            reserve=min(reserve, calls - 1),
            paced_above=min(cls.paced_above, calls),
            feed_keeps_free=calls // 2,
        )

    def __post_init__(self) -> None:
        if self.calls is not None and not 0 <= self.reserve < self.calls:
            raise ValueError(f"reserve must be 0 to {self.calls - 1}, got {self.reserve}")
        if self.calls is not None and not 0 <= self.paced_above <= self.calls:
            raise ValueError(f"paced_above must be 0 to {self.calls}, got {self.paced_above}")
        if self.calls is not None and not 0 <= self.feed_keeps_free < self.calls:
            raise ValueError(
                f"feed_keeps_free must be 0 to {self.calls - 1}, got {self.feed_keeps_free}"
            )

    def sent(self, at: float, *, background: bool) -> None:
        """A search went out at ``at``."""
        self._sent.append(at)
        if background:
            self._last_background = at
        else:
            self._last_priority = at
        while self._sent and self._sent[0] + self.period <= at:
            self._sent.popleft()

    def _slot_left_at(self, now: float, most: int) -> float:
        """When the window, as it is at ``now`` and with nothing sent meanwhile, holds
        fewer than ``most`` searches: ``now`` if it already does."""
        held = [t for t in self._sent if t + self.period > now]
        over = len(held) - most + 1
        return now if over <= 0 else held[over - 1] + self.period

    def priority_at(self, now: float) -> float:
        """The earliest time a search for flagged names may go out, ``now`` or later
        (the rate limiter may hold it longer)."""
        if self.calls is None:
            return now
        in_window = sum(1 for t in self._sent if t + self.period > now)
        if in_window < self.paced_above:
            return now
        return max(now, self._last_priority + self.period / self.calls)

    def background_at(self, now: float, flags_at: float | None, feed: bool = False) -> float:
        """The earliest time a background search may go out, ``now`` or later, or
        ``math.inf`` if it must wait for the snapshot expected at ``flags_at`` (``None``:
        no snapshot is expected; a ``flags_at`` in the past is one being taken now).

        With ``feed`` (the live feed connected), it also leaves ``feed_keeps_free`` of the
        window's slots (the engine gives half) to the priority lane: the feed flags names
        to confirm at any moment, not at a snapshot's boundary, and a sweep spaced at the whole
        budget's pace (the first search of every watched name) would fill the window
        and hold each confirmation until a slot left it (bench_detection: stickered
        deals' p95 22.6 s, the waits bunched at the first minute's end)."""
        if self.calls is None:
            return now
        due = max(now, self._last_background + self.period / self.calls)
        if feed and self.feed_keeps_free:
            due = max(due, self._slot_left_at(now, self.calls - self.feed_keeps_free))
        if flags_at is None or due > flags_at:
            return due
        in_window = sum(1 for t in self._sent if t + self.period > flags_at)
        if in_window + 1 > self.calls - self.reserve:
            return math.inf
        return due
