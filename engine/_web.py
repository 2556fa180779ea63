"""Serving an ASGI application (Starlette) with hypercorn on a listener snipe bound itself,
on asyncio or trio, whichever runs: the one way the metrics server and the control-plane
API are served (the sandbox, which owns a raw socket, has its own in ``engine/sandbox``).

Binding first (``anyio.create_tcp_listener``) makes a port in use a plain ``OSError``
before anything starts; hypercorn then serves a duplicate of that socket.
"""

from __future__ import annotations

import os
from typing import Any

import anyio
import sniffio
from anyio.abc import Listener, SocketAttribute, SocketStream
from hypercorn.config import Config

__all__ = ["serve_asgi"]


async def serve_asgi(
    listener: Listener[SocketStream],
    app: Any,
    *,
    certfile: str | None = None,
    keyfile: str | None = None,
) -> None:
    """Answer connections on ``listener`` with the ASGI ``app`` until cancelled (TLS when
    ``certfile`` and ``keyfile`` are given); closes the listener."""
    async with listener:
        raw = listener.extra(SocketAttribute.raw_socket)
        config = Config()
        # hypercorn takes a copy of the listening socket and owns that copy; the
        # listener keeps (and closes) its own
        config.bind = [f"fd://{os.dup(raw.fileno())}"]
        config.accesslog = None
        config.loglevel = "WARNING"
        config.include_server_header = False
        if certfile and keyfile:
            config.certfile = certfile
            config.keyfile = keyfile
        if sniffio.current_async_library() == "trio":
            from hypercorn.trio import serve as trio_serve

            await trio_serve(app, config, shutdown_trigger=anyio.sleep_forever)
        else:
            from hypercorn.asyncio import serve as asyncio_serve

            await asyncio_serve(app, config, shutdown_trigger=anyio.sleep_forever)
