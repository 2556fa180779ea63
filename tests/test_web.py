"""`serve_asgi` stops cleanly when cancelled, on asyncio and trio: open connections (one kept
alive, one streaming) are let go within the grace, ``on_stop`` runs first, and nothing is
left behind for asyncio to report (before issue 18's fix, hypercorn was cancelled: its
connection and lifespan tasks outlived the server and asyncio printed their tracebacks when
the loop ended, after every stopped `snipe run --api`)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx
import sniffio
from anyio.abc import SocketAttribute
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from engine._web import serve_asgi

GUARD = 20.0  # real seconds; never reached when stopping works


class Stream:
    """An endless streaming answer that ends when ``on_stop`` is called."""

    def __init__(self) -> None:
        self.stopped = anyio.Event()
        self.started = anyio.Event()

    def on_stop(self) -> None:
        self.stopped.set()

    async def endpoint(self, request: Request) -> Response:
        async def body() -> AsyncIterator[str]:
            yield "first\n"
            self.started.set()
            await self.stopped.wait()
            yield "last\n"

        # as the API's event stream: the connection ends with the stream
        return StreamingResponse(body(), media_type="text/plain", headers={"connection": "close"})


async def _hello(request: Request) -> Response:
    return PlainTextResponse("hello")


def _reported(loop_errors: list[dict[str, Any]]) -> list[str]:
    return [str(context.get("message")) for context in loop_errors]


async def test_a_cancelled_server_lets_its_connections_go_and_leaves_nothing_behind(
    anyio_backend: str,
) -> None:
    stream = Stream()
    app = Starlette(routes=[Route("/", _hello), Route("/stream", stream.endpoint)])
    loop_errors: list[dict[str, Any]] = []
    if sniffio.current_async_library() == "asyncio":
        asyncio.get_running_loop().set_exception_handler(lambda _, ctx: loop_errors.append(ctx))
        before = asyncio.all_tasks()
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    url = f"http://127.0.0.1:{listener.extra(SocketAttribute.local_port)}"
    lines: list[str] = []
    with anyio.fail_after(GUARD):
        async with httpx.AsyncClient(base_url=url) as client:

            async def read_stream() -> None:
                async with client.stream("GET", "/stream") as answer:
                    async for line in answer.aiter_lines():
                        lines.append(line)

            serving = anyio.CancelScope()

            async def serve() -> None:
                with serving:
                    await serve_asgi(listener, app, on_stop=stream.on_stop)

            async with anyio.create_task_group() as tg:
                tg.start_soon(serve)
                tg.start_soon(read_stream)
                await stream.started.wait()
                # a second connection, kept alive after its answer
                assert (await client.get("/")).text == "hello"
                serving.cancel()  # as `snipe run` stops: the server's scope is cancelled
    assert lines == ["first", "last"]  # the stream was ended, not cut off
    if sniffio.current_async_library() == "asyncio":
        for _ in range(5):  # let the loop run any callback a leftover task would get
            await asyncio.sleep(0)
        left = [t for t in asyncio.all_tasks() - before if t is not asyncio.current_task()]
        assert left == []
        assert _reported(loop_errors) == []
        asyncio.get_running_loop().set_exception_handler(None)
