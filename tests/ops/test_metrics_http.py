"""The metrics server (Starlette under hypercorn), over a real socket on both backends."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest

from engine.metrics import Response, serve_http


async def _handler(path: str) -> Response:
    if path == "/boom":
        raise RuntimeError("a bug in the handler")
    return Response(200, f"you asked for {path}\n".encode())


@asynccontextmanager
async def served() -> AsyncIterator[int]:
    async with anyio.create_task_group() as tg:
        port = await tg.start(lambda task_status: serve_http(_handler, task_status=task_status))
        yield port
        tg.cancel_scope.cancel()


async def _exchange(port: int, raw: bytes) -> bytes:
    async with await anyio.connect_tcp("127.0.0.1", port) as stream:
        await stream.send(raw)
        data = b""
        try:
            while True:
                data += await stream.receive()
        except (anyio.EndOfStream, anyio.BrokenResourceError):
            return data


@pytest.mark.parametrize(
    ("raw", "status", "body"),
    [
        (b"GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\n\r\n", b"200", b"you asked for /metrics\n"),
        (b"HEAD /metrics HTTP/1.1\r\nHost: a\r\n\r\n", b"200", b""),
        (
            b"POST /metrics HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n",
            b"405",
            b"GET only\n",
        ),
        # refused by the HTTP parser itself, before any handler: no body
        (b"nonsense\r\n\r\n", b"400", b""),
        (b"GET /boom HTTP/1.1\r\nHost: a\r\n\r\n", b"500", b"internal error\n"),
    ],
)
async def test_answers(raw: bytes, status: bytes, body: bytes) -> None:
    async with served() as port:
        answer = await _exchange(port, raw)
        again = await _exchange(port, b"GET /still-up HTTP/1.1\r\nHost: a\r\n\r\n")
    head, _, got = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 " + status + b" ")
    assert b"connection: close" in head.lower()
    assert got == body
    assert again.endswith(b"you asked for /still-up\n")


async def test_an_oversized_request_head_is_refused() -> None:
    async with served() as port:
        answer = await _exchange(port, b"GET /" + b"a" * 40_000 + b" HTTP/1.1\r\nHost: a\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 400")
