"""The cheap tier of the feed's audit: the engine's own view of each watched name, to
compare with ``GET /v1/prices`` (per name: ``count`` listings, ``min`` the lowest price).
Pure: it is told what the feed said and given the service's answers with their times.

Between two answers the engine knows, per watched name, the previous answer's ``count``
and ``min`` (the *base*) and every ``new``, ``update`` and ``removed`` event the feed told
since. A name is a *suspect* when the service's ``min`` is below everything the engine
knows of it (the base's ``min`` and every price the feed told since), or when its
``count`` differs from the base's count moved by the feed's events by more than the
tolerance.

The answer is a picture of some instant the engine does not know exactly (the request's
way there and back, and the service may cache it), and the feed's events arrive a moment
after the changes they tell: an event close to either answer may or may not be in it.
Such events make the tolerance, they are never a verdict:

- an answer is judged a little after it arrived (``until``: the caller waits for the
  events of changes it already shows), and every price told from ``skew`` seconds before
  the base's request until then counts as known, so a listing the base answer missed but
  the feed told is no suspect;
- every listing with an event from ``skew`` seconds before the base's request to
  ``skew`` seconds after the base was judged, or from ``skew`` seconds before this
  answer's request on, may be counted or not: each adds one to the count's tolerance,
  on top of ``count_slack``;
- so does every listing with two events less than :data:`REORDER` seconds apart: the
  feed may deliver them out of order (an ``update`` before its ``new``, after its
  ``removed``), and the order decides whether it counts.

A suspect is only a reason to search the name (the search says what is listed now); what
that search proves missing is counted by :class:`~engine.sniper._feedwatch.FeedWatch`.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Mapping
from dataclasses import dataclass
from operator import itemgetter
from typing import Any, Literal

__all__ = ["AuditBook", "NameCount", "Suspect"]

Kind = Literal["new", "update", "removed"]

REORDER = 2.0
"""Seconds within which two events of one listing may arrive in either order."""

_NAMES_KEPT = 200_000
"""Item ids whose name is kept for a removal that leaves it out, before the oldest go."""


@dataclass(frozen=True, slots=True)
class NameCount:
    """One name's row of ``GET /v1/prices``: listings and the lowest price (``None``:
    no price given)."""

    count: int
    low: int | None


@dataclass(frozen=True, slots=True)
class Suspect:
    """A watched name whose row disagrees with what the engine knows of it. ``why`` is
    ``cheaper`` (the service's ``min`` below every price known) or ``count``."""

    name: str
    why: Literal["cheaper", "count"]
    low: int | None
    """The service's ``min``."""
    known_low: int | None
    """The lowest price the engine knew (``None``: none)."""
    count: int
    expected: int
    tolerance: int


_Told = tuple[float, str, int | None, Kind]
"""What the feed told of one listing: when, its item id, its price (``None``: a removal),
the event's kind. A plain tuple of atoms, not an object: the book keeps every event of a
watched name for an audit period (at 430 events a second, tens of thousands), and the
cyclic GC untracks a tuple of atoms the first time it sees it, where each instance of a
class (a slotted dataclass, a NamedTuple) would stay tracked and be walked by every full
pass of the collector: each such pass is a stall of the event loop (~1 us an object,
bench/bench_feed_decode.py)."""

_time_told = itemgetter(0)


class AuditBook:
    """What the feed told per watched name since the last ``/v1/prices`` answer, and that
    answer (see the module docstring)."""

    def __init__(self, *, skew: float = 30.0, count_slack: int = 0) -> None:
        if skew < 0 or count_slack < 0:
            raise ValueError("skew and count_slack must not be negative")
        self.skew = skew
        self.count_slack = count_slack
        self._base: dict[str, NameCount] | None = None
        self._base_started = -math.inf
        self._base_until = -math.inf
        self._told: dict[str, list[_Told]] = {}
        self._unordered: set[str] = set()
        """Names some of whose events were told with an earlier time than the one before
        (a clock stepped back): their events are pruned one by one, not cut by time."""
        self._name_of: dict[str, str] = {}
        """Item id -> name, for a removal that does not name its listing."""

    @property
    def has_base(self) -> bool:
        return self._base is not None

    def reset(self) -> None:
        """Forget the base and what was told (a new connection: the feed has no replay)."""
        self._base = None
        self._told.clear()
        self._unordered.clear()
        self._name_of.clear()

    def told(
        self, name: str | None, item_id: str, price: int | None, kind: Kind, at: float
    ) -> None:
        """The feed told ``kind`` of listing ``item_id`` of watched ``name`` at ``at`` (a
        removal may leave ``name`` out when the listing was told before)."""
        if name is None:
            name = self._name_of.get(item_id)
            if name is None:
                return
        elif kind != "removed":
            self._name_of[item_id] = name
        told = self._told.get(name)  # (per watched event: no list made when there is one)
        if told is None:
            self._told[name] = [(at, item_id, price, kind)]
        else:
            if at < told[-1][0]:
                self._unordered.add(name)
            told.append((at, item_id, price, kind))

    def judge(
        self,
        rows: Mapping[str, NameCount],
        started: float,
        until: float,
        *,
        learn_only: bool = False,
    ) -> list[Suspect] | None:
        """Compare the answer ``rows`` (watched names only; a name absent has no listing)
        whose request went at ``started`` with what the engine knows at ``until`` (the end
        of the answer or later: the events told until then are in), then make it the
        base. The suspects, or ``None`` without a base (the first answer is only learnt)
        or with ``learn_only`` (a full audit just judged the same time)."""
        suspects: list[Suspect] | None = None
        if self._base is not None and not learn_only:
            suspects = []
            for name in sorted(set(rows) | set(self._base) | set(self._told)):
                suspect = self._judge_name(name, rows.get(name), started)
                if suspect is not None:
                    suspects.append(suspect)
        self._base = dict(rows)
        self._base_started, self._base_until = started, until
        self._prune(started - self.skew)
        return suspects

    def _judge_name(self, name: str, row: NameCount | None, started: float) -> Suspect | None:
        assert self._base is not None
        base = self._base.get(name)
        count, low = (row.count, row.low) if row is not None else (0, None)
        known_low = base.low if base is not None else None
        # per listing told: [first told as new, listed after its last event, the time of
        # its last event, unsure]: one lookup an event (an audit judges tens of thousands)
        states: dict[str, list[Any]] = {}
        since = self._base_started - self.skew
        # an event this close to either answer may or may not be in it
        near_base, near_answer = self._base_until + self.skew, started - self.skew
        for at, item_id, price, kind in self._told.get(name, ()):
            if at < since:
                continue
            still = kind != "removed"
            if price is not None and still and (known_low is None or price < known_low):
                known_low = price
            state = states.get(item_id)
            if state is None:
                states[item_id] = [kind == "new", still, at, at <= near_base or at >= near_answer]
                continue
            if not state[3] and (at - state[2] < REORDER or at <= near_base or at >= near_answer):
                state[3] = True
            state[1] = still
            state[2] = at
        # a listing first told as new was not in the base; one first told otherwise was
        expected = (base.count if base is not None else 0) + sum(
            int(listed) - int(not first_new) for first_new, listed, _, _ in states.values()
        )
        unsure = [state for state in states.values() if state[3]]
        tolerance = self.count_slack + len(unsure)
        if low is not None and (known_low is None or low < known_low):
            return Suspect(name, "cheaper", low, known_low, count, expected, tolerance)
        if abs(count - expected) > tolerance:
            return Suspect(name, "count", low, known_low, count, expected, tolerance)
        return None

    def _prune(self, before: float) -> None:
        told_by_name, unordered = self._told, self._unordered
        for name, told in list(told_by_name.items()):
            if name in unordered:
                kept = [t for t in told if t[0] >= before]
            else:  # told in time order (the clock's): cut where ``before`` falls
                kept = told[bisect_left(told, before, key=_time_told) :]
            if kept:
                told_by_name[name] = kept
            else:
                del told_by_name[name]
                unordered.discard(name)
        if len(self._name_of) > _NAMES_KEPT:  # ids told long ago whose removal never came
            live = {t[1] for told in self._told.values() for t in told}
            self._name_of = {i: n for i, n in self._name_of.items() if i in live}
