"""Clocks: VirtualClock (tests and backtests), ScaledClock (sandbox, demo), SystemClock."""

from __future__ import annotations

import math
import time

import anyio
import anyio.lowlevel
import pytest

from engine import Clock, ScaledClock, SystemClock, VirtualClock

# Real-time guard for tests that would hang (or really sleep for virtual hours) if the
# clock were wrong; never reached when it is right.
HANG_GUARD = 10.0

START = 1_767_225_600.0  # 2026-01-01T00:00:00Z, VirtualClock's default


class Wakeups:
    """Sleepers that write down (name, virtual time) when they wake."""

    def __init__(self, clock: VirtualClock) -> None:
        self.clock = clock
        self.log: list[tuple[str, float]] = []

    async def sleep_until(self, name: str, deadline: float) -> None:
        await self.clock.sleep_until(deadline)
        self.log.append((name, self.clock.now()))

    async def sleep(self, name: str, seconds: float) -> None:
        await self.clock.sleep(seconds)
        self.log.append((name, self.clock.now()))


@pytest.mark.parametrize("clock", [SystemClock(), ScaledClock(start=START), VirtualClock()])
def test_every_clock_satisfies_the_protocol(clock: object) -> None:
    assert isinstance(clock, Clock)


# -- VirtualClock --------------------------------------------------------------------------


def test_virtual_time_starts_where_told_and_moves_only_when_told() -> None:
    assert VirtualClock().now() == START
    clock = VirtualClock(start=100)
    assert clock.now() == 100.0
    assert clock.now() == 100.0
    clock.advance(2.5)
    assert clock.now() == 102.5
    clock.jump_to(200)
    assert clock.now() == 200.0
    assert repr(clock) == "VirtualClock(now=200.0)"


def test_virtual_time_never_runs_backwards() -> None:
    clock = VirtualClock(start=100)
    clock.jump_to(50)
    assert clock.now() == 100.0
    with pytest.raises(ValueError, match="backwards"):
        clock.advance(-1)
    assert clock.now() == 100.0


async def test_a_deadline_already_passed_returns_at_once(clock: VirtualClock) -> None:
    with anyio.fail_after(HANG_GUARD):
        await clock.sleep_until(clock.now())
        await clock.sleep_until(clock.now() - 10)
        await clock.sleep(0)
        await clock.sleep(-5)
    assert clock.now() == START
    assert clock.next_deadline() is None


async def test_advance_wakes_the_due_sleepers_in_deadline_order(clock: VirtualClock) -> None:
    wakeups = Wakeups(clock)
    async with anyio.create_task_group() as tg:
        for name, at in [("seven", 7.0), ("three", 3.0), ("five", 5.0), ("five-too", 5.0)]:
            tg.start_soon(wakeups.sleep_until, name, START + at)
        await anyio.wait_all_tasks_blocked()
        assert clock.next_deadline() == START + 3.0
        assert wakeups.log == []

        clock.advance(4.0)
        await anyio.wait_all_tasks_blocked()
        assert wakeups.log == [("three", START + 4.0)]
        assert clock.next_deadline() == START + 5.0

        clock.advance(1.0)  # exactly at the deadline: due
        await anyio.wait_all_tasks_blocked()
        assert sorted(wakeups.log[1:]) == [("five", START + 5.0), ("five-too", START + 5.0)]

        clock.jump_to(START + 100.0)
        await anyio.wait_all_tasks_blocked()
        assert wakeups.log[3:] == [("seven", START + 100.0)]
    assert clock.next_deadline() is None


async def test_a_cancelled_sleeper_is_forgotten(clock: VirtualClock) -> None:
    wakeups = Wakeups(clock)
    scopes: dict[str, anyio.CancelScope] = {}

    async def sleeper(name: str, at: float) -> None:
        with anyio.CancelScope() as scope:
            scopes[name] = scope
            await wakeups.sleep_until(name, START + at)

    async with anyio.create_task_group() as tg:
        for name, at in [("first", 10.0), ("middle", 20.0), ("last", 30.0)]:
            tg.start_soon(sleeper, name, at)
        await anyio.wait_all_tasks_blocked()
        scopes["middle"].cancel()
        await anyio.wait_all_tasks_blocked()
        assert clock.next_deadline() == START + 10.0
        scopes["first"].cancel()
        await anyio.wait_all_tasks_blocked()
        assert clock.next_deadline() == START + 30.0

        clock.advance(25.0)  # past both cancelled deadlines: nobody to wake
        await anyio.wait_all_tasks_blocked()
        assert wakeups.log == []
        clock.advance(5.0)
    assert wakeups.log == [("last", START + 30.0)]
    assert clock.next_deadline() is None


async def test_move_on_after_cancels_its_scope_when_virtual_time_reaches_the_deadline(
    clock: VirtualClock,
) -> None:
    done: list[tuple[str, float, bool]] = []

    async def waits(name: str, seconds: float) -> None:
        with clock.move_on_after(seconds) as scope:
            await anyio.sleep_forever()
        done.append((name, clock.now(), scope.cancelled_caught))

    async with anyio.create_task_group() as tg:
        tg.start_soon(waits, "ten", 10.0)
        tg.start_soon(waits, "four", 4.0)
        await anyio.wait_all_tasks_blocked()
        assert clock.next_deadline() == START + 4.0
        clock.advance(3.9)
        await anyio.wait_all_tasks_blocked()
        assert done == []
        clock.advance(0.1)  # exactly at the deadline: due
        await anyio.wait_all_tasks_blocked()
        assert done == [("four", START + 4.0, True)]
        assert clock.next_deadline() == START + 10.0
        clock.jump_to(START + 60.0)
    assert done[1:] == [("ten", START + 60.0, True)]
    assert clock.next_deadline() is None


async def test_move_on_after_left_in_time_leaves_no_deadline_behind(clock: VirtualClock) -> None:
    with clock.move_on_after(30.0) as scope:
        assert clock.next_deadline() == START + 30.0
        await anyio.lowlevel.checkpoint()
    assert not scope.cancel_called
    assert clock.next_deadline() is None
    clock.advance(60.0)  # the forgotten deadline cancels nothing later
    assert not scope.cancel_called


async def test_move_on_after_of_no_time_cancels_at_the_first_wait(clock: VirtualClock) -> None:
    reached = False
    with anyio.fail_after(HANG_GUARD), clock.move_on_after(0) as scope:
        await anyio.sleep_forever()
        reached = True
    assert scope.cancelled_caught
    assert not reached
    assert clock.next_deadline() is None


async def test_autojump_jumps_to_a_move_on_after_deadline(clock: VirtualClock) -> None:
    with anyio.fail_after(HANG_GUARD):
        async with clock.autojump():
            with clock.move_on_after(3_600.0) as scope:
                await anyio.sleep_forever()
    assert scope.cancelled_caught
    assert clock.now() == START + 3_600.0


async def test_autojump_runs_virtual_hours_at_once_waking_each_sleeper_at_its_deadline(
    clock: VirtualClock,
) -> None:
    wakeups = Wakeups(clock)
    with anyio.fail_after(HANG_GUARD):
        async with clock.autojump(), anyio.create_task_group() as tg:
            for name, seconds in [("day", 86_400.0), ("hour", 3_600.0), ("minute", 60.0)]:
                tg.start_soon(wakeups.sleep, name, seconds)
    assert wakeups.log == [
        ("minute", START + 60.0),
        ("hour", START + 3_600.0),
        ("day", START + 86_400.0),
    ]


async def test_autojump_keeps_time_still_while_any_task_can_run(clock: VirtualClock) -> None:
    seen: list[float] = []

    async def busy() -> None:
        for _ in range(50):
            seen.append(clock.now())
            await anyio.lowlevel.checkpoint()

    wakeups = Wakeups(clock)
    with anyio.fail_after(HANG_GUARD):
        async with clock.autojump(), anyio.create_task_group() as tg:
            tg.start_soon(wakeups.sleep, "sleeper", 10.0)
            tg.start_soon(busy)
    assert set(seen) == {START}
    assert wakeups.log == [("sleeper", START + 10.0)]


async def test_autojump_serves_many_tasks_that_yield_between_sleeps(clock: VirtualClock) -> None:
    # Tasks that take several steps after each wake-up: each jump must wait for all of
    # them to block again, on both backends.
    woke: list[tuple[int, float]] = []

    async def worker(i: int) -> None:
        for round_ in range(5):
            await clock.sleep_until(START + 10.0 * (round_ + 1) + i)
            woke.append((i, clock.now()))
            for _ in range(3):
                await anyio.lowlevel.checkpoint()

    with anyio.fail_after(HANG_GUARD):
        async with clock.autojump(), anyio.create_task_group() as tg:
            for i in range(10):
                tg.start_soon(worker, i)
    assert sorted(woke, key=lambda w: w[1]) == [
        (i, START + 10.0 * (round_ + 1) + i) for round_ in range(5) for i in range(10)
    ]


async def test_autojump_waits_for_events_without_jumping(clock: VirtualClock) -> None:
    ready = anyio.Event()

    async def set_later() -> None:
        await clock.sleep(5.0)
        ready.set()

    with anyio.fail_after(HANG_GUARD):
        async with clock.autojump(), anyio.create_task_group() as tg:
            tg.start_soon(set_later)
            await ready.wait()
            assert clock.now() == START + 5.0
    assert clock.now() == START + 5.0


def _hold_the_cpu(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


async def test_time_stays_still_however_long_a_runnable_task_takes_in_real_time(
    clock: VirtualClock,
) -> None:
    # Settling is decided by the scheduler, not by a real-time cap: a task that holds the
    # CPU for milliseconds between its steps (a loaded machine) never sees time move.
    seen: list[float] = []

    async def slow_steps() -> None:
        for _ in range(10):
            seen.append(clock.now())
            _hold_the_cpu(0.003)  # real time passes, no await: the task is still runnable
            await anyio.lowlevel.checkpoint()

    wakeups = Wakeups(clock)
    with anyio.fail_after(HANG_GUARD):
        async with clock.autojump(), anyio.create_task_group() as tg:
            tg.start_soon(wakeups.sleep, "sleeper", 1.0)
            tg.start_soon(slow_steps)
    assert set(seen) == {START}
    assert wakeups.log == [("sleeper", START + 1.0)]


async def test_autojump_picks_up_a_sleeper_that_comes_after_a_quiet_spell(
    clock: VirtualClock,
) -> None:
    # Nothing to jump to while a worker thread runs (not marked busy): autojump waits for
    # the next sleeper instead of polling, then jumps to it.
    with anyio.fail_after(HANG_GUARD):
        async with clock.autojump():
            await anyio.to_thread.run_sync(time.sleep, 0.01)
            await clock.sleep(5.0)
            await anyio.to_thread.run_sync(time.sleep, 0.01)
            await clock.sleep(5.0)
    assert clock.now() == START + 10.0


async def test_an_error_inside_autojump_comes_out_as_itself(clock: VirtualClock) -> None:
    async def fail_after_a_second() -> None:
        async with clock.autojump():
            await clock.sleep(1.0)
            raise KeyError("boom")

    with pytest.raises(KeyError, match="boom"):
        await fail_after_a_second()
    assert clock.now() == START + 1.0


# -- ScaledClock ---------------------------------------------------------------------------


@pytest.mark.parametrize("speed", [0.0, -1.0, math.nan, math.inf, -math.inf])
def test_a_scaled_clock_needs_a_positive_finite_speed(speed: float) -> None:
    with pytest.raises(ValueError, match="speed"):
        ScaledClock(start=START, speed=speed)


def test_scaled_time_starts_at_start_and_never_runs_backwards() -> None:
    clock = ScaledClock(start=START, speed=60.0)
    readings = [clock.now() for _ in range(1000)]
    assert readings[0] >= START
    assert readings == sorted(readings)
    assert readings[-1] - START < 3_600.0  # a generous bound: only microseconds passed
    assert repr(clock) == "ScaledClock(speed=60.0)"


async def test_a_scaled_sleep_waits_its_own_seconds_sped_up() -> None:
    # 3 scaled seconds at 1000x are 3 ms of real time; unscaled they would be 3 s, which
    # the guard below would catch.
    clock = ScaledClock(start=START, speed=1000.0)
    with anyio.fail_after(1.0):
        before = clock.now()
        await clock.sleep(2.0)
        assert clock.now() - before >= 2.0
        deadline = clock.now() + 1.0
        await clock.sleep_until(deadline)
        assert clock.now() >= deadline
        await clock.sleep_until(clock.now() - 10.0)  # in the past: at once
        await clock.sleep(-1.0)


# -- SystemClock ---------------------------------------------------------------------------


def test_system_time_is_epoch_seconds_and_monotonic() -> None:
    clock = SystemClock()
    assert abs(clock.now() - time.time()) < 5.0
    readings = [clock.now() for _ in range(1000)]
    assert readings == sorted(readings)
    assert repr(clock) == "SystemClock()"


async def test_system_sleeps_return_at_or_after_their_deadline() -> None:
    clock = SystemClock()
    deadline = clock.now() + 0.002
    await clock.sleep_until(deadline)
    assert clock.now() >= deadline
    before = clock.now()
    await clock.sleep(0.001)
    assert clock.now() - before >= 0.001
    await clock.sleep_until(clock.now() - 1.0)  # in the past: at once
    await clock.sleep(-1.0)


async def test_autojump_waits_for_work_marked_busy() -> None:
    clock = VirtualClock(start=0.0)
    seen: list[float] = []

    async def sleeper() -> None:
        await clock.sleep(10.0)
        seen.append(clock.now())

    async def thread_work() -> None:
        with clock.busy():
            # a worker thread: the task looks blocked, but time must not move meanwhile
            await anyio.to_thread.run_sync(time.sleep, 0.005)
            seen.append(clock.now())

    async with clock.autojump(), anyio.create_task_group() as tg:
        tg.start_soon(sleeper)
        tg.start_soon(thread_work)
    assert seen == [0.0, 10.0]
