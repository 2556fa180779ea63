"""The event stream ends when the server stops: the event bus, closed, wakes every waiting
stream and each ends (a stream left open held a stopping server for its whole grace and
was then cut off, on asyncio and trio)."""

from __future__ import annotations

import anyio
from anyio import wait_all_tasks_blocked
from sniper.harness import pick_item, quiet_sandbox, rules_text

from engine import VirtualClock
from engine.api import EventBus

from .helpers import READ, bearer, served


async def test_a_closed_bus_wakes_its_waiters_with_nothing(clock: VirtualClock) -> None:
    bus = EventBus(clock)
    bus.publish("control", action="pause")
    got: list[object] = []

    async def waiter() -> None:
        got.append(await bus.wait(1))  # nothing after event 1 yet

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(waiter)
            await wait_all_tasks_blocked()
            assert got == []
            bus.close()
    assert got == [[]]
    assert [e.id for e in await bus.wait(0)] == [1]  # what is held is still told


async def test_an_open_event_stream_ends_when_the_server_stops(clock: VirtualClock) -> None:
    sandbox = quiet_sandbox(clock)
    async with served(clock, sandbox, rules_text(pick_item(sandbox).name)) as s:
        answers = []

        async def listen() -> None:
            answers.append(await s.client.get("/api/events", headers=bearer(READ)))

        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(listen)
                await wait_all_tasks_blocked()
                assert answers == []  # open, waiting for an event
                s.api.bus.close()
        (answer,) = answers
        assert answer.status_code == 200
        assert answer.text == ": snipe events\n\n"
