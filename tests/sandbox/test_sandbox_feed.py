"""The live listing feed at ``/socket.io/``, served by hypercorn on 127.0.0.1 (both
backends) to a minimal Engine.IO client over httpx-ws; the market on a virtual clock."""

from __future__ import annotations

import json

import httpx
import pytest
from httpx_ws import WebSocketDisconnect
from sandbox_feed_support import Feed, feed

from engine import VirtualClock
from engine.sandbox import FeedConfig, MarketConfig, Sandbox, SandboxConfig, served
from engine.sandbox._feed import change_frame


async def _until_closed(client: Feed) -> None:
    while True:
        await client.frame()


QUIET = FeedConfig(ping_interval=1e6, ping_timeout=1e6)  # no heartbeat in the way


def _sandbox(clock: VirtualClock, feed_config: FeedConfig = QUIET) -> Sandbox:
    config = SandboxConfig(seed=11, market=MarketConfig(size=600), feed=feed_config)
    return Sandbox(config, clock=clock)


async def test_the_handshake_says_what_engine_io_4_clients_expect(clock: VirtualClock) -> None:
    sandbox = _sandbox(clock, FeedConfig(ping_interval=7.5, ping_timeout=3.0, max_payload=4096))
    async with served(sandbox) as url, feed(url) as client:
        opening = await client.join("csgo", "rust")
    assert opening["upgrades"] == []
    assert (opening["pingInterval"], opening["pingTimeout"]) == (7500, 3000)
    assert opening["maxPayload"] == 4096
    assert isinstance(opening["sid"], str)
    assert opening["sid"]


async def test_every_change_of_a_subscribed_game_arrives_in_order(clock: VirtualClock) -> None:
    sandbox = _sandbox(clock)
    async with served(sandbox) as url, feed(url) as client:
        await client.join("csgo")
        start = sandbox.market.changes.cursor
        clock.advance(1800.0)
        sandbox.advance()
        changes, _, _ = sandbox.market.changes.read(start)
        wanted = [change_frame(c) for c in changes if c.listing.game == "csgo"]
        kinds = {c.kind for c in changes if c.listing.game == "csgo"}
        got = [await client.frame() for _ in wanted]
    assert kinds == {"new", "update", "removed"}  # the window saw every kind of change
    assert any(c.listing.game != "csgo" for c in changes)  # and other games, not sent
    assert got == wanted


async def test_listing_fields_are_written_as_the_live_feed_writes_them(
    clock: VirtualClock,
) -> None:
    sandbox = _sandbox(clock)
    async with served(sandbox) as url, feed(url) as client:
        await client.join("csgo")
        start = sandbox.market.changes.cursor
        clock.advance(3600.0)
        sandbox.advance()
        changes, _, _ = sandbox.market.changes.read(start)
        events = await client.events(sum(c.listing.game == "csgo" for c in changes))
    listings = [payload for name, payload in events if name in ("new", "update")]
    removed = [payload for name, payload in events if name == "removed"]
    assert listings
    assert removed
    for payload in listings:
        assert isinstance(payload["item_id"], str)
        assert payload["item_id"].isdigit()
        assert isinstance(payload["price"], int)
        assert payload["price"] > 0
        assert isinstance(payload["phase"], str)
        assert payload["sticker_names"] is None or isinstance(payload["sticker_names"], list)
        assert int(payload["platform_price"]) > 0  # a number, or a numeric string
        assert "paintseed" not in payload
        assert "stickers" not in payload
        assert ("unlock_at" in payload) == ("send_until" in payload)
    assert any(isinstance(p["platform_price"], str) for p in listings)
    assert any("unlock_at" in p for p in listings)
    for payload in removed:
        assert set(payload) == {"game", "item_id", "name", "price"}


async def test_a_purchase_is_told_as_a_removal(clock: VirtualClock) -> None:
    sandbox = _sandbox(clock)
    on_sale = sandbox.market.listings.values()
    listing = min(
        (li for li in on_sale if li.game == "csgo" and not li.locked(clock.now())),
        key=lambda li: li.price,
    )
    account = sandbox.default_account
    async with served(sandbox) as url, feed(url) as client:
        await client.join("csgo")
        async with httpx.AsyncClient(base_url=url) as http:
            bought = await http.get(
                "/v1/buy-one-p2p",
                params={
                    "api": sandbox.api_key, "item_id": str(listing.item_id),
                    "price": listing.price, "partner": account.partner,
                    "token": account.token, "project_id": "feed-1",
                },
            )  # fmt: skip
            assert bought.json()["success"] is True
        name, payload = await client.event()
    assert (name, payload["item_id"], payload["price"]) == (
        "removed",
        str(listing.item_id),
        listing.price,
    )


async def test_an_unanswered_ping_drops_the_client(clock: VirtualClock) -> None:
    sandbox = _sandbox(clock, FeedConfig(ping_interval=10.0, ping_timeout=5.0))
    async with served(sandbox) as url, feed(url) as client:
        await client.join("dota2")
        clock.advance(10.0)
        assert await client.frame() == "2"
        await client.ws.send_text("3")  # answered: the connection lives on
        await client.subscribe("rust")  # a round trip: the pong has been read
        clock.advance(10.0)
        assert await client.frame() == "2"
        clock.advance(4.0)
        assert sandbox.feed.connections == 1
        clock.advance(2.0)  # past pingTimeout without a pong
        with pytest.raises(WebSocketDisconnect):
            await _until_closed(client)
    assert sandbox.feed.dropped_for_silence == 1


async def test_nothing_is_replayed_to_a_later_client(clock: VirtualClock) -> None:
    sandbox = _sandbox(clock)
    async with served(sandbox) as url:
        clock.advance(900.0)
        sandbox.advance()  # changes happen while nobody listens
        async with feed(url) as client:
            await client.join("csgo")
            start = sandbox.market.changes.cursor
            clock.advance(900.0)
            sandbox.advance()
            changes, _, _ = sandbox.market.changes.read(start)
            wanted = [change_frame(c) for c in changes if c.listing.game == "csgo"]
            got = [await client.frame() for _ in wanted]
            assert start > 0
            assert wanted
            assert got == wanted


@pytest.mark.parametrize(
    "query", ["EIO=4&transport=polling", "EIO=3&transport=websocket", "transport=websocket"]
)
async def test_anything_but_engine_io_4_over_a_websocket_is_refused(
    clock: VirtualClock, query: str
) -> None:
    sandbox = _sandbox(clock)
    async with served(sandbox) as url, httpx.AsyncClient(base_url=url) as http:
        answer = await http.get(f"/socket.io/?{query}")
    assert answer.status_code == 400
    assert json.loads(answer.text)["message"] == "Transport unknown"
