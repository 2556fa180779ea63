"""Client-side rate limits: sliding windows with priority lanes.

The service counts calls per endpoint family in a sliding window (interface.md section 8:
20 search-by-name calls per 60 s shared by v1 and v2, 60 buy-order actions per 60 s, 5
set-platform-api-key calls per 60 s) and answers 429 past it. snipe keeps its own count so
it never gets there, and honours a 429's wait when it does.

Design:

- One :class:`_Bucket` per budget holds the times of the calls still inside the window,
  a pause (the end of a 429's wait) and the callers waiting, queued by :class:`Lane` and
  first-come first-served within a lane.
- Only the caller at the head of the queue ever waits on the clock, and only until the
  computed instant a slot frees (the oldest call in the window leaves it, or the pause
  ends). It then checks and records its call in one synchronous step, so no other task can
  slip in between, and hands the head over to the next caller. There is no polling loop.
- A caller that is cancelled leaves the queue without taking a slot and, if it was at the
  head, wakes the next one, so nobody waits behind it.

All time comes from the injected :class:`~engine.Clock`; all waiting uses anyio, so the
limiter runs on asyncio and trio alike.
"""

from __future__ import annotations

import enum
import math
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import anyio
import anyio.lowlevel

from ._clock import Clock

__all__ = ["DEFAULT_LIMITS", "Lane", "Limit", "RateLimiter"]


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
        self.calls: deque[float] = deque()  # times of the calls still in the window, oldest first
        self.paused_until = -math.inf
        self.lanes: tuple[deque[_Waiter], ...] = tuple(deque() for _ in Lane)

    def forget_expired(self, now: float) -> None:
        if self.limit is None:
            return
        period = self.limit.period
        # A call at ``c`` occupies the window until ``c + period``; every comparison uses
        # that same sum so float rounding cannot disagree with the computed wake-up time.
        while self.calls and self.calls[0] + period <= now:
            self.calls.popleft()

    def next_free(self, now: float) -> float:
        """The earliest instant a call may go out, ignoring who is queued."""
        self.forget_expired(now)
        earliest = max(now, self.paused_until)
        if self.limit is not None and len(self.calls) >= self.limit.calls:
            oldest_blocking = self.calls[len(self.calls) - self.limit.calls]
            earliest = max(earliest, oldest_blocking + self.limit.period)
        return earliest

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
        if self.limit is not None:
            self.calls.append(now)


class RateLimiter:
    """Sliding-window budgets shared by every caller of the client.

    ``limits`` maps a bucket name to its :class:`Limit`, or to ``None`` for a bucket
    without a limit (a partner account). Asking for a bucket not in ``limits`` is a
    ``ValueError``: a typo must not silently mean "unlimited".
    """

    def __init__(self, clock: Clock, limits: Mapping[str, Limit | None] = DEFAULT_LIMITS):
        self._clock = clock
        self._buckets = {name: _Bucket(limit) for name, limit in limits.items()}

    def _bucket(self, name: str) -> _Bucket:
        try:
            return self._buckets[name]
        except KeyError:
            known = ", ".join(sorted(self._buckets)) or "none"
            raise ValueError(f"unknown rate-limit bucket {name!r} (known: {known})") from None

    async def acquire(self, bucket: str, lane: Lane = Lane.BACKGROUND) -> None:
        """Wait until a call in ``bucket`` is allowed, and count it.

        Returns exactly when the window (or a pause) lets the call out; the call is
        recorded in the same step, so concurrent callers can never exceed the limit.
        When callers queue, a lower :class:`Lane` goes first, then first come first
        served. A caller cancelled while waiting takes no slot and holds nobody up.
        """
        state = self._bucket(bucket)
        lane = Lane(lane)
        await anyio.lowlevel.checkpoint_if_cancelled()
        waiter = _Waiter(lane)
        state.enqueue(waiter)
        try:
            await self._wait_for_turn(state, waiter)
        except BaseException:
            state.leave(waiter)
            raise
        # Granted: the call is recorded and the queue handed over; let others run without
        # giving a cancellation the chance to waste the slot just taken.
        await anyio.lowlevel.cancel_shielded_checkpoint()

    async def _wait_for_turn(self, state: _Bucket, waiter: _Waiter) -> None:
        clock = self._clock
        while True:
            if state.head() is waiter:
                now = clock.now()
                when = state.next_free(now)
                if when <= now:
                    state.record(now)
                    state.leave(waiter)
                    return
                await clock.sleep_until(when)
            else:
                await waiter.wakeup.wait()
                waiter.wakeup = anyio.Event()

    def pause(self, bucket: str, seconds: float) -> None:
        """Stop every call in ``bucket`` until ``seconds`` from now: the service answered
        429 and asked for that wait. A pause extends, never shortens, an existing one, and
        holds an unlimited bucket too."""
        state = self._bucket(bucket)
        if not math.isfinite(seconds) or seconds < 0:
            raise ValueError(f"a pause must be a non-negative number of seconds, got {seconds!r}")
        state.paused_until = max(state.paused_until, self._clock.now() + seconds)

    def usage(self, bucket: str) -> tuple[int, int | None]:
        """``(calls in the current window, limit)``; the limit is ``None`` for an unlimited
        bucket, whose calls are not counted."""
        state = self._bucket(bucket)
        state.forget_expired(self._clock.now())
        return len(state.calls), state.limit.calls if state.limit is not None else None

    def next_free(self, bucket: str) -> float:
        """The earliest time (epoch seconds) a call could go out, counting the window and
        any pause but not the callers already queued."""
        return self._bucket(bucket).next_free(self._clock.now())

    def __repr__(self) -> str:
        return f"RateLimiter(buckets={sorted(self._buckets)!r})"
