"""Time, injected.

Everything in snipe that needs the time or needs to wait asks a :class:`Clock`. Live runs
use :class:`SystemClock`; tests and backtests use :class:`VirtualClock`, whose time moves
only when told to (or, with :meth:`VirtualClock.autojump`, jumps straight to the next
deadline whenever every task is blocked), so no test ever really sleeps and a backtest
replays a day in seconds, deterministically.

Time is epoch seconds as a float, the unit of ``time.time()``.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Protocol, runtime_checkable

import anyio
import anyio.abc
import anyio.lowlevel

__all__ = ["Clock", "ScaledClock", "SystemClock", "VirtualClock", "event_or_deadline"]


@runtime_checkable
class Clock(Protocol):
    """A source of time and of waiting."""

    def now(self) -> float:
        """The current time in epoch seconds."""
        ...

    async def sleep_until(self, deadline: float) -> None:
        """Return once :meth:`now` is at or past ``deadline`` (at once if it already is)."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` of this clock's time."""
        ...


class SystemClock:
    """Real time. ``now()`` follows the wall clock at start and then the monotonic clock, so
    a wall-clock step (NTP, DST) cannot make a rate-limit window run backwards."""

    def __init__(self) -> None:
        self._epoch0 = time.time()
        self._mono0 = time.monotonic()

    def now(self) -> float:
        return self._epoch0 + (time.monotonic() - self._mono0)

    async def sleep(self, seconds: float) -> None:
        await anyio.sleep(max(0.0, seconds))

    async def sleep_until(self, deadline: float) -> None:
        await anyio.sleep(max(0.0, deadline - self.now()))

    def __repr__(self) -> str:
        return "SystemClock()"


class ScaledClock:
    """Real time sped up: ``speed`` seconds of this clock pass per real second, starting at
    ``start``. The sandbox's market time and ``snipe demo`` use it to run hours in minutes."""

    def __init__(self, *, start: float, speed: float = 1.0) -> None:
        if not (math.isfinite(speed) and speed > 0):  # a NaN would pass ``speed <= 0``
            raise ValueError(f"speed must be a positive number, got {speed!r}")
        self.speed = speed
        self._start = start
        self._mono0 = time.monotonic()

    @classmethod
    def from_origin(cls, origin: float, speed: float) -> ScaledClock:
        """The clock that equals real time at the epoch instant ``origin`` and runs
        ``speed`` times faster since: two processes given the same ``origin`` and ``speed``
        (``snipe sandbox --origin`` and ``snipe run --origin``) share one market time."""
        return cls(start=origin + (time.time() - origin) * speed, speed=speed)

    def now(self) -> float:
        return self._start + (time.monotonic() - self._mono0) * self.speed

    async def sleep(self, seconds: float) -> None:
        await anyio.sleep(max(0.0, seconds) / self.speed)

    async def sleep_until(self, deadline: float) -> None:
        await self.sleep(deadline - self.now())

    def __repr__(self) -> str:
        return f"ScaledClock(speed={self.speed})"


class VirtualClock:
    """Time that moves only when told to.

    :meth:`advance` and :meth:`jump_to` move it and wake every sleeper whose deadline has
    come, in deadline order. :meth:`autojump` runs a helper task that, whenever every task
    is blocked, jumps to the earliest pending deadline: code under test then runs as if time
    passed, without waiting.
    """

    def __init__(self, start: float = 1_767_225_600.0) -> None:  # 2026-01-01T00:00:00Z
        self._now = float(start)
        self._busy = 0
        self._idle: anyio.Event | None = None
        self._sleepers: list[tuple[float, int, anyio.Event | _Alarm]] = []
        self._order = itertools.count()
        self._sleeper_added: anyio.Event | None = None

    def now(self) -> float:
        return self._now

    async def sleep(self, seconds: float) -> None:
        await self.sleep_until(self._now + max(0.0, seconds))

    async def sleep_until(self, deadline: float) -> None:
        if deadline <= self._now:
            await anyio.lowlevel.checkpoint()
            return
        event = anyio.Event()
        entry = (deadline, next(self._order), event)
        self._add(entry)
        try:
            await event.wait()
        finally:
            if not event.is_set():  # cancelled: forget the sleeper
                self._forget(entry)

    @contextmanager
    def move_on_after(self, seconds: float) -> Iterator[anyio.CancelScope]:
        """A cancel scope that this clock cancels when ``seconds`` of its time have passed:
        anyio's ``move_on_after`` on virtual time. It needs no task of its own (a watchdog
        task per call was a few percent of a backtest, one per request), and
        :meth:`autojump` jumps to its deadline like a sleeper's."""
        scope = anyio.CancelScope()
        alarm = _Alarm(scope)
        deadline = self._now + max(0.0, seconds)
        entry = (deadline, next(self._order), alarm)
        if deadline <= self._now:
            alarm.set()  # no time at all: cancelled at the first wait
        else:
            self._add(entry)
        try:
            with scope:
                yield scope
        finally:
            if not alarm.rang:
                self._forget(entry)

    def _add(self, entry: tuple[float, int, anyio.Event | _Alarm]) -> None:
        heapq.heappush(self._sleepers, entry)
        if self._sleeper_added is not None:
            self._sleeper_added.set()
            self._sleeper_added = None

    def _forget(self, entry: tuple[float, int, anyio.Event | _Alarm]) -> None:
        self._sleepers.remove(entry)
        heapq.heapify(self._sleepers)

    @contextmanager
    def busy(self) -> Iterator[None]:
        """Mark work that runs outside the event loop (a worker thread, such as the
        ledger's database calls): :meth:`autojump` does not move time while any is under
        way, because a task waiting for a thread looks blocked but is not waiting for time.
        """
        self._busy += 1
        try:
            yield
        finally:
            self._busy -= 1
            if self._busy == 0 and self._idle is not None:
                self._idle.set()
                self._idle = None

    def next_deadline(self) -> float | None:
        """The earliest deadline anyone is waiting for, or ``None``."""
        return self._sleepers[0][0] if self._sleepers else None

    def advance(self, seconds: float) -> None:
        """Move time forward by ``seconds`` and wake the sleepers that are due."""
        if seconds < 0:
            raise ValueError("time does not run backwards")
        self.jump_to(self._now + seconds)

    def jump_to(self, when: float) -> None:
        """Move time to ``when`` (never backwards) and wake the sleepers that are due."""
        when = float(when)
        if when > self._now:  # (max without its call: once per replayed feed event)
            self._now = when
        while self._sleepers and self._sleepers[0][0] <= self._now:
            _, _, event = heapq.heappop(self._sleepers)
            event.set()

    @asynccontextmanager
    async def autojump(self) -> AsyncIterator[None]:
        """While inside, jump to the next deadline whenever every task is blocked."""
        error: Exception | None = None
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._autojump_loop)
            try:
                yield
            except Exception as exc:
                # Re-raised below, outside the task group, so the caller sees the body's
                # own exception rather than an ExceptionGroup wrapping it.
                error = exc
            finally:
                tg.cancel_scope.cancel()
        if error is not None:
            raise error

    async def _autojump_loop(self) -> None:
        while True:
            await _settle()
            if self._busy:
                self._idle = self._idle or anyio.Event()
                await self._idle.wait()
                continue
            deadline = self.next_deadline()
            if deadline is None:
                # Nothing to jump to: wait until someone sleeps (woken by a thread or I/O).
                self._sleeper_added = self._sleeper_added or anyio.Event()
                await self._sleeper_added.wait()
                continue
            self.jump_to(deadline)

    def __repr__(self) -> str:
        return f"VirtualClock(now={self._now})"


class _Alarm:
    """A :meth:`VirtualClock.move_on_after` deadline among the clock's sleepers: woken, it
    cancels its scope."""

    __slots__ = ("rang", "scope")

    def __init__(self, scope: anyio.CancelScope) -> None:
        self.scope = scope
        self.rang = False

    def set(self) -> None:
        self.rang = True
        self.scope.cancel()


async def _settle() -> None:
    """Return once every other task is blocked: deterministic, no real time involved.

    trio's scheduler knows exactly. anyio's asyncio version sleeps 0.1 s of real time
    while any task is runnable, and a real-time cap around it made settling depend on the
    machine's load; here each task's waiter (and the loop's ready queue) is looked at after
    every loop iteration instead.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # not asyncio: trio (the only other backend snipe runs on)
        import trio.testing

        await trio.testing.wait_all_tasks_blocked()
        return
    await _settle_asyncio()


async def _settle_asyncio() -> None:
    this = asyncio.current_task()
    loop = asyncio.get_running_loop()
    while True:
        await asyncio.sleep(0)  # one turn of the loop for everything that can run
        if getattr(loop, "_ready", None):
            continue  # callbacks are queued: something is still running
        if all(t is this or _blocked(t) for t in asyncio.all_tasks(loop)):
            return


async def event_or_deadline(clock: Clock, event: anyio.Event, deadline: float) -> None:
    """Wait until ``event`` is set or ``deadline`` (on ``clock``; none if infinite)."""
    async with anyio.create_task_group() as tg:

        async def wait() -> None:
            await event.wait()
            tg.cancel_scope.cancel()

        tg.start_soon(wait)
        if math.isfinite(deadline):
            await clock.sleep_until(deadline)
            tg.cancel_scope.cancel()


def _blocked(task: asyncio.Task[object]) -> bool:
    waiter = getattr(task, "_fut_waiter", None)
    return waiter is not None and not waiter.done()
