"""Client-side rate limits: sliding windows with priority lanes.

The service counts calls per endpoint family in a sliding window (interface.md section 8:
20 search-by-name calls per 60 s shared by v1 and v2, 60 buy-order actions per 60 s, 5
set-platform-api-key calls per 60 s) and answers 429 past it. snipe keeps its own count so
it never gets there, and honours a 429's wait when it does.

Design:

- One :class:`_Bucket` per budget holds the calls still inside the window, a pause (the
  end of a 429's wait) and the callers waiting, queued by :class:`Lane` and first-come
  first-served within a lane.
- **Exact under any network timing** (:meth:`RateLimiter.hold`): the service counts a call
  when it *arrives*, some time between our sending it and its answer arriving. So a call
  holds its slot from the moment it is sent until its answer arrived *plus* the window:
  whatever the delays each way, the call has left the service's window before its slot is
  given to another, and the service can never count one call too many. The price is the
  round trip per call, no more. (:meth:`RateLimiter.acquire` starts the window when the
  slot is granted, for callers that cannot tell when an answer arrived.)
- Only the caller at the head of the queue ever waits on the clock, and only until the
  computed instant a slot frees (the oldest call in the window leaves it, or the pause
  ends). It then checks and records its call in one synchronous step, so no other task can
  slip in between, and hands the head over to the next caller. There is no polling loop.
- A caller that is cancelled leaves the queue without taking a slot and, if it was at the
  head, wakes the next one, so nobody waits behind it.

- **Across restarts** (:meth:`RateLimiter.attach_journal`): the service counts per
  account, not per process. With a :class:`~engine._limitjournal.LimitJournal` attached,
  each call granted and each answer is appended to a file, and a new process starts from
  the window the previous one left (see that module).

All time comes from the injected :class:`~engine.Clock`; all waiting uses anyio, so the
limiter runs on asyncio and trio alike.
"""

from __future__ import annotations

import bisect
import enum
import logging
import math
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from types import MappingProxyType

import anyio
import anyio.lowlevel

from ._clock import Clock
from ._limitjournal import JournalLine, LimitJournal, restore

__all__ = ["DEFAULT_LIMITS", "Lane", "Limit", "RateLimiter"]

log = logging.getLogger("snipe.limiter")


class Lane(enum.IntEnum):
    """Priority when a budget is short; lower value goes first."""

    RECONCILE = 0
    """Resolving purchases (check-many-project-id and follow-ups)."""
    BUY = 1
    """Searches that lead to a purchase decision right now."""
    BACKGROUND = 2
    """Background polling."""


@dataclass(frozen=True)
class Limit:
    """At most ``calls`` calls in any sliding window of ``period`` seconds."""

    calls: int
    period: float

    def __post_init__(self) -> None:
        if isinstance(self.calls, bool) or not isinstance(self.calls, int) or self.calls < 1:
            raise ValueError(f"a limit needs at least one call per window, got {self.calls!r}")
        if not (isinstance(self.period, int | float) and math.isfinite(self.period)):
            raise ValueError(f"a limit's period must be a number of seconds, got {self.period!r}")
        if self.period <= 0:
            raise ValueError(f"a limit's period must be positive, got {self.period!r}")


DEFAULT_LIMITS: Mapping[str, Limit] = MappingProxyType(
    {
        # shared by v1 and v2 search-by-name; the engine charges catalogue pages to it too
        "search": Limit(20, 60.0),
        # create-buy-order (create and edit)
        "buy_order": Limit(60, 60.0),
        # GET /v1/set-my-platformapi
        "set_platform_api": Limit(5, 60.0),
    }
)
"""The limits interface.md section 8 states for a regular account. A partner account has
none: map a bucket to ``None`` to make it unlimited."""


class _Waiter:
    """A caller queued for a slot. ``wakeup`` is set when it may have become the head."""

    __slots__ = ("lane", "wakeup")

    def __init__(self, lane: Lane) -> None:
        self.lane = lane
        self.wakeup = anyio.Event()


class _Bucket:
    """The state of one budget. Every method is synchronous: whatever is decided between
    two awaits cannot be raced by another task."""

    def __init__(self, limit: Limit | None) -> None:
        self.limit = limit
        # when each finished call's window started (its answer arrived), oldest first
        self.calls: list[float] = []
        self.in_flight = 0  # calls sent whose answer has not arrived: their window is open
        self.paused_until = -math.inf
        self.lanes: tuple[deque[_Waiter], ...] = tuple(deque() for _ in Lane)

    def forget_expired(self, now: float) -> None:
        if self.limit is None:
            return
        period = self.limit.period
        # A call at ``c`` occupies the window until ``c + period``; every comparison uses
        # that same sum so float rounding cannot disagree with the computed wake-up time.
        expired = 0
        while expired < len(self.calls) and self.calls[expired] + period <= now:
            expired += 1
        del self.calls[:expired]

    def next_free(self, now: float, *, in_flight_ends_now: bool = False) -> float:
        """The earliest instant a call may go out, ignoring who is queued; ``math.inf``
        while only an answer still to come can free a slot (unless ``in_flight_ends_now``:
        an estimate that takes every call in flight as answered now)."""
        self.forget_expired(now)
        earliest = max(now, self.paused_until)
        if self.limit is None:
            return earliest
        occupied = len(self.calls) + self.in_flight
        if occupied < self.limit.calls:
            return earliest
        # this many of the finished calls must leave the window first (oldest first)
        must_leave = occupied - self.limit.calls + 1
        if must_leave <= len(self.calls):
            return max(earliest, self.calls[must_leave - 1] + self.limit.period)
        if in_flight_ends_now:
            return max(earliest, now + self.limit.period)
        return math.inf

    def head(self) -> _Waiter | None:
        for queue in self.lanes:
            if queue:
                return queue[0]
        return None

    def enqueue(self, waiter: _Waiter) -> None:
        self.lanes[waiter.lane].append(waiter)

    def leave(self, waiter: _Waiter) -> None:
        """Take ``waiter`` out of the queue and tell whoever is head now to look again."""
        self.lanes[waiter.lane].remove(waiter)
        head = self.head()
        if head is not None:
            head.wakeup.set()

    def record(self, now: float) -> None:
        """A call whose window starts at ``now``."""
        if self.limit is not None:
            bisect.insort(self.calls, now)

    def finished(self, now: float) -> None:
        """A call in flight got its answer at ``now``: its window starts now."""
        if self.limit is None:
            return  # unlimited: nothing was counted
        self.in_flight -= 1
        self.record(now)
        head = self.head()
        if head is not None:  # it may have been waiting for an answer, not for the clock
            head.wakeup.set()


class RateLimiter:
    """Sliding-window budgets shared by every caller of the client.

    ``limits`` maps a bucket name to its :class:`Limit`, or to ``None`` for a bucket
    without a limit (a partner account). Asking for a bucket not in ``limits`` is a
    ``ValueError``: a typo must not silently mean "unlimited".
    """

    def __init__(self, clock: Clock, limits: Mapping[str, Limit | None] = DEFAULT_LIMITS):
        self._clock = clock
        self._buckets = {name: _Bucket(limit) for name, limit in limits.items()}
        self._journal: LimitJournal | None = None
        self._open_calls: dict[str, tuple[str, float]] = {}  # journalled, not yet answered

    def attach_journal(self, journal: LimitJournal, *, timeout: float) -> None:
        """Start from the window the calls in ``journal`` still occupy, and journal every
        call from now on. ``timeout`` is the client's request timeout: a call the previous
        process sent but never saw answered may have been counted until then. Call it
        before the first request; the file is rewritten compactly here."""
        now = self._clock.now()
        periods = {
            name: state.limit.period
            for name, state in self._buckets.items()
            if state.limit is not None
        }
        restored = restore(journal.read(), now=now, periods=periods, timeout=timeout)
        for name, starts in restored.items():
            for start in starts:
                self._buckets[name].record(start)
        if any(restored.values()):
            counts = ", ".join(f"{name} {len(s)}" for name, s in sorted(restored.items()) if s)
            log.info("rate limits restored from %s: calls in the window: %s", journal.path, counts)
        self._journal = journal
        self._compact()

    def _compact(self) -> None:
        journal = self._journal
        if journal is None:
            return
        now = self._clock.now()
        lines: list[JournalLine] = []
        for name, state in sorted(self._buckets.items()):
            state.forget_expired(now)
            lines.extend(JournalLine("done", name, journal.new_call(), at) for at in state.calls)
        for call, (name, sent) in self._open_calls.items():
            lines.append(JournalLine("sent", name, call, sent))
        self._journal_write(lambda: journal.rewrite(lines))

    def _journal_line(self, kind: str, bucket: str, call: str, at: float) -> None:
        journal = self._journal
        if journal is None:
            return
        self._journal_write(lambda: journal.append(JournalLine(kind, bucket, call, at)))
        if journal.needs_compaction:
            self._compact()

    def _journal_write(self, write: Callable[[], None]) -> None:
        journal = self._journal
        try:
            write()
        except OSError as exc:
            # the budget survives restarts no more, but trading goes on: one 429 at worst
            log.warning(
                "rate-limit journal %s not written (%s); no longer journalled",
                journal.path if journal else "?",
                exc.strerror or exc,
            )
            if journal is not None:
                journal.close()
            self._journal = None

    def close_journal(self) -> None:
        """Close the journal's file (its content stays for the next process)."""
        if self._journal is not None:
            self._journal.close()

    def _bucket(self, name: str) -> _Bucket:
        try:
            return self._buckets[name]
        except KeyError:
            known = ", ".join(sorted(self._buckets)) or "none"
            raise ValueError(f"unknown rate-limit bucket {name!r} (known: {known})") from None

    async def acquire(self, bucket: str, lane: Lane = Lane.BACKGROUND) -> None:
        """Wait until a call in ``bucket`` is allowed, and count it from now.

        Returns exactly when the window (or a pause) lets the call out; the call is
        recorded in the same step, so concurrent callers can never exceed the limit.
        When callers queue, a lower :class:`Lane` goes first, then first come first
        served. A caller cancelled while waiting takes no slot and holds nobody up.
        Prefer :meth:`hold` around a request: it is exact under network jitter.
        """
        state = self._bucket(bucket)
        await self._take(state, Lane(lane), in_flight=False)
        if state.limit is not None and self._journal is not None:
            self._journal_line("done", bucket, self._journal.new_call(), self._clock.now())

    @asynccontextmanager
    async def hold(self, bucket: str, lane: Lane = Lane.BACKGROUND) -> AsyncIterator[None]:
        """Wait for a slot in ``bucket`` as :meth:`acquire` does, and hold it while inside
        (send the request and read its answer there): the call's window starts when the
        block is left, so it covers the service's arrival time whatever the network did.
        Leaving by an error or a cancellation starts the window then, too."""
        state = self._bucket(bucket)
        await self._take(state, Lane(lane), in_flight=True)
        call = self._sent(bucket, state)
        try:
            yield
        finally:
            now = self._clock.now()
            state.finished(now)
            if call is not None:
                self._open_calls.pop(call, None)
                self._journal_line("done", bucket, call, now)

    def _sent(self, bucket: str, state: _Bucket) -> str | None:
        """Journal a call just given a slot in ``bucket``; its id, or ``None`` if not
        journalled."""
        journal = self._journal
        if journal is None or state.limit is None:
            return None
        call, now = journal.new_call(), self._clock.now()
        self._open_calls[call] = (bucket, now)
        self._journal_line("sent", bucket, call, now)
        return call

    async def _take(self, state: _Bucket, lane: Lane, *, in_flight: bool) -> None:
        await anyio.lowlevel.checkpoint_if_cancelled()
        waiter = _Waiter(lane)
        state.enqueue(waiter)
        try:
            await self._wait_for_turn(state, waiter, in_flight)
        except BaseException:
            state.leave(waiter)
            raise
        # Granted: the call is recorded and the queue handed over; let others run without
        # giving a cancellation the chance to waste the slot just taken.
        await anyio.lowlevel.cancel_shielded_checkpoint()

    async def _wait_for_turn(self, state: _Bucket, waiter: _Waiter, in_flight: bool) -> None:
        clock = self._clock
        while True:
            if state.head() is waiter:
                now = clock.now()
                when = state.next_free(now)
                if when <= now:
                    if not in_flight:
                        state.record(now)
                    elif state.limit is not None:
                        state.in_flight += 1
                    state.leave(waiter)
                    return
                if math.isfinite(when):
                    # An answer arriving meanwhile never makes ``when`` earlier (its window
                    # starts after every other), so the clock alone can be waited for.
                    await clock.sleep_until(when)
                    continue
            await waiter.wakeup.wait()
            waiter.wakeup = anyio.Event()

    def pause(self, bucket: str, seconds: float) -> None:
        """Stop every call in ``bucket`` until ``seconds`` from now: the service answered
        429 and asked for that wait. A pause extends, never shortens, an existing one, and
        holds an unlimited bucket too."""
        state = self._bucket(bucket)
        if not math.isfinite(seconds) or seconds < 0:
            raise ValueError(f"a pause must be a non-negative number of seconds, got {seconds!r}")
        until = self._clock.now() + seconds
        if until > state.paused_until:
            # said once per pause (a wait of a minute is otherwise silence: the service's
            # search limit is 20 a minute, and a limit set higher than that meets it)
            log.warning(
                "%s: the service answered 429 (too many requests): waiting %.1f s before"
                " the next %s call",
                bucket,
                seconds,
                bucket,
            )
        state.paused_until = max(state.paused_until, until)

    def usage(self, bucket: str) -> tuple[int, int | None]:
        """``(calls in the current window or in flight, limit)``; the limit is ``None`` for
        an unlimited bucket, whose calls are not counted."""
        state = self._bucket(bucket)
        state.forget_expired(self._clock.now())
        used = len(state.calls) + state.in_flight
        return used, state.limit.calls if state.limit is not None else None

    def next_free(self, bucket: str) -> float:
        """The earliest time (epoch seconds) a call could go out, counting the window and
        any pause but not the callers already queued; a call still in flight is taken as
        answered now (an estimate: the wait in :meth:`hold` is exact)."""
        return self._bucket(bucket).next_free(self._clock.now(), in_flight_ends_now=True)

    def __repr__(self) -> str:
        return f"RateLimiter(buckets={sorted(self._buckets)!r})"
