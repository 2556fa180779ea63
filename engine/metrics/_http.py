"""The metrics server: ``/metrics`` and ``/healthz`` (whatever the handler answers), a
Starlette application served by hypercorn on asyncio or trio, whichever runs.

It lives in the engine's own event loop (prometheus-client's server runs in a thread), so
``/healthz`` answering at all proves the loop is responsive. It is the same web toolkit the
sandbox and the control-plane API use: routing, errors and tests look the same everywhere.
Answers are small and final: ``GET``/``HEAD`` only, one request per connection
(``connection: close``), request heads bounded by hypercorn (16 KiB) and idle connections
dropped by its keep-alive timeout.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import anyio
from anyio.abc import Listener, SocketAttribute, SocketStream, TaskStatus
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response as WebResponse
from starlette.routing import Route

from .._web import serve_asgi

__all__ = ["Handler", "Response", "metrics_app", "open_listener", "serve_http", "serve_listener"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Response:
    status: int
    body: bytes
    content_type: str = "text/plain; charset=utf-8"


Handler = Callable[[str], Awaitable[Response]]
"""path -> response, for a ``GET``."""

_MAX_HEAD = 16 * 1024
_ANY_METHOD = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]


def metrics_app(handler: Handler) -> Starlette:
    """The ASGI application answering every path with ``handler`` (``GET`` and ``HEAD``
    only; a bug in the handler is a 500, never a dead server)."""

    async def endpoint(request: Request) -> WebResponse:
        if _head_size(request) > _MAX_HEAD:
            # the parser bounds heads that arrive in pieces; one that came whole is
            # bounded here, so that no path is ever handed on at any length
            return _web(Response(400, b"request head too large\n"))
        if request.method not in ("GET", "HEAD"):
            return _web(Response(405, b"GET only\n"))
        try:
            response = await handler(request.url.path)
        except Exception:
            log.exception("metrics handler failed for %s", request.url.path)
            response = Response(500, b"internal error\n")
        return _web(response)

    return Starlette(routes=[Route("/{path:path}", endpoint, methods=_ANY_METHOD)])


def _head_size(request: Request) -> int:
    scope = request.scope
    size = len(scope.get("raw_path") or b"") + len(scope.get("query_string", b""))
    return size + sum(len(name) + len(value) + 4 for name, value in scope["headers"])


def _web(response: Response) -> WebResponse:
    return WebResponse(
        response.body,
        response.status,
        headers={"connection": "close"},
        media_type=response.content_type,
    )


async def serve_http(
    handler: Handler,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    task_status: TaskStatus[int] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``handler`` on ``host:port`` (loopback by default) until cancelled;
    ``task_status`` gets the port (useful with ``port=0``). ``OSError`` when the address
    cannot be bound."""
    listener = await open_listener(host, port)
    task_status.started(listener.extra(SocketAttribute.local_port))
    await serve_listener(listener, handler)


async def open_listener(host: str, port: int) -> Listener[SocketStream]:
    """A listening socket on ``host:port`` (``port`` 0: any free port), bound now so that
    a port in use is a plain ``OSError`` before anything starts."""
    return await anyio.create_tcp_listener(local_host=host, local_port=port)


async def serve_listener(listener: Listener[SocketStream], handler: Handler) -> None:
    """Answer connections on ``listener`` with ``handler`` until cancelled; closes it."""
    await serve_asgi(listener, metrics_app(handler))
