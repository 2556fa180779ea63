"""Which names to search next: a pure function of what we know and the time.

The shared search budget (20 requests a minute, 50 names each) is the scarcest thing snipe
has. The whole-market snapshot is free and says, every 10 s, which names just got a new
listing or a cheaper one; those names are searched first (their details decide a purchase),
and the remaining budget walks the other watched names, stalest first, so every watched
name is still looked at regularly.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

__all__ = ["MAX_NAMES_PER_SEARCH", "SearchSchedule"]

MAX_NAMES_PER_SEARCH = 50


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

    def __post_init__(self) -> None:
        if not 1 <= self.batch_size <= MAX_NAMES_PER_SEARCH:
            raise ValueError(f"batch_size must be 1 to {MAX_NAMES_PER_SEARCH}")

    def watch(self, names: Iterable[str]) -> None:
        """Replace the set of watched names (rules reloaded, patterns re-resolved)."""
        self.watched = frozenset(names)
        self._hot = {n: v for n, v in self._hot.items() if n in self.watched}

    def flag(self, name: str, *, promise: int, at: float) -> None:
        """The snapshot shows a candidate for ``name``: search it soon. ``promise`` ranks
        flagged names (higher first), e.g. the saving against the previous cheapest."""
        if name not in self.watched:
            return
        previous = self._hot.get(name)
        if previous is None or promise > previous[0]:
            self._hot[name] = (promise, previous[1] if previous else at)

    @property
    def hot_count(self) -> int:
        return len(self._hot)

    def next_batch(self, group_of: Callable[[str], object] | None = None) -> tuple[str, ...]:
        """The next names to search, at most ``batch_size``: flagged first, then stalest.

        With ``group_of``, every name of the batch is in the group of the most urgent name
        (one search request covers one game), the others waiting for a later batch.
        """
        hot = sorted(self._hot, key=lambda n: (-self._hot[n][0], self._hot[n][1], n))
        rest = sorted(
            (n for n in self.watched if n not in self._hot),
            key=lambda n: (self._last_searched.get(n, float("-inf")), n),
        )
        ordered = itertools.chain(hot, rest)
        if group_of is not None:
            first = next(ordered, None)
            if first is None:
                return ()
            group = group_of(first)
            ordered = itertools.chain((first,), (n for n in ordered if group_of(n) == group))
        return tuple(itertools.islice(ordered, self.batch_size))

    def searched(self, names: Iterable[str], *, at: float) -> None:
        """Record that ``names`` were searched at ``at``; they stop being flagged."""
        for name in names:
            self._last_searched[name] = at
            hot = self._hot.pop(name, None)
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
