"""The live engine with the live feed: the sandbox served by hypercorn on 127.0.0.1 (its
feed is a websocket), the engine's ``run`` with a ``FeedClient``, market and engine on one
virtual clock moved by the test (both backends)."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import anyio

from engine import VirtualClock
from engine.client import Backoff, FeedClient
from engine.sandbox import FeedConfig, MarketConfig, Sandbox, SandboxConfig, served
from engine.sniper import EngineSettings, FeedSettings
from engine.sniper._view import feed_words

from .harness import Rig, pick_item, plant, purchases_of, rig, rules_text

# A guard against a hang, not a measurement.
PATIENCE = 20.0
SETTINGS = EngineSettings(feed=FeedSettings(mode="on", audit_every=300.0))


def feed_sandbox(clock: VirtualClock) -> Sandbox:
    market = MarketConfig(size=300, deal_share=0.0, hold_share=0.0, mean_lifetime=10**9)
    feed = FeedConfig(ping_interval=25.0, ping_timeout=20.0)
    return Sandbox(SandboxConfig(seed=3, market=market, feed=feed), clock=clock)


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
    # the sandbox accepted permessage-deflate: the traffic shown is the socket's
    assert view.feed.compressed is True
    assert view.feed.bytes_per_day is not None
    assert "/day deflated" in feed_words(view.feed)


async def test_a_stall_falls_back_to_the_snapshot_and_nothing_is_bought_twice(
    clock: VirtualClock,
) -> None:
    """Issue 17's fault test: the feed stalls silently for 2 minutes in the middle of a
    run; the engine notices within pingInterval + pingTimeout, falls back, heals, and buys
    the deals listed during the stall without the feed, nothing bought twice, as the
    sandbox's ground truth has it."""
    sandbox = feed_sandbox(clock)
    item = pick_item(sandbox)
    heartbeat = sandbox.config.feed.ping_interval + sandbox.config.feed.ping_timeout
    async with running(clock, sandbox, item.name) as r:
        watch = r.engine.feedwatch
        client = watch.client
        assert client is not None
        # the middle of a run: the feed works, a deal is bought on its event
        before = plant(sandbox, item, price=item.reference // 2)
        await drive(clock, lambda: bought_ids(sandbox) == [str(before.item_id)])
        # credited to the feed once the engine has the service's answer
        await drive(clock, lambda: watch.bought_items == {str(before.item_id)})
        # silence: the next event holds the connection for 2 minutes, pings included,
        # the socket left open
        sandbox.inject_feed("stall", count=1, seconds=120.0)
        first = plant(sandbox, item, price=item.reference // 2)  # its event stalls the feed
        stalled_at = clock.now()
        # a deal listed while the feed is silent and nobody can know it is dead
        during: list[str] = []
        # the clock moves half a second at a time up to the deadline the last frame the
        # client read sets (a loaded machine may read the frames sent before the stall
        # late), never past it: then only real time passes until the engine notices
        with anyio.fail_after(PATIENCE):
            while watch.connected:
                await anyio.sleep(0.002)
                last = client.health().last_frame_at
                assert last is not None
                if clock.now() < last + heartbeat:
                    clock.advance(min(0.5, last + heartbeat - clock.now()))
                if not during and clock.now() >= stalled_at + 20.0:
                    during.append(str(plant(sandbox, item, price=item.reference // 2).item_id))
        # noticed in time, by the engine's own stall detector (the server closed nothing)
        down_at, last = watch.down_at, client.health().last_frame_at
        assert down_at is not None
        assert last is not None
        assert down_at - last <= heartbeat
        assert client.health().disconnects == {"stall": 1}
        snapshots = r.engine.status.snapshots
        # listed while the feed is down, before any new connection: the feed never tells it
        after = plant(sandbox, item, price=item.reference // 2)
        # falls back: a snapshot poll at once (the clock stands still meanwhile), not at
        # the audit's 5 minutes
        await drive(clock, lambda: r.engine.status.snapshots > snapshots)
        assert clock.now() == down_at
        missed = sorted([str(first.item_id), *during, str(after.item_id)])
        wanted = sorted([str(before.item_id), *missed])
        # the names it flagged are searched in the priority lane, the deals bought
        await drive(clock, lambda: bought_ids(sandbox) == wanted, step=0.1)
        assert watch.bought_items == {str(before.item_id)}  # none of them from the feed
        # heals: a new connection, its gap healed by a snapshot begun after it, trusted
        await drive(clock, lambda: watch.trusted and watch.generation >= 2, step=1.0)
        assert (watch.generation, watch.gaps_healed) == (2, 2)
        # the 2 minutes end on the market's clock: the held events go to the closed socket
        # and nowhere else; the feed goes on, nothing more is bought
        await drive(clock, lambda: clock.now() >= stalled_at + 125.0, step=1.0)
        await drive(clock, lambda: sandbox.feed.connections == 1)
        purchases = await r.ledger.purchases()
        truth = sandbox.ground_truth()
    # nothing bought twice, by the sandbox's word: one purchase and one purchase request
    # per item (no second attempt, refused or not), and the engine's ledger agrees
    assert sorted(str(p["item_id"]) for p in truth["purchases"]) == wanted
    assert sorted(str(q["item_id"]) for q in truth["purchase_requests"]) == wanted
    assert sorted(p.item_id for p in purchases) == wanted


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
