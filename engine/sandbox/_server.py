"""Serving the sandbox over a socket with hypercorn, on asyncio or trio (whichever runs)."""

from __future__ import annotations

import logging
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import anyio
import sniffio
from hypercorn.config import Config

from ._app import DroppedConnection
from ._sandbox import Sandbox

__all__ = ["serve", "served"]


class _QuietDrops(logging.Filter):
    """Drop hypercorn's traceback for a connection the sandbox broke on purpose."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, BaseExceptionGroup):
            exc = exc.exceptions[0] if len(exc.exceptions) == 1 else exc
        return not isinstance(exc, DroppedConnection)


_QUIET_DROPS = _QuietDrops()


def _bound_socket(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


async def serve(
    sandbox: Sandbox,
    *,
    host: str = "127.0.0.1",
    port: int = 8787,
    on_ready: Callable[[str], None] | None = None,
    shutdown_trigger: Callable[[], Awaitable[None]] | None = None,
) -> None:
    """Serve ``sandbox`` on ``host:port`` (port 0 picks a free one) until
    ``shutdown_trigger`` returns (or SIGINT/SIGTERM without one). ``on_ready`` gets the
    address once the socket listens, before the first request can arrive."""
    sock = _bound_socket(host, port)
    bound_port = sock.getsockname()[1]
    config = Config()
    config.bind = [f"fd://{sock.detach()}"]  # hypercorn owns the listening socket now
    config.accesslog = None
    config.loglevel = "WARNING"
    error_log = logging.getLogger("hypercorn.error")
    if _QUIET_DROPS not in error_log.filters:
        error_log.addFilter(_QUIET_DROPS)
    app: Any = sandbox.server_app  # ASGI 3; hypercorn types it with its own TypedDicts
    shown_host = f"[{host}]" if ":" in host else host
    if on_ready is not None:
        on_ready(f"http://{shown_host}:{bound_port}")
    if sniffio.current_async_library() == "trio":
        from hypercorn.trio import serve as trio_serve

        await trio_serve(app, config, shutdown_trigger=shutdown_trigger)
    else:
        from hypercorn.asyncio import serve as asyncio_serve

        await asyncio_serve(app, config, shutdown_trigger=shutdown_trigger)


@asynccontextmanager
async def served(sandbox: Sandbox, *, host: str = "127.0.0.1") -> AsyncIterator[str]:
    """``sandbox`` served on a loopback port the system picks while the block runs; yields
    its base address. For what an in-process ASGI transport cannot carry: the feed's
    websocket (``snipe demo``) and tests of the wire itself."""
    ready = anyio.Event()
    stop = anyio.Event()
    urls: list[str] = []

    def on_ready(url: str) -> None:
        urls.append(url)
        ready.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(
            partial(
                serve, sandbox, host=host, port=0, on_ready=on_ready, shutdown_trigger=stop.wait
            )
        )
        await ready.wait()
        try:
            yield urls[0]
        finally:
            stop.set()
