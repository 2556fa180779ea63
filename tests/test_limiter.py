"""The rate limiter: sliding windows, exact waits, 429 pauses, priority lanes, cancellation.

Every async test runs on asyncio and trio, on a VirtualClock: waits are measured in virtual
seconds and must be exact, and no test really sleeps.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import DEFAULT_LIMITS, Lane, Limit, RateLimiter, VirtualClock

# Real-time guard around tests that could hang if the limiter were wrong; never reached
# when it is right, since virtual time costs no real time.
HANG_GUARD = 10.0


def limiter_with(clock: VirtualClock, **limits: Limit | None) -> RateLimiter:
    return RateLimiter(clock, limits)


class Recorder:
    """Runs callers and writes down, per caller name, the virtual time its call went out."""

    def __init__(self, clock: VirtualClock, limiter: RateLimiter, bucket: str = "b") -> None:
        self.clock = clock
        self.limiter = limiter
        self.bucket = bucket
        self.sent: dict[str, float] = {}
        self.order: list[str] = []

    async def call(self, name: str, lane: Lane = Lane.BACKGROUND, at: float = 0.0) -> None:
        await self.clock.sleep(at)
        await self.limiter.acquire(self.bucket, lane)
        self.sent[name] = self.clock.now()
        self.order.append(name)

    async def queue(
        self,
        name: str,
        lane: Lane = Lane.BACKGROUND,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """For ``TaskGroup.start``: reports started, then queues in the same step, so
        callers started one after the other queue in that order on every backend."""
        task_status.started()
        await self.call(name, lane)


# -- the documented defaults and configuration --------------------------------------------


def test_defaults_are_the_documented_limits() -> None:
    assert dict(DEFAULT_LIMITS) == {
        "search": Limit(20, 60.0),
        "buy_order": Limit(60, 60.0),
        "set_platform_api": Limit(5, 60.0),
    }


@pytest.mark.parametrize(
    ("calls", "period"),
    [(0, 60.0), (-1, 60.0), (1, 0.0), (1, -5.0), (1, math.inf), (1, math.nan), (True, 60.0)],
)
def test_a_limit_that_allows_nothing_sensible_is_refused(calls: int, period: float) -> None:
    with pytest.raises(ValueError, match="limit"):
        Limit(calls, period)


@pytest.mark.parametrize(
    "use",
    [
        lambda lim: lim.usage("serch"),
        lambda lim: lim.next_free("serch"),
        lambda lim: lim.pause("serch", 1.0),
    ],
    ids=["usage", "next_free", "pause"],
)
def test_an_unknown_bucket_is_an_error_naming_it(use: object, clock: VirtualClock) -> None:
    limiter = RateLimiter(clock)
    with pytest.raises(ValueError, match=r"unknown rate-limit bucket 'serch'.*search"):
        use(limiter)  # type: ignore[operator]


async def test_acquiring_from_an_unknown_bucket_is_an_error(clock: VirtualClock) -> None:
    limiter = RateLimiter(clock)
    with pytest.raises(ValueError, match="serch"):
        await limiter.acquire("serch")
    assert limiter.usage("search") == (0, 20)


@pytest.mark.parametrize("seconds", [-1.0, math.nan, math.inf])
def test_a_pause_must_be_a_sensible_wait(seconds: float, clock: VirtualClock) -> None:
    limiter = RateLimiter(clock)
    with pytest.raises(ValueError, match="pause"):
        limiter.pause("search", seconds)


# -- waiting exactly as long as needed -----------------------------------------------------


async def test_calls_within_the_limit_go_out_at_once(clock: VirtualClock) -> None:
    limiter = limiter_with(clock, b=Limit(3, 10.0))
    start = clock.now()
    with anyio.fail_after(HANG_GUARD):
        for _ in range(3):
            await limiter.acquire("b")
    assert clock.now() == start
    assert limiter.usage("b") == (3, 3)
    assert limiter.next_free("b") == start + 10.0


async def test_a_call_past_the_limit_goes_out_exactly_when_the_oldest_call_leaves(
    clock: VirtualClock,
) -> None:
    limiter = limiter_with(clock, b=Limit(3, 10.0))
    rec = Recorder(clock, limiter)
    start = clock.now()
    with anyio.fail_after(HANG_GUARD):
        async with clock.autojump(), anyio.create_task_group() as tg:
            for i, at in enumerate([0.0, 1.0, 2.5, 3.0, 3.0, 3.0, 30.0]):
                tg.start_soon(rec.call, f"c{i}", Lane.BACKGROUND, at)
    offsets = sorted(sent - start for sent in rec.sent.values())
    # The three callers arriving at +3 go out when c0's, c1's and c2's slots free (+10,
    # +11, +12.5); c6 finds the window free again and does not wait.
    assert offsets == [0.0, 1.0, 2.5, 10.0, 11.0, 12.5, 30.0]
    assert rec.sent["c6"] == start + 30.0


async def test_the_search_budget_lets_twenty_calls_a_minute_through(clock: VirtualClock) -> None:
    limiter = RateLimiter(clock)
    rec = Recorder(clock, limiter, bucket="search")
    start = clock.now()
    with anyio.fail_after(HANG_GUARD):
        async with clock.autojump(), anyio.create_task_group() as tg:
            for i in range(45):
                tg.start_soon(rec.call, f"s{i}")
    waits = sorted(sent - start for sent in rec.sent.values())
    assert waits == [0.0] * 20 + [60.0] * 20 + [120.0] * 5


async def test_usage_and_next_free_follow_the_sliding_window(clock: VirtualClock) -> None:
    limiter = limiter_with(clock, b=Limit(2, 10.0))
    start = clock.now()
    await limiter.acquire("b")
    clock.advance(4.0)
    await limiter.acquire("b")
    assert limiter.usage("b") == (2, 2)
    assert limiter.next_free("b") == start + 10.0
    clock.advance(6.0)  # the first call leaves the window
    assert limiter.usage("b") == (1, 2)
    assert limiter.next_free("b") == clock.now()
    clock.advance(4.0)
    assert limiter.usage("b") == (0, 2)


async def test_an_unlimited_bucket_never_waits(clock: VirtualClock) -> None:
    limiter = limiter_with(clock, search=None)
    start = clock.now()
    with anyio.fail_after(HANG_GUARD):
        for _ in range(500):
            await limiter.acquire("search", Lane.BACKGROUND)
    assert clock.now() == start
    assert clock.next_deadline() is None
    assert limiter.usage("search") == (0, None)
    assert limiter.next_free("search") == start


async def test_buckets_are_independent(clock: VirtualClock) -> None:
    limiter = RateLimiter(clock)
    for _ in range(5):
        await limiter.acquire("set_platform_api")
    start = clock.now()
    with anyio.fail_after(HANG_GUARD):
        await limiter.acquire("search")
        await limiter.acquire("buy_order")
    assert clock.now() == start
    assert limiter.usage("set_platform_api") == (5, 5)
    assert limiter.next_free("set_platform_api") == start + 60.0


# -- a 429 pauses the whole bucket ---------------------------------------------------------


async def test_a_429_pause_holds_every_caller_until_it_ends(clock: VirtualClock) -> None:
    limiter = RateLimiter(clock)
    rec = Recorder(clock, limiter, bucket="search")
    start = clock.now()
    limiter.pause("search", 30.0)
    assert limiter.next_free("search") == start + 30.0
    with anyio.fail_after(HANG_GUARD):
        async with clock.autojump(), anyio.create_task_group() as tg:
            for lane in Lane:
                tg.start_soon(rec.call, lane.name, lane)
            tg.start_soon(rec.call, "late", Lane.RECONCILE, 12.0)
    assert set(rec.sent.values()) == {start + 30.0}
    assert len(rec.sent) == 4


def test_a_pause_says_once_that_it_waits_and_how_long(
    clock: VirtualClock, caplog: pytest.LogCaptureFixture
) -> None:
    limiter = RateLimiter(clock)
    with caplog.at_level(logging.INFO, logger="snipe.limiter"):
        limiter.pause("search", 58.2)
        limiter.pause("search", 30.0)  # within the pause: nothing new to say
        clock.advance(10.0)
        limiter.pause("search", 48.0)  # ends sooner: still nothing
    said = [r.getMessage() for r in caplog.records]
    assert said == [
        "search: the service answered 429 (too many requests): waiting 58.2 s before"
        " the next search call"
    ]
    assert caplog.records[0].levelno == logging.WARNING


def test_a_pause_extends_but_never_shortens(clock: VirtualClock) -> None:
    limiter = RateLimiter(clock)
    start = clock.now()
    limiter.pause("buy_order", 30.0)
    limiter.pause("buy_order", 10.0)
    assert limiter.next_free("buy_order") == start + 30.0
    limiter.pause("buy_order", 45.0)
    assert limiter.next_free("buy_order") == start + 45.0
    clock.advance(45.0)
    assert limiter.next_free("buy_order") == clock.now()


async def test_a_pause_during_a_wait_delays_the_waiter_to_the_pause_end(
    clock: VirtualClock,
) -> None:
    limiter = limiter_with(clock, b=Limit(1, 10.0))
    rec = Recorder(clock, limiter)
    start = clock.now()
    await limiter.acquire("b")

    async def answer_429_at(at: float, seconds: float) -> None:
        await clock.sleep(at)
        limiter.pause("b", seconds)

    with anyio.fail_after(HANG_GUARD):
        async with clock.autojump(), anyio.create_task_group() as tg:
            tg.start_soon(rec.call, "waiting", Lane.BUY)  # would go at +10
            tg.start_soon(answer_429_at, 5.0, 20.0)  # until +25
    assert rec.sent == {"waiting": start + 25.0}


async def test_a_pause_also_holds_an_unlimited_bucket(clock: VirtualClock) -> None:
    limiter = limiter_with(clock, search=None)
    rec = Recorder(clock, limiter, bucket="search")
    start = clock.now()
    limiter.pause("search", 2.0)
    with anyio.fail_after(HANG_GUARD):
        async with clock.autojump(), anyio.create_task_group() as tg:
            tg.start_soon(rec.call, "a")
            tg.start_soon(rec.call, "b")
    assert rec.sent == {"a": start + 2.0, "b": start + 2.0}


# -- priority lanes ------------------------------------------------------------------------


async def test_when_the_budget_is_short_lanes_go_in_priority_order_then_fifo(
    clock: VirtualClock,
) -> None:
    limiter = limiter_with(clock, b=Limit(1, 10.0))
    rec = Recorder(clock, limiter)
    start = clock.now()
    await limiter.acquire("b")  # the window is full until +10
    arrivals = [
        ("bg1", Lane.BACKGROUND),
        ("buy1", Lane.BUY),
        ("rec1", Lane.RECONCILE),
        ("bg2", Lane.BACKGROUND),
        ("buy2", Lane.BUY),
        ("rec2", Lane.RECONCILE),
    ]
    with anyio.fail_after(HANG_GUARD):
        async with anyio.create_task_group() as tg:
            for name, lane in arrivals:
                await tg.start(rec.queue, name, lane)
            async with clock.autojump():
                while len(rec.sent) < len(arrivals):
                    await clock.sleep(10.0)
    assert rec.order == ["rec1", "rec2", "buy1", "buy2", "bg1", "bg2"]
    assert [rec.sent[name] - start for name in rec.order] == [10.0, 20.0, 30.0, 40.0, 50.0, 60.0]


async def test_a_higher_lane_arriving_during_a_wait_goes_first_at_the_same_instant(
    clock: VirtualClock,
) -> None:
    limiter = limiter_with(clock, b=Limit(1, 10.0))
    rec = Recorder(clock, limiter)
    start = clock.now()
    await limiter.acquire("b")
    with anyio.fail_after(HANG_GUARD):
        async with clock.autojump(), anyio.create_task_group() as tg:
            tg.start_soon(rec.call, "background", Lane.BACKGROUND)  # head, waiting for +10
            tg.start_soon(rec.call, "reconcile", Lane.RECONCILE, 5.0)
    assert rec.sent == {"reconcile": start + 10.0, "background": start + 20.0}


# -- cancellation --------------------------------------------------------------------------


async def cancel_at(clock: VirtualClock, scope: anyio.CancelScope, at: float) -> None:
    await clock.sleep(at)
    scope.cancel()


@pytest.mark.parametrize("cancelled", ["head", "second"])
async def test_a_cancelled_waiter_takes_no_slot_and_holds_nobody_up(
    clock: VirtualClock, cancelled: str
) -> None:
    limiter = limiter_with(clock, b=Limit(1, 10.0))
    rec = Recorder(clock, limiter)
    start = clock.now()
    await limiter.acquire("b")
    gave_up: list[str] = []

    async def impatient(name: str, lane: Lane) -> None:
        with anyio.CancelScope() as scope:
            tg.start_soon(cancel_at, clock, scope, 4.0)
            await rec.call(name, lane)
        if scope.cancelled_caught:
            gave_up.append(name)

    with anyio.fail_after(HANG_GUARD):
        async with clock.autojump(), anyio.create_task_group() as tg:
            if cancelled == "head":
                tg.start_soon(impatient, "impatient", Lane.RECONCILE)
                tg.start_soon(rec.call, "patient", Lane.BACKGROUND)
            else:
                tg.start_soon(rec.call, "patient", Lane.RECONCILE)
                tg.start_soon(impatient, "impatient", Lane.BACKGROUND)
            tg.start_soon(rec.call, "later", Lane.BACKGROUND, 5.0)
    assert gave_up == ["impatient"]
    # the impatient caller's slot was never taken: the others go at +10 and +20
    assert rec.sent == {"patient": start + 10.0, "later": start + 20.0}


async def test_a_caller_cancelled_before_it_asks_takes_nothing(clock: VirtualClock) -> None:
    limiter = limiter_with(clock, b=Limit(1, 10.0))
    with anyio.CancelScope() as scope:
        scope.cancel()
        await limiter.acquire("b")
    assert scope.cancelled_caught
    assert limiter.usage("b") == (0, 1)


async def test_cancelling_every_waiter_leaves_the_window_as_it_was(clock: VirtualClock) -> None:
    limiter = limiter_with(clock, b=Limit(2, 10.0))
    start = clock.now()
    await limiter.acquire("b")
    await limiter.acquire("b")
    with anyio.fail_after(HANG_GUARD):
        async with clock.autojump(), anyio.create_task_group() as tg:
            for lane in Lane:
                tg.start_soon(limiter.acquire, "b", lane)
            await clock.sleep(3.0)
            tg.cancel_scope.cancel()
    assert clock.now() == start + 3.0
    assert limiter.usage("b") == (2, 2)
    assert limiter.next_free("b") == start + 10.0


# -- the limit holds for any pattern of callers --------------------------------------------


@dataclass
class Outcome:
    lane: Lane
    arrived: float
    sent: float | None = None
    gave_up: float | None = None


async def run_pattern(
    limit: Limit, pattern: list[tuple[int, Lane, int | None]]
) -> tuple[Mapping[int, Outcome], RateLimiter]:
    """Callers arrive at ``arrival / 2`` virtual seconds; one with a patience gives up
    ``patience / 2`` seconds after arriving if still waiting."""
    clock = VirtualClock()
    start = clock.now()
    limiter = RateLimiter(clock, {"b": limit})
    outcomes: dict[int, Outcome] = {}

    async def caller(i: int, arrival: int, lane: Lane, patience: int | None) -> None:
        await clock.sleep_until(start + arrival / 2)
        outcome = outcomes[i] = Outcome(lane, clock.now())
        async with anyio.create_task_group() as inner:
            if patience is not None:
                inner.start_soon(cancel_at, clock, inner.cancel_scope, patience / 2)
            try:
                await limiter.acquire("b", lane)
            except anyio.get_cancelled_exc_class():
                outcome.gave_up = clock.now()
                raise
            outcome.sent = clock.now()
            inner.cancel_scope.cancel()

    with anyio.fail_after(HANG_GUARD):
        async with clock.autojump(), anyio.create_task_group() as tg:
            for i, (arrival, lane, patience) in enumerate(pattern):
                tg.start_soon(caller, i, arrival, lane, patience)
    return outcomes, limiter


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    calls=st.integers(1, 4),
    period=st.sampled_from([1.0, 2.5, 10.0]),
    pattern=st.lists(
        st.tuples(
            st.integers(0, 40),
            st.sampled_from(Lane),
            st.one_of(st.none(), st.integers(0, 30)),
        ),
        min_size=1,
        max_size=30,
    ),
)
async def test_any_pattern_of_callers_respects_the_limit_the_lanes_and_loses_no_time(
    calls: int, period: float, pattern: list[tuple[int, Lane, int | None]]
) -> None:
    outcomes, _ = await run_pattern(Limit(calls, period), pattern)
    sent = sorted(o.sent for o in outcomes.values() if o.sent is not None)

    # Every caller either went out or gave up.
    for o in outcomes.values():
        assert (o.sent is None) != (o.gave_up is None)

    # Never more than ``calls`` in any window: a call at g occupies the window until
    # g + period; checking at each send instant covers every window.
    for t in sent:
        assert sum(1 for g in sent if g <= t < g + period) <= calls

    # No time lost: a caller that waited went out the instant a slot freed, so the
    # window was full just before.
    for o in outcomes.values():
        if o.sent is not None and o.sent > o.arrived:
            assert sum(1 for g in sent if g < o.sent <= g + period) >= calls

    # Priority, then FIFO: nobody went out while a caller ahead of it (lower lane, or same
    # lane and earlier arrival) had been waiting since before and was still waiting.
    for x in outcomes.values():
        if x.sent is None:
            continue
        for y in outcomes.values():
            ended = y.sent if y.sent is not None else y.gave_up
            assert ended is not None
            if y.arrived < x.sent < ended:
                assert (x.lane, x.arrived) <= (y.lane, y.arrived)


# -- holding a slot until the answer arrived (exact under jitter) --------------------------


async def test_a_held_slot_frees_a_window_after_its_answer(clock: VirtualClock) -> None:
    limiter = limiter_with(clock, b=Limit(2, 60.0))
    start = clock.now()
    sent: list[float] = []

    async def call(round_trip: float) -> None:
        async with limiter.hold("b"):
            sent.append(clock.now() - start)
            await clock.sleep(round_trip)

    with anyio.fail_after(HANG_GUARD):
        async with clock.autojump(), anyio.create_task_group() as tg:
            tg.start_soon(call, 5.0)  # answered at 5: its slot is back at 65
            tg.start_soon(call, 1.0)  # answered at 1: back at 61
            await clock.sleep(0.5)
            assert limiter.usage("b") == (2, 2)  # both in flight count
            tg.start_soon(call, 0.0)
            tg.start_soon(call, 0.0)
    assert sent == [0.0, 0.0, 61.0, 65.0]


async def test_only_an_answer_frees_a_slot_held_in_flight(clock: VirtualClock) -> None:
    limiter = limiter_with(clock, b=Limit(1, 60.0))
    answered = anyio.Event()
    second_at: list[float] = []

    async def slow() -> None:
        async with limiter.hold("b"):
            await answered.wait()

    async def next_call() -> None:
        async with limiter.hold("b"):
            second_at.append(clock.now())

    start = clock.now()
    with anyio.fail_after(HANG_GUARD):
        async with clock.autojump(), anyio.create_task_group() as tg:
            tg.start_soon(slow)
            await clock.sleep(1.0)
            tg.start_soon(next_call)
            # the estimate takes the call in flight as answered now; the wait is exact
            assert limiter.next_free("b") == clock.now() + 60.0
            await clock.sleep(200.0)  # no answer yet: nobody may go, however long
            assert second_at == []
            answered.set()
    assert second_at == [start + 201.0 + 60.0]


async def test_a_cancelled_call_starts_its_window_when_abandoned(clock: VirtualClock) -> None:
    limiter = limiter_with(clock, b=Limit(1, 60.0), free=None)
    start = clock.now()
    with anyio.fail_after(HANG_GUARD):
        async with clock.autojump():
            with anyio.move_on_after(HANG_GUARD):
                with anyio.CancelScope() as scope:
                    async with limiter.hold("b"):
                        await clock.sleep(10.0)
                        scope.cancel()
                        await clock.sleep(100.0)
            async with limiter.hold("free"):  # an unlimited bucket is never counted
                pass
            assert limiter.usage("free") == (0, None)
            async with limiter.hold("b"):
                assert clock.now() == start + 10.0 + 60.0
