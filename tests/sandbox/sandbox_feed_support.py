"""A sandbox served by hypercorn on 127.0.0.1 and a minimal Engine.IO / Socket.IO test
client over httpx-ws, for the feed tests (with permessage-deflate offered, as snipe's
client does, unless told not to)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
from httpx_ws import aconnect_ws

from engine import VirtualClock
from engine.client._websocket import FeedSession, offer_headers

# A guard against a hang, not a measurement: frames arrive in milliseconds.
PATIENCE = 10.0
FEED = "/socket.io/?EIO=4&transport=websocket"


class Feed:
    """The client side of one feed connection, frame by frame."""

    def __init__(self, ws: FeedSession) -> None:
        self.ws = ws
        self.pings_answered = 0

    async def frame(self) -> str:
        with anyio.fail_after(PATIENCE):
            return await self.ws.receive_text()

    async def event(self) -> tuple[str, Any]:
        """The next Socket.IO event (pings are answered on the way)."""
        while True:
            frame = await self.frame()
            if frame == "2":
                await self.ws.send_text("3")
                self.pings_answered += 1
                continue
            assert frame.startswith("42"), frame
            name, payload = json.loads(frame[2:])
            return name, payload

    async def events(self, count: int) -> list[tuple[str, Any]]:
        return [await self.event() for _ in range(count)]

    async def join(self, *games: str) -> dict[str, Any]:
        """Read the open packet, join the namespace, subscribe to ``games``; returns the
        open packet's fields."""
        opening = await self.frame()
        assert opening.startswith("0"), opening
        await self.ws.send_text("40")
        joined = await self.frame()
        assert joined.startswith("40{"), joined
        for game in games:
            await self.subscribe(game)
        return dict(json.loads(opening[1:]))

    async def subscribe(self, game: str) -> None:
        await self.ws.send_text('42["sub",' + json.dumps({"name": game}) + "]")
        assert await self.event() == ("subscribed", {"name": game})
        name, payload = await self.event()
        assert (name, payload["game"]) == ("handshake", game)


@asynccontextmanager
async def feed(url: str, *, deflate: bool = True) -> AsyncIterator[Feed]:
    """A connection that offers permessage-deflate (``deflate``) or not; the sandbox (on
    hypercorn) accepts what is offered."""
    offer = offer_headers("auto" if deflate else "off")
    async with (
        httpx.AsyncClient() as http,
        aconnect_ws(url + FEED, http, session_class=FeedSession, headers=offer) as ws,
    ):
        assert ws.deflate is deflate
        yield Feed(ws)


async def advance_until(clock: VirtualClock, done: Callable[[], bool], step: float = 5.0) -> None:
    """Move market time ``step`` at a time until ``done()`` (the server's tasks run in
    between: they share this event loop)."""
    with anyio.fail_after(PATIENCE):
        while not done():
            clock.advance(step)
            await anyio.sleep(0.001)
