"""The ASGI application: request in, faults and limits applied, handler called, answer out.

Two flavours share everything but how a lost answer looks. In-process (``wire_faults``
false, for ``httpx.ASGITransport``) a timeout or a dropped connection is raised as the
``httpx`` exception a real socket would have produced, right after the purchase was
committed. Served over a socket (``wire_faults`` true), a timeout really hangs on market
time and a dropped connection really breaks the response half-way.
"""

from __future__ import annotations

import json
import math
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

import anyio.lowlevel
import httpx

from . import (  # noqa: F401 - registration
    _routes_account,
    _routes_market,
    _routes_prices,
    _routes_trading,
)
from ._faults import Fault
from ._http import ROUTES, BadRequest, Request, Response, Route, html_response, json_response
from ._inspect import inspect_request

if TYPE_CHECKING:
    from ._sandbox import Sandbox

__all__ = ["DroppedConnection", "SandboxApp"]

# The ASGI 3 callable types, as httpx.ASGITransport and hypercorn spell them.
Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


_KNOWN_STATUSES = frozenset(status.value for status in HTTPStatus)


class DroppedConnection(Exception):
    """Raised out of the server app to make the server cut the connection mid-answer."""


class SandboxApp:
    """ASGI 3 application over a :class:`Sandbox`."""

    def __init__(self, sandbox: Sandbox, *, wire_faults: bool) -> None:
        self.sandbox = sandbox
        self.wire_faults = wire_faults

    def __repr__(self) -> str:
        return f"SandboxApp(wire_faults={self.wire_faults})"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        request = Request.from_scope(scope, await _read_body(receive))
        if request.path.startswith("/_sandbox/"):
            self.sandbox.advance()
            await _send_response(send, inspect_request(self.sandbox, request))
            return
        there, back = self.sandbox.network_delays()
        if there > 0.0:
            await self.sandbox.clock.sleep(there)  # it arrives (and is counted) only now
        if back > 0.0:
            send = _delayed(send, self.sandbox.clock.sleep, back)
        self.sandbox.advance()
        found = ROUTES.get((request.method, request.path))
        if found is None:
            known_path = any(path == request.path for _, path in ROUTES)
            status = 405 if known_path else 404
            response = json_response({"success": False, "msg": "Not found"}, status)
            self._count(request, status)
            await _send_response(send, response)
            return
        if found.purchase:
            self.sandbox.record_purchase_request(request)
        fault = self.sandbox.faults.draw(request.method, request.path)
        if fault is not None:
            self.sandbox.faults_fired.append(
                {"endpoint": request.endpoint, "kind": fault.kind, "at": self.sandbox.now()}
            )
        await self._serve(found, request, fault, send)

    def _count(self, request: Request, status: int) -> None:
        self.sandbox.requests[request.endpoint] += 1
        self.sandbox.requests[f"{request.endpoint} {status}"] += 1

    async def _serve(self, found: Route, request: Request, fault: Fault | None, send: Send) -> None:
        clock = self.sandbox.clock
        if fault is not None and fault.kind == "latency":
            await clock.sleep(fault.delay)
            self.sandbox.advance()
        commits = fault is not None and fault.commits(found.purchase)
        if fault is not None and not commits:
            early = _failure_response(fault, request)
            if early is not None:
                self._count(request, early.status)
                await _send_response(send, early)
                return
            if fault.kind == "drop_connection":
                self._count(request, 0)
                await self._drop(send)
                return
        response = self._carry_out(found, request, fault)
        self._count(request, response.status)
        if fault is None or fault.kind in ("latency", "late_accept"):
            await _send_response(send, response)
        elif fault.kind == "refuse_after_commit":
            await _send_response(send, json_response({"success": False, "msg": fault.msg}))
        elif fault.kind in ("timeout_after_commit", "hidden_commit"):
            if not self.wire_faults:
                raise httpx.ReadTimeout("sandbox: the answer was never sent (timeout_after_commit)")
            await clock.sleep(fault.delay)
            await _send_response(send, response)
        elif fault.kind == "drop_connection":
            await self._drop(send)
        else:
            await _send_response(send, _failure_response(fault, request) or response)

    async def _drop(self, send: Send) -> None:
        if not self.wire_faults:
            raise httpx.RemoteProtocolError("sandbox: server disconnected without a response")
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/json"), (b"content-length", b"400")],
            }
        )
        await send({"type": "http.response.body", "body": b'{"success":tr', "more_body": True})
        raise DroppedConnection("sandbox: connection dropped on purpose (fault injection)")

    def _carry_out(self, found: Route, request: Request, fault: Fault | None) -> Response:
        """Handle the request, shaped by a fault that changes what the work does."""
        if fault is None:
            return self._handle(found, request)
        if fault.kind == "refuse_after_commit" and fault.portion < 1.0:
            request = _first_items(request, fault.portion)
        hidden = fault.delay if fault.kind == "hidden_commit" else None
        late = fault.delay if fault.kind == "late_accept" else None
        with self.sandbox.trading.shaping(hidden_for=hidden, accept_late_by=late):
            return self._handle(found, request)

    def _handle(self, found: Route, request: Request) -> Response:
        sandbox = self.sandbox
        account = sandbox.trading.account_for(request.arg("api"))
        if found.auth and account is None:
            return json_response({"success": False, "msg": "Wrong API key"}, 403)
        try:
            if found.bucket is not None and account is not None:
                wait = sandbox.limits.try_acquire(account.account_id, found.bucket, sandbox.now())
                if wait is not None:
                    return _rate_limited(found.bucket, wait)
            return found.handler(sandbox, request, account)
        except BadRequest as exc:
            return json_response({"success": False, "msg": str(exc)})


def _delayed(send: Send, sleep: Callable[[float], Awaitable[None]], seconds: float) -> Send:
    """``send``, with the answer's first message held back ``seconds`` (the way back)."""

    async def delayed_send(message: MutableMapping[str, Any]) -> None:
        if message.get("type") == "http.response.start":
            await sleep(seconds)
        await send(message)

    return delayed_send


def _rate_limited(bucket: str, wait: float) -> Response:
    body: dict[str, Any] = {"success": False, "msg": "Too many requests, slow down"}
    if bucket == "search":
        body["msBeforeNext"] = math.ceil(wait * 1000)
    return json_response(body, 429)


def _failure_response(fault: Fault, request: Request) -> Response | None:
    if fault.kind == "http_error":
        phrase = HTTPStatus(fault.status).phrase if fault.status in _KNOWN_STATUSES else "Error"
        return html_response(fault.status, f"{fault.status} {phrase}")
    if fault.kind == "html_200":
        return html_response(200, "Just a moment...")
    if fault.kind == "rate_limit":
        response = json_response(
            {"success": False, "msg": "Too many requests", "msBeforeNext": fault.retry_ms}, 429
        )
        if request.path == "/v1/prices/snapshot":
            response.headers.append((b"retry-after", b"1"))
        return response
    if fault.kind == "system_busy":
        return json_response({"success": False, "msg": "System busy"})
    if fault.kind == "empty_success":
        return json_response({"success": True})
    return None


def _first_items(request: Request, portion: float) -> Request:
    """``request`` with only the first ``portion`` of its bulk ``items`` (at least one)."""
    try:
        body = request.json()
    except BadRequest:
        return request
    items = body.get("items")
    if not isinstance(items, list) or not items:
        return request
    keep = max(1, math.floor(len(items) * portion))
    trimmed = json.dumps({**body, "items": items[:keep]}).encode()
    return Request(request.method, request.path, request.query, trimmed)


async def _read_body(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


async def _send_response(send: Send, response: Response) -> None:
    headers = list(response.headers)
    if isinstance(response.body, bytes):
        headers.append((b"content-length", str(len(response.body)).encode()))
        await send({"type": "http.response.start", "status": response.status, "headers": headers})
        await send({"type": "http.response.body", "body": response.body})
        return
    await send({"type": "http.response.start", "status": response.status, "headers": headers})
    await _stream(send, response.body)


async def _stream(send: Send, chunks: Iterator[bytes]) -> None:
    for chunk in chunks:
        if chunk:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await anyio.lowlevel.checkpoint()  # let other requests run during a big answer
    await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
