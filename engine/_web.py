"""Serving an ASGI application (Starlette) with hypercorn on a listener snipe bound itself,
on asyncio or trio, whichever runs: the one way the metrics server and the control-plane
API are served (the sandbox, which owns a raw socket, has its own in ``engine/sandbox``).

Binding first (``anyio.create_tcp_listener``) makes a port in use a plain ``OSError``
before anything starts; hypercorn then serves a duplicate of that socket.

Stopping: hypercorn is never cancelled from outside. Cancelled, its asyncio server leaves
its connection tasks and its lifespan task to asyncio, which prints their tracebacks as the
process ends (issue 18: every stopped ``snipe run --api`` with a dashboard open). Instead,
when the caller's scope is cancelled, ``on_stop`` is called (the API ends its event
streams), hypercorn's shutdown trigger fires, and hypercorn closes its listener, lets the
requests in progress finish (at most :data:`GRACE` seconds) and ends the lifespan, inside
a shielded scope bounded by that grace.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import anyio
import sniffio
from anyio.abc import Listener, SocketAttribute, SocketStream
from hypercorn.config import Config

__all__ = ["GRACE", "serve_asgi"]

#: Seconds the requests in progress get to finish when the server stops (hypercorn's
#: graceful timeout); a stopping process waits at most about this long for them.
GRACE = 2.0


async def serve_asgi(
    listener: Listener[SocketStream],
    app: Any,
    *,
    certfile: str | None = None,
    keyfile: str | None = None,
    on_stop: Callable[[], None] | None = None,
) -> None:
    """Answer connections on ``listener`` with the ASGI ``app`` until cancelled (TLS when
    ``certfile`` and ``keyfile`` are given), then shut down gracefully (see the module
    docstring; ``on_stop`` is called first); closes the listener."""
    async with listener:
        raw = listener.extra(SocketAttribute.raw_socket)
        config = Config()
        # hypercorn takes a copy of the listening socket and owns that copy; the
        # listener keeps (and closes) its own
        config.bind = [f"fd://{os.dup(raw.fileno())}"]
        config.accesslog = None
        config.loglevel = "WARNING"
        config.include_server_header = False
        config.graceful_timeout = GRACE
        if certfile and keyfile:
            config.certfile = certfile
            config.keyfile = keyfile
        if sniffio.current_async_library() == "trio":
            from hypercorn.trio import serve
        else:
            from hypercorn.asyncio import serve  # type: ignore[assignment]

        stop = anyio.Event()
        # shielded: the caller's cancellation reaches hypercorn only as `stop`; the
        # deadline, set once stopping, bounds a shutdown that would not end
        shield = anyio.CancelScope(shield=True)

        async def run() -> None:
            with shield:
                await serve(app, config, shutdown_trigger=stop.wait)

        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            try:
                await anyio.sleep_forever()
            finally:
                if on_stop is not None:
                    on_stop()
                stop.set()
                shield.deadline = anyio.current_time() + GRACE + 1.0
