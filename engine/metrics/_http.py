"""A tiny HTTP/1.1 responder on anyio (both backends), enough for a Prometheus scrape and a
health probe: ``GET`` only, one request per connection, no request body, bounded reads.

prometheus-client's own server runs in a thread; this one lives in the engine's event
loop, so ``/healthz`` answering at all proves the loop is responsive.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import suppress
from dataclasses import dataclass

import anyio
from anyio.abc import Listener, SocketAttribute, SocketStream, TaskStatus

__all__ = ["Handler", "Response", "open_listener", "serve_http", "serve_listener"]

_MAX_HEAD = 16 * 1024
_READ_TIMEOUT = 10.0
_REASONS = {200: "OK", 404: "Not Found", 405: "Method Not Allowed", 400: "Bad Request"}
_REASONS |= {503: "Service Unavailable", 500: "Internal Server Error"}


@dataclass(frozen=True)
class Response:
    status: int
    body: bytes
    content_type: str = "text/plain; charset=utf-8"


Handler = Callable[[str], Awaitable[Response]]
"""path -> response, for a ``GET``."""


async def serve_http(
    handler: Handler,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    task_status: TaskStatus[int] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``handler`` on ``host:port`` until cancelled; ``task_status`` gets the port
    (useful with ``port=0``). ``OSError`` when the address cannot be bound."""
    listener = await open_listener(host, port)
    task_status.started(listener.extra(SocketAttribute.local_port))
    await serve_listener(listener, handler)


async def open_listener(host: str, port: int) -> Listener[SocketStream]:
    """A listening socket on ``host:port`` (``port`` 0: any free port)."""
    return await anyio.create_tcp_listener(local_host=host, local_port=port)


async def serve_listener(listener: Listener[SocketStream], handler: Handler) -> None:
    """Answer connections on ``listener`` with ``handler`` until cancelled; closes it."""
    async with listener:

        async def connection(stream: SocketStream) -> None:
            # a client that goes away, stalls or sends garbage gets nothing more; whatever
            # happens to one connection, the server (and the engine beside it) goes on
            with suppress(Exception):
                async with stream:
                    await _answer(stream, handler)

        await listener.serve(connection)


async def _answer(stream: SocketStream, handler: Handler) -> None:
    head = b""
    with anyio.fail_after(_READ_TIMEOUT):
        while b"\r\n\r\n" not in head and b"\n\n" not in head:
            if len(head) > _MAX_HEAD:
                await _write(stream, Response(400, b"request head too large\n"))
                return
            head += await stream.receive(4096)
    line = head.split(b"\n", 1)[0].decode("latin-1").strip()
    parts = line.split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/"):
        await _write(stream, Response(400, b"bad request line\n"))
        return
    method, target = parts[0], parts[1]
    if method not in ("GET", "HEAD"):
        await _write(stream, Response(405, b"GET only\n"))
        return
    try:
        response = await handler(target.split("?", 1)[0])
    except Exception:
        response = Response(500, b"internal error\n")
    await _write(stream, response, head_only=method == "HEAD")


async def _write(stream: SocketStream, response: Response, *, head_only: bool = False) -> None:
    reason = _REASONS.get(response.status, "")
    head = (
        f"HTTP/1.1 {response.status} {reason}\r\n"
        f"Content-Type: {response.content_type}\r\n"
        f"Content-Length: {len(response.body)}\r\n"
        "Connection: close\r\n\r\n"
    ).encode("latin-1")
    await stream.send(head if head_only else head + response.body)
