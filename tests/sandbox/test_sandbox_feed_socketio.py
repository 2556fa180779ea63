"""The feed against a Socket.IO client nobody here wrote: python-socketio's AsyncClient
connects, subscribes and receives the market's changes, so the server is not built from
the same misunderstanding as snipe's own client.

asyncio only: python-socketio's asyncio client runs its websocket on aiohttp, which has no
trio backend (the trio side of the server is tested in test_feed.py with httpx-ws).
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
import socketio  # type: ignore[import-untyped]
from sandbox_feed_support import PATIENCE

from engine import VirtualClock
from engine.sandbox import FeedConfig, MarketConfig, Sandbox, SandboxConfig, served

pytestmark = pytest.mark.parametrize("anyio_backend", ["asyncio"])


async def test_python_socketio_connects_subscribes_and_receives_new_listings(
    clock: VirtualClock,
) -> None:
    # pings every 50 market seconds, answered in time however slow this machine is: each
    # step below moves 30 market seconds per 10 ms of real time
    heartbeat = FeedConfig(ping_interval=50.0, ping_timeout=5000.0)
    config = SandboxConfig(seed=5, market=MarketConfig(size=400), feed=heartbeat)
    sandbox = Sandbox(config, clock=clock)
    received: list[tuple[str, dict[str, Any]]] = []
    subscribed = anyio.Event()
    enough = anyio.Event()
    client = socketio.AsyncClient(reconnection=False)

    @client.on("subscribed")  # type: ignore[untyped-decorator]
    async def _subscribed(data: dict[str, Any]) -> None:
        subscribed.set()

    async def note(kind: str, data: dict[str, Any]) -> None:
        received.append((kind, data))
        if sum(k == "new" for k, _ in received) >= 3:
            enough.set()

    def handler(kind: str) -> Any:
        async def on_event(data: dict[str, Any]) -> None:  # it awaits coroutine functions
            await note(kind, data)

        return on_event

    for kind in ("new", "update", "removed"):
        client.on(kind, handler(kind))

    async with served(sandbox) as url:
        await client.connect(url, transports=["websocket"], wait_timeout=PATIENCE)
        try:
            await client.emit("sub", {"name": "csgo"})
            with anyio.fail_after(PATIENCE):
                await subscribed.wait()
            start = sandbox.market.changes.cursor
            with anyio.fail_after(PATIENCE):
                while not enough.is_set():
                    clock.advance(30.0)  # pings included: the client answers them itself
                    await anyio.sleep(0.01)
            assert client.connected
            assert sandbox.feed.dropped_for_silence == 0
        finally:
            await client.disconnect()
    changes, _, _ = sandbox.market.changes.read(start)
    told = {(c.kind, str(c.listing.item_id)) for c in changes if c.listing.game == "csgo"}
    assert received
    assert {(kind, data["item_id"]) for kind, data in received} <= told
    assert all(data["game"] == "csgo" for _, data in received)
