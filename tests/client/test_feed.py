"""The feed client against a feed served on 127.0.0.1 that the test drives frame by frame:
handshake, subscriptions, heartbeat, odd frames set aside while good ones flow, stalls and
dropped connections healed with backoff, and the key kept out of the address."""

from __future__ import annotations

import logging
import random
import socket
from typing import Any

import anyio
import pytest
from feed_support import CLOSE, DROP, FakeFeed, served, until

from engine import ConfigError, VirtualClock
from engine.client import (
    FEED_BATCH,
    Backoff,
    FeedBatch,
    FeedClient,
    FeedConnected,
    FeedDisconnected,
    FeedEvent,
    FeedListingEvent,
    FeedRemovalEvent,
)
from engine.models import SetAside

KEY = "FEED-KEY-0123456789abcdef"
NEW = (
    '42["new",{"auto":true,"float":0.0041,"game":"csgo","item_id":"53862560251",'
    '"name":"★ StatTrak™ Survival Knife | Doppler Phase 1 (Factory New)","paint_index":418,'
    '"phase":"Phase 1","price":222809,"platform_price":249929,"sticker_names":null}]'
)
UPDATE = '42["update",{"game":"csgo","item_id":"53862560251","name":"x","price":"199000"}]'
REMOVED = '42["removed",{"game":"csgo","item_id":"53862560251","name":"x","price":199000}]'


async def next_event(feed: FeedClient) -> FeedEvent:
    return await anext(aiter(feed))


async def test_handshake_subscriptions_and_events_in_order(
    clock: VirtualClock, caplog: pytest.LogCaptureFixture
) -> None:
    server = FakeFeed()
    seen: list[tuple[str, SetAside]] = []
    hooked: list[FeedConnected] = []
    async with served(server) as url:
        feed = FeedClient(url, games=["csgo", "dota2"], clock=clock, on_connect=hooked.append)
        feed.malformed_observer = lambda endpoint, item: seen.append((endpoint, item))
        async with feed:
            connected = await next_event(feed)
            assert isinstance(connected, FeedConnected)
            assert (connected.generation, connected.games) == (1, ("csgo", "dota2"))
            assert (connected.ping_interval, connected.ping_timeout) == (25.0, 20.0)
            assert hooked == [connected]
            conn = server.connections[0]
            assert (conn.path, conn.query) == ("/socket.io/", "EIO=4&transport=websocket")
            await until(lambda: len(conn.received) >= 3, "the subscriptions")
            assert conn.received[:3] == [
                "40",
                '42["sub",{"name":"csgo"}]',
                '42["sub",{"name":"dota2"}]',
            ]
            await until(lambda: feed.health().subscribed == ("csgo", "dota2"), "subscribed")
            # good events with odd frames between them: the odd ones are set aside
            await conn.send(
                NEW,
                '42["new",{"item_id":]',  # a payload that is not JSON
                '42["new",{"item_id":',  # a frame cut short
                '42["new",{"name":"x","price":1}]',  # no item_id
                '42["update",{"item_id":"9","name":"x","price":"12 USD"}]',  # bad price
                '42["sold",{"item_id":"9"}]',  # an event the feed does not send
                "9zzz",  # an unknown packet type
                b"\x00\x01",  # a binary frame
                UPDATE,
                '42["new",{"item_id":"8","name":"y","price":2}]',
                REMOVED,
            )
            events = [await next_event(feed) for _ in range(4)]
            first, update, second, removal = events
            assert isinstance(first, FeedListingEvent)
            assert (first.kind, first.listing.item_id, first.listing.price) == (
                "new", "53862560251", 222809
            )  # fmt: skip
            assert first.listing.phase == "Phase 1"
            assert first.generation == 1
            assert first.received_at == clock.now()
            assert isinstance(update, FeedListingEvent)
            assert (update.kind, update.listing.price) == ("update", 199000)
            assert isinstance(second, FeedListingEvent)
            assert second.listing.item_id == "8"
            assert isinstance(removal, FeedRemovalEvent)
            assert (removal.removal.item_id, removal.removal.price) == ("53862560251", 199000)
            health = feed.health()
            assert health.connected
            assert health.events == {"new": 2, "update": 1, "removed": 1}
            assert health.set_aside == {
                "(json)": 1, "(event)": 1, "item_id": 1, "price": 1, "(event name)": 1,
                "(packet)": 1, "(binary)": 1,
            }  # fmt: skip
            assert health.bytes_received > len(NEW) + len(UPDATE) + len(REMOVED)
            assert health.last_event_at == clock.now()
            assert health.reconnects == 0
            assert [endpoint for endpoint, _ in seen] == ["feed"] * 7
            assert {item.field for _, item in seen} == set(health.set_aside)
    warnings = [r for r in caplog.records if "set aside" in r.getMessage()]
    assert len(warnings) == 7  # each kind once


async def test_every_ping_is_answered_with_its_data(clock: VirtualClock) -> None:
    server = FakeFeed()
    async with served(server) as url, FeedClient(url, games=["csgo"], clock=clock) as feed:
        assert isinstance(await next_event(feed), FeedConnected)
        conn = server.connections[0]
        await conn.send("2", "2probe", "2")
        await until(lambda: conn.received.count("3") == 2, "two pongs")
        pongs = [f for f in conn.received if f.startswith("3")]
        assert pongs == ["3", "3probe", "3"]


async def test_a_silent_connection_is_declared_dead_and_replaced(clock: VirtualClock) -> None:
    server = FakeFeed()
    rng = random.Random(3)
    async with served(server) as url:
        feed = FeedClient(url, games=["csgo"], clock=clock, rng=rng)
        async with feed:
            assert isinstance(await next_event(feed), FeedConnected)
            conn = server.connections[0]
            # a ping now and then keeps it alive, however long it runs
            for _ in range(3):
                clock.advance(30.0)
                await conn.send("2")
                count = conn.received.count("3")
                await until(lambda count=count: conn.received.count("3") > count, "a pong")
            assert feed.health().connected
            # then silence for pingInterval + pingTimeout (25 + 20 s): dead
            clock.advance(44.0)
            await until(lambda: clock.next_deadline() is not None, "the watchdog waiting")
            assert feed.health().connected
            clock.advance(1.0)
            gone = await next_event(feed)
            assert isinstance(gone, FeedDisconnected)
            assert (gone.generation, gone.reason) == (1, "stall")
            assert not feed.health().connected
            # it comes back after the backoff, as the next generation
            await until(lambda: clock.next_deadline() is not None, "the backoff")
            clock.advance(1.0)
            again = await next_event(feed)
            assert isinstance(again, FeedConnected)
            assert again.generation == 2
            assert len(server.connections) == 2
            health = feed.health()
            assert (health.reconnects, health.disconnects) == (1, {"stall": 1})


async def test_dropped_connections_come_back_with_growing_jittered_backoff(
    clock: VirtualClock,
) -> None:
    server = FakeFeed(drop=3)  # the first three connections fail at once
    backoff = Backoff(initial=1.0, factor=2.0, cap=3.0)
    expected_rng = random.Random(11)
    expected = [backoff.delay(n, expected_rng) for n in range(3)]
    async with served(server) as url:
        feed = FeedClient(url, games=["csgo"], clock=clock, backoff=backoff, rng=random.Random(11))
        async with feed:
            for attempt, delay in enumerate(expected, start=1):
                await until(lambda a=attempt: feed.health().attempts == a, f"attempt {attempt}")
                await until(lambda: clock.next_deadline() is not None, "the backoff sleep")
                deadline = clock.next_deadline()
                assert deadline is not None
                assert deadline - clock.now() == pytest.approx(delay)
                assert len(server.connections) == attempt  # not one more before the wait
                clock.jump_to(deadline)
            connected = await next_event(feed)
            assert isinstance(connected, FeedConnected)
            assert connected.generation == 1  # the failed attempts never connected
            assert len(server.connections) == 4
            assert expected[0] < 1.0 < expected[1] <= 2.0 < expected[2] <= 3.0
            # an abrupt end and a clean close of a live connection are both healed
            await server.connections[-1].send(DROP)
            gone = await next_event(feed)
            assert isinstance(gone, FeedDisconnected)
            await until(lambda: clock.next_deadline() is not None, "the backoff sleep")
            clock.advance(3.0)
            assert isinstance(await next_event(feed), FeedConnected)
            await server.connections[-1].send(CLOSE)
            closed = await next_event(feed)
            assert isinstance(closed, FeedDisconnected)
            assert closed.reason == "closed"
            await until(lambda: clock.next_deadline() is not None, "the backoff sleep")
            clock.advance(3.0)
            back = await next_event(feed)
            assert isinstance(back, FeedConnected)
            assert back.generation == 3


async def test_the_key_goes_in_a_header_and_nowhere_else(
    clock: VirtualClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    server = FakeFeed()
    async with served(server) as url:
        feed = FeedClient(url, games=["csgo"], api_key=KEY, clock=clock)
        async with feed:
            assert isinstance(await next_event(feed), FeedConnected)
            await server.connections[0].send(CLOSE)
            assert isinstance(await next_event(feed), FeedDisconnected)
    conn = server.connections[0]
    assert conn.headers["authorization"] == KEY
    assert KEY not in conn.path + conn.query
    assert KEY not in feed.url
    assert KEY not in repr(feed)
    assert caplog.records
    assert KEY not in caplog.text


async def test_the_client_stops_when_nobody_listens(clock: VirtualClock) -> None:
    server = FakeFeed()
    async with served(server) as url:
        feed = FeedClient(url, games=["csgo"], clock=clock)
        send, receive = anyio.create_memory_object_stream[FeedEvent](0)
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(feed.run, send)
                with receive:
                    assert isinstance(await receive.receive(), FeedConnected)
                await server.connections[0].send(NEW)
            # the task group ended: run() returned once the event had nobody to go to
    assert len(server.connections) == 1
    assert feed.health().attempts == 0


async def test_a_feed_that_cannot_be_reached_is_retried_without_showing_the_key(
    clock: VirtualClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    async with FeedClient(url, games=["csgo"], api_key=KEY, clock=clock) as feed:
        await until(lambda: feed.health().attempts == 1, "the first failure")
        await until(lambda: clock.next_deadline() is not None, "the backoff")
        clock.advance(1.0)
        await until(lambda: feed.health().attempts == 2, "the retry")
        health = feed.health()
        assert not health.connected
        assert health.generation == 0
        assert health.disconnects == {"network": 2}
    assert "ConnectError" in caplog.text
    assert KEY not in caplog.text


@pytest.mark.parametrize(
    ("url", "games", "message"),
    [
        ("http://feed.example?api=SECRET", ["csgo"], "query"),
        ("https://user:pw@feed.example", ["csgo"], "credentials"),
        ("ftp://feed.example", ["csgo"], "http"),
        ("https://feed.example", [], "game"),
        ("https://feed.example", "csgo", "game"),
        ("https://feed.example", [""], "game"),
    ],
)
def test_a_feed_that_cannot_work_is_refused_at_construction(
    url: str, games: Any, message: str
) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        FeedClient(url, games=games)
    assert "SECRET" not in str(caught.value)


@pytest.mark.parametrize(
    ("given", "address"),
    [
        ("https://feed.example", "https://feed.example/socket.io/?EIO=4&transport=websocket"),
        ("wss://feed.example/", "https://feed.example/socket.io/?EIO=4&transport=websocket"),
        ("ws://127.0.0.1:9/socket.io/", "http://127.0.0.1:9/socket.io/?EIO=4&transport=websocket"),
    ],
)
def test_the_feed_address(given: str, address: str) -> None:
    assert FeedClient(given, games=["csgo"]).url == address


async def test_a_burst_and_a_frame_larger_than_a_read_arrive_whole_in_order_in_batches(
    clock: VirtualClock,
) -> None:
    server = FakeFeed()
    big = '42["new",{"item_id":"big","name":"' + "x" * 400_000 + '","price":5}]'
    burst = [
        f'42["new",{{"game":"csgo","item_id":"{n}","name":"AK-47 | Redline","price":{n}}}]'
        for n in range(1, 600)
    ]
    async with served(server) as url:
        feed = FeedClient(url, games=["csgo"], clock=clock)
        send, receive = anyio.create_memory_object_stream[FeedBatch](4)
        got: list[FeedEvent] = []
        sizes: list[int] = []
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(feed.run_batches, send)
                async with receive:
                    async for batch in receive:
                        sizes.append(len(batch))
                        got.extend(batch)
                        if len(got) == 1:
                            await server.connections[0].send(*burst[:300], big, *burst[300:])
                        if len(got) == 2 + len(burst):
                            break
                tg.cancel_scope.cancel()
    assert isinstance(got[0], FeedConnected)
    listings = [e.listing.item_id for e in got[1:] if isinstance(e, FeedListingEvent)]
    expected = [str(n) for n in range(1, 301)] + ["big"] + [str(n) for n in range(301, 600)]
    assert listings == expected
    assert max(sizes) <= FEED_BATCH
    assert feed.health().set_aside == {}
