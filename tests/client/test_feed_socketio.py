"""The feed client against a Socket.IO server nobody here wrote (python-socketio's server,
as an ASGI app served by hypercorn, and on aiohttp's web server, on 127.0.0.1), so that the
client and the fake feed of ``test_feed.py`` are not built from the same misunderstanding.
Both servers accept permessage-deflate when offered: hypercorn with wsproto's
implementation (the one the client runs), aiohttp with its own, so a compressed session
is checked against a deflate nobody here chose either.

python-socketio's server runs on asyncio only: it runs in a thread with an event loop of
its own, and the client, in the test's loop, runs on asyncio and on trio like the rest.
Real time here (the server's heartbeat is its own), kept to tens of milliseconds.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import pytest
import socketio
from aiohttp import web
from feed_support import until
from hypercorn.asyncio import serve
from hypercorn.config import Config

from engine.client import (
    Backoff,
    FeedClient,
    FeedConnected,
    FeedDisconnected,
    FeedEvent,
    FeedListingEvent,
    FeedRemovalEvent,
)

LISTING = {
    "auto": True, "float": 0.0041, "game": "csgo", "item_id": "53862560251",
    "name": "★ StatTrak™ Survival Knife | Doppler Phase 1 (Factory New)", "paint_index": 418,
    "phase": "Phase 1", "price": 222809, "platform_price": "249929", "sticker_names": None,
    "classid": None, "instance_id": "0", "platform_id": "76561198000000000",
    "unlock_at": "2026-10-07T21:00:00Z", "send_until": "2026-10-08T21:00:00Z",
}  # fmt: skip


class ThirdPartyFeed:
    """python-socketio serving ``sub`` the way the feed does, in a thread of its own, on
    ``web``: ``hypercorn`` (its ASGI app) or ``aiohttp``."""

    def __init__(self, web_server: str = "hypercorn") -> None:
        self.web_server = web_server
        # a heartbeat far faster than the feed's 25 s, so the test sees several pings: a
        # ping every 50 ms, 1 s announced (python-engineio announces whole seconds, the
        # interval plus its grace period)
        mode = "asgi" if web_server == "hypercorn" else "aiohttp"
        self.sio = socketio.AsyncServer(
            async_mode=mode, ping_interval=(0.05, 0.95), ping_timeout=0.5, logger=False
        )
        self.subscribed: list[tuple[str, str]] = []
        self.loop: asyncio.AbstractEventLoop | None = None
        self.sio.on("sub", self._sub)

    async def _sub(self, sid: str, data: dict[str, Any]) -> None:
        game = data["name"]
        await self.sio.enter_room(sid, game)
        await self.sio.emit("subscribed", {"name": game}, to=sid)
        await self.sio.emit("handshake", {"server": "python-socketio"}, to=sid)
        self.subscribed.append((sid, game))

    async def call(self, coroutine: Coroutine[Any, Any, Any]) -> Any:
        """Run ``coroutine`` on the server's loop; wait for it without blocking ours."""
        assert self.loop is not None
        future = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        return await anyio.to_thread.run_sync(future.result)

    @contextmanager
    def running(self) -> Iterator[str]:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        port = sock.getsockname()[1]
        ready = threading.Event()
        stop: list[asyncio.Event] = []

        async def main() -> None:
            self.loop = asyncio.get_running_loop()
            stop.append(asyncio.Event())
            if self.web_server == "hypercorn":
                await self._hypercorn(sock, ready, stop[0])
            else:
                await self._aiohttp(sock, ready, stop[0])

        thread = threading.Thread(target=asyncio.run, args=(main(),), daemon=True)
        thread.start()
        assert ready.wait(5)
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            assert self.loop is not None
            self.loop.call_soon_threadsafe(stop[0].set)
            thread.join(5)

    async def _hypercorn(
        self, sock: socket.socket, ready: threading.Event, stop: asyncio.Event
    ) -> None:
        config = Config()
        config.bind = [f"fd://{sock.detach()}"]
        config.accesslog = None
        config.errorlog = None
        app: Any = socketio.ASGIApp(self.sio, socketio_path="socket.io")
        ready.set()
        await serve(app, config, shutdown_trigger=stop.wait)

    async def _aiohttp(
        self, sock: socket.socket, ready: threading.Event, stop: asyncio.Event
    ) -> None:
        app = web.Application()
        self.sio.attach(app, socketio_path="socket.io")
        runner = web.AppRunner(app, handle_signals=False, access_log=None)
        await runner.setup()
        await web.SockSite(runner, sock).start()
        ready.set()
        try:
            await stop.wait()
        finally:
            await runner.cleanup()


async def next_event(feed: FeedClient) -> FeedEvent:
    with anyio.fail_after(5):
        return await anext(aiter(feed))


@pytest.mark.parametrize(
    ("web_server", "compression"),
    [("hypercorn", "auto"), ("aiohttp", "auto"), ("aiohttp", "off")],
)
async def test_a_third_party_socketio_server_feeds_the_client(
    web_server: str, compression: str
) -> None:
    server = ThirdPartyFeed(web_server)
    with server.running() as url:
        fast = Backoff(initial=0.01, cap=0.02)
        async with FeedClient(url, games=["csgo"], backoff=fast, compression=compression) as feed:
            connected = await next_event(feed)
            assert isinstance(connected, FeedConnected)
            # both servers accept permessage-deflate when it is offered
            assert feed.health().compressed is (compression == "auto")
            assert (connected.ping_interval, connected.ping_timeout) == (1.0, 0.5)
            await until(lambda: len(server.subscribed) == 1, "the subscription")
            sid, game = server.subscribed[0]
            assert game == "csgo"
            await until(lambda: feed.health().subscribed == ("csgo",), "subscribed")
            # its heartbeat is answered: pings keep coming on one connection
            # (open, namespace, subscribed and handshake are four frames; the rest pings)
            await until(lambda: feed.health().frames_received >= 7, "three pings")
            await server.call(server.sio.emit("new", LISTING, room="csgo"))
            await server.call(server.sio.emit("update", {**LISTING, "price": 200000}, room="csgo"))
            await server.call(server.sio.emit("sold", {"item_id": "1"}, room="csgo"))
            await server.call(
                server.sio.emit(
                    "removed",
                    {"game": "csgo", "item_id": "53862560251", "name": "x", "price": 200000},
                    room="csgo",
                )
            )
            new, update, removed = [await next_event(feed) for _ in range(3)]
            assert isinstance(new, FeedListingEvent)
            assert (new.kind, new.listing.item_id, new.listing.price) == (
                "new", "53862560251", 222809
            )  # fmt: skip
            assert new.listing.platform_price == 249929
            assert new.listing.unlock_at is not None
            assert new.listing.platform_id == "76561198000000000"
            assert isinstance(update, FeedListingEvent)
            assert (update.kind, update.listing.price) == ("update", 200000)
            assert isinstance(removed, FeedRemovalEvent)
            assert removed.removal.item_id == "53862560251"
            health = feed.health()
            assert (health.generation, health.disconnects) == (1, {})
            assert health.set_aside == {"(event name)": 1}
            # the server ends the session: the client comes back as the next generation
            await server.call(server.sio.disconnect(sid))
            gone = await next_event(feed)
            assert isinstance(gone, FeedDisconnected)
            assert gone.reason == "closed"
            again = await next_event(feed)
            assert isinstance(again, FeedConnected)
            assert again.generation == 2
            await until(lambda: len(server.subscribed) == 2, "the new subscription")
