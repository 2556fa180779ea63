"""A local HTTP receiver on 127.0.0.1 for notification tests (anyio: both backends)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio.abc import SocketAttribute, SocketStream


@dataclass(frozen=True)
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Receiver:
    port: int
    statuses: list[int] = field(default_factory=list)
    """Answer these statuses in turn, then 200."""
    received: list[Received] = field(default_factory=list)
    _arrived: anyio.Event = field(default_factory=anyio.Event)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def wait_for(self, count: int) -> list[Received]:
        """The first ``count`` requests, once they have arrived (bound it with a timeout)."""
        while len(self.received) < count:
            await self._arrived.wait()
            self._arrived = anyio.Event()
        return self.received[:count]

    async def _handle(self, stream: SocketStream) -> None:
        async with stream:
            data = b""
            while b"\r\n\r\n" not in data:
                data += await stream.receive()
            head, body = data.split(b"\r\n\r\n", 1)
            request_line, *header_lines = head.decode("latin-1").split("\r\n")
            headers = {}
            for line in header_lines:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            length = int(headers.get("content-length", "0"))
            while len(body) < length:
                body += await stream.receive()
            method, path, _ = request_line.split(" ")
            self.received.append(Received(method, path, headers, body))
            self._arrived.set()
            status = self.statuses.pop(0) if self.statuses else 200
            head = f"HTTP/1.1 {status} X\r\nContent-Length: 2\r\nConnection: close\r\n\r\n"
            await stream.send(head.encode() + b"{}")


@asynccontextmanager
async def receiver(*, statuses: tuple[int, ...] = ()) -> AsyncIterator[Receiver]:
    """A receiver listening on 127.0.0.1 (any free port) while inside."""
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = listener.extra(SocketAttribute.local_port)
    r = Receiver(port, list(statuses))
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, r._handle)
        yield r
        tg.cancel_scope.cancel()


async def closed_port() -> int:
    """A port on 127.0.0.1 where nothing listens (connections are refused)."""
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = listener.extra(SocketAttribute.local_port)
    await listener.aclose()
    return int(port)
