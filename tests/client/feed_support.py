"""A tiny Socket.IO feed for the feed client's tests: an ASGI websocket app the test drives
frame by frame, served by hypercorn on 127.0.0.1 (asyncio or trio, whichever runs)."""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import sniffio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from hypercorn.config import Config

OPEN = '0{"sid":"eio-{n}","upgrades":[],"pingInterval":25000,"pingTimeout":20000}'
CLOSE = object()
"""A command: close the websocket cleanly."""
DROP = object()
"""A command: end the connection abruptly (the app fails)."""


class Dropped(Exception):
    """The fake feed broke the connection on purpose."""


@dataclass
class Connection:
    """One websocket connection as the server saw it."""

    number: int
    path: str
    query: str
    headers: dict[str, str]
    received: list[str] = field(default_factory=list)
    out: MemoryObjectSendStream[Any] | None = None

    async def send(self, *frames: Any) -> None:
        """Queue frames (``str`` text, ``bytes`` binary, :data:`CLOSE` or :data:`DROP`)."""
        assert self.out is not None
        for frame in frames:
            await self.out.send(frame)


class FakeFeed:
    """An ASGI app speaking the feed's side of Socket.IO. Connections numbered
    ``drop`` or below are dropped right after the open packet; the others answer ``40``
    and every ``sub``, then send what the test queues on :attr:`Connection.out`."""

    def __init__(self, *, drop: int = 0) -> None:
        self.drop = drop
        self.connections: list[Connection] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                kind = message["type"].replace("lifespan.", "")
                await send({"type": f"lifespan.{kind}.complete"})
                if kind == "shutdown":
                    return
        if scope["type"] == "http":
            await send({"type": "http.response.start", "status": 404, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        await self._websocket(scope, receive, send)

    async def _websocket(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        assert (await receive())["type"] == "websocket.connect"
        await send({"type": "websocket.accept"})
        conn = Connection(
            number=len(self.connections) + 1,
            path=scope["path"],
            query=scope["query_string"].decode(),
            headers={k.decode().lower(): v.decode() for k, v in scope["headers"]},
        )
        self.connections.append(conn)
        lock = anyio.Lock()

        async def text(frame: str) -> None:
            async with lock:
                await send({"type": "websocket.send", "text": frame})

        await text(OPEN.replace("{n}", str(conn.number)))
        if conn.number <= self.drop:
            raise Dropped
        out, commands = anyio.create_memory_object_stream[Any](1000)
        conn.out = out
        with out, commands:
            await self._serve(conn, receive, send, text, commands, lock)

    async def _serve(
        self,
        conn: Connection,
        receive: Any,
        send: Any,
        text: Callable[[str], Any],
        commands: MemoryObjectReceiveStream[Any],
        lock: anyio.Lock,
    ) -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._pump, commands, text, send, lock)
            while True:
                message = await receive()
                if message["type"] == "websocket.disconnect":
                    tg.cancel_scope.cancel()
                    return
                frame = message.get("text") or ""
                conn.received.append(frame)
                if frame == "40":
                    await text(f'40{{"sid":"ns-{conn.number}"}}')
                elif frame.startswith('42["sub"'):
                    game = json.loads(frame[2:])[1]["name"]
                    await text("42" + json.dumps(["subscribed", {"name": game}]))
                    await text('42["handshake",{"ok":true}]')

    async def _pump(
        self,
        commands: MemoryObjectReceiveStream[Any],
        text: Callable[[str], Any],
        send: Any,
        lock: anyio.Lock,
    ) -> None:
        async for frame in commands:
            if frame is CLOSE:
                async with lock:
                    await send({"type": "websocket.close", "code": 1000})
                return
            if frame is DROP:
                raise Dropped
            if isinstance(frame, bytes):
                async with lock:
                    await send({"type": "websocket.send", "bytes": frame})
            else:
                await text(frame)


@asynccontextmanager
async def served(app: Any) -> AsyncIterator[str]:
    """``app`` served by hypercorn on a free port of 127.0.0.1; yields its ``http://`` URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    port = sock.getsockname()[1]
    config = Config()
    config.bind = [f"fd://{sock.detach()}"]
    config.accesslog = None
    config.errorlog = None  # the connections the tests break on purpose would be logged
    stop = anyio.Event()
    async with anyio.create_task_group() as tg:
        if sniffio.current_async_library() == "trio":
            from hypercorn.trio import serve as trio_serve

            tg.start_soon(lambda: trio_serve(app, config, shutdown_trigger=stop.wait))
        else:
            from hypercorn.asyncio import serve as asyncio_serve

            tg.start_soon(lambda: asyncio_serve(app, config, shutdown_trigger=stop.wait))
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            stop.set()


async def until(condition: Callable[[], object], what: str, seconds: float = 5.0) -> None:
    """Wait (real time, polling every millisecond) until ``condition()`` holds."""
    try:
        with anyio.fail_after(seconds):
            # polling: the conditions are other tasks' and the server's state, which
            # tell nobody when they change
            while not condition():  # noqa: ASYNC110
                await anyio.sleep(0.001)
    except TimeoutError:
        raise AssertionError(f"timed out waiting for {what}") from None
