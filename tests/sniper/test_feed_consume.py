"""``FeedWatch.consume``: the client's batches handed to the engine event by event, in
order, and the event loop never held by one batch longer than ``DRAIN_SECONDS`` of the
engine's clock (a burst must not starve the engine's other runners)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from engine import VirtualClock
from engine.client import FeedBatch, FeedConnected, FeedEvent
from engine.sniper import FeedSettings
from engine.sniper._feedwatch import DRAIN_SECONDS, FeedWatch


def marker(n: int, clock: VirtualClock) -> FeedConnected:
    return FeedConnected(n, clock.now(), f"sid{n}", ("csgo",), 25.0, 20.0)


async def run_consume(
    batches: list[list[FeedEvent]], cost: float, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[int], list[int]]:
    """The generations handed to the engine in order, and how many had been handed at
    each turn of the event loop the consumer gave in the middle of a batch."""
    clock = VirtualClock()
    handed: list[int] = []
    turns: list[int] = []

    async def on_feed_event(event: Any) -> None:
        handed.append(event.generation)
        clock.advance(cost)  # each event takes ``cost`` seconds of the engine's clock

    checkpoint = anyio.lowlevel.checkpoint

    async def turn() -> None:
        turns.append(len(handed))
        await checkpoint()

    monkeypatch.setattr(anyio.lowlevel, "checkpoint", turn)
    engine = SimpleNamespace(on_feed_event=on_feed_event, clock=clock)
    watch = FeedWatch(engine, FeedSettings())  # type: ignore[arg-type]
    send, receive = anyio.create_memory_object_stream[FeedBatch](len(batches) + 1)
    for batch in batches:
        send.send_nowait(batch)
    send.close()
    await watch.consume(receive)
    return handed, turns


async def test_every_event_of_every_batch_is_handed_over_in_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = VirtualClock()
    batches: list[list[FeedEvent]] = [
        [marker(n, clock) for n in range(start, start + 50)] for start in (1, 51, 101)
    ]
    handed, turns = await run_consume(batches, 0.0, monkeypatch)
    assert handed == list(range(1, 151))
    assert turns == []  # no time passed: a turn between batches only


async def test_a_slow_batch_gives_the_loop_a_turn_every_drain_period(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = VirtualClock()
    per_turn = 5  # events of DRAIN_SECONDS / 5 each: a turn after every 5th at the latest
    batch: list[FeedEvent] = [marker(n, clock) for n in range(1, 41)]
    # a hair over a fifth each: the clock's float sums never round a 5th short
    handed, turns = await run_consume([batch], DRAIN_SECONDS / per_turn * 1.01, monkeypatch)
    assert handed == list(range(1, 41))
    assert turns == list(range(per_turn, 41, per_turn))
