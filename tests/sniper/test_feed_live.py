"""The live engine with the live feed: the sandbox served by hypercorn on 127.0.0.1 (its
feed is a websocket), the engine's ``run`` with a ``FeedClient``, market and engine on one
virtual clock moved by the test (both backends)."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from functools import partial

import anyio

from engine import VirtualClock
from engine.client import Backoff, FeedClient
from engine.sandbox import FeedConfig, MarketConfig, Sandbox, SandboxConfig, serve
from engine.sniper import EngineSettings, FeedSettings

from .harness import Rig, pick_item, plant, purchases_of, rig, rules_text

# A guard against a hang, not a measurement.
PATIENCE = 20.0
SETTINGS = EngineSettings(feed=FeedSettings(mode="on", audit_every=300.0))


def feed_sandbox(clock: VirtualClock) -> Sandbox:
    market = MarketConfig(size=300, deal_share=0.0, hold_share=0.0, mean_lifetime=10**9)
    feed = FeedConfig(ping_interval=25.0, ping_timeout=20.0)
    return Sandbox(SandboxConfig(seed=3, market=market, feed=feed), clock=clock)


@asynccontextmanager
async def served(sandbox: Sandbox) -> AsyncIterator[str]:
    stop = anyio.Event()
    ready = anyio.Event()
    urls: list[str] = []

    def on_ready(url: str) -> None:
        urls.append(url)
        ready.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(
            partial(serve, sandbox, port=0, on_ready=on_ready, shutdown_trigger=stop.wait)
        )
        await ready.wait()
        try:
            yield urls[0]
        finally:
            stop.set()


async def drive(clock: VirtualClock, done: Callable[[], bool], step: float = 0.0) -> None:
    """Let real time pass (the socket's), moving the virtual clock ``step`` at a time,
    until ``done()``."""
    with anyio.fail_after(PATIENCE):
        while not done():
            await anyio.sleep(0.002)
            if step:
                clock.advance(step)


@asynccontextmanager
async def running(clock: VirtualClock, sandbox: Sandbox, name: str) -> AsyncIterator[Rig]:
    async with (
        served(sandbox) as url,
        rig(clock, sandbox, rules_text(name), settings=SETTINGS) as r,
    ):
        r.engine.feedwatch.client = FeedClient(
            url, games=["csgo"], clock=clock, backoff=Backoff(initial=0.5, cap=1.0)
        )
        async with anyio.create_task_group() as tg:
            tg.start_soon(r.engine.run)
            await drive(clock, lambda: r.engine.feedwatch.trusted, step=0.5)
            yield r
            tg.cancel_scope.cancel()


def bought_ids(sandbox: Sandbox) -> list[str]:
    return sorted(str(p["item_id"]) for p in purchases_of(sandbox))


async def test_a_deal_on_the_live_feed_is_bought_before_any_search(clock: VirtualClock) -> None:
    sandbox = feed_sandbox(clock)
    item = pick_item(sandbox)
    async with running(clock, sandbox, item.name) as r:
        deal = plant(sandbox, item, price=item.reference // 2)
        # the clock stands still, so no snapshot is due: the feed tells the engine, which
        # buys on the event (a background search due meanwhile would have found it
        # already bought: the feed's count would stay 0)
        await drive(clock, lambda: r.engine.feedwatch.bought == 1)
        await drive(clock, lambda: bought_ids(sandbox) == [str(deal.item_id)])
        view = await r.engine.view()
    assert view.feed is not None
    assert view.feed.connected
    assert view.feed.gaps_healed == 1


async def test_a_stall_falls_back_to_the_snapshot_and_nothing_is_bought_twice(
    clock: VirtualClock,
) -> None:
    sandbox = feed_sandbox(clock)
    item = pick_item(sandbox)
    async with running(clock, sandbox, item.name) as r:
        engine = r.engine
        sandbox.inject_feed("stall", count=1, seconds=120.0)
        first = plant(sandbox, item, price=item.reference // 2)  # its event stalls the feed
        stalled_at = clock.now()
        # silence: noticed within pingInterval + pingTimeout, then the snapshot takes over
        # (the clock stops just past the deadline: closing the socket takes real time)
        gone = lambda: not engine.feedwatch.connected  # noqa: E731
        await drive(clock, lambda: gone() or clock.now() >= stalled_at + 45.5, step=0.5)
        await drive(clock, gone)
        assert engine.feedwatch.down_at is not None
        assert engine.feedwatch.down_at - stalled_at <= 25.0 + 20.0 + 0.5
        second = plant(sandbox, item, price=item.reference // 2)  # listed during the stall
        wanted = sorted([str(first.item_id), str(second.item_id)])
        await drive(clock, lambda: bought_ids(sandbox) == wanted, step=1.0)
        # the stall ends, the feed reconnects and heals; the held events come (or not)
        await drive(
            clock, lambda: engine.feedwatch.trusted and engine.feedwatch.generation >= 2, step=1.0
        )
        purchases = await r.ledger.purchases()
    assert sorted(p.item_id for p in purchases) == wanted  # ledger == ground truth, once each
    assert bought_ids(sandbox) == wanted


async def test_auto_gives_up_a_feed_that_never_answers_and_polls_the_snapshot(
    clock: VirtualClock,
) -> None:
    sandbox = feed_sandbox(clock)
    item = pick_item(sandbox)
    settings = EngineSettings(feed=FeedSettings(mode="auto"))
    async with rig(clock, sandbox, rules_text(item.name), settings=settings) as r:
        engine = r.engine
        with socket.socket() as closed:  # a loopback port nobody listens on
            closed.bind(("127.0.0.1", 0))
            port = closed.getsockname()[1]
        engine.feedwatch.client = FeedClient(
            f"http://127.0.0.1:{port}", games=["csgo"], clock=clock, backoff=Backoff(0.5, cap=1.0)
        )
        async with anyio.create_task_group() as tg:
            tg.start_soon(engine.run)
            await drive(clock, lambda: engine.feedwatch.unavailable, step=0.5)
            snapshots = engine.status.snapshots
            await drive(clock, lambda: engine.status.snapshots >= snapshots + 2, step=0.5)
            tg.cancel_scope.cancel()
        view = await engine.view()
    assert view.feed is not None
    assert (view.feed.state, view.feed.connected) == ("unavailable", False)
    assert engine.next_due("snapshot") <= clock.now() + SETTINGS.snapshot_every
