"""The ASGI application, on Starlette: request in, faults and limits applied, handler
called, answer out.

Starlette does the plumbing (routing, reading the body, sending answers and streams,
lifespan, websockets); the route handlers stay plain functions from a
:class:`~._http.Request` value to a :class:`~._http.Response` value, so the sandbox's
behaviour is decided without any I/O and the toolkit only carries it.

Two flavours share everything but how a lost answer looks. In-process (``wire_faults``
false, for ``httpx.ASGITransport``) a timeout or a dropped connection is raised as the
``httpx`` exception a real socket would have produced, right after the purchase was
committed. Served over a socket (``wire_faults`` true), a timeout really hangs on market
time and a dropped connection really breaks the response half-way.
"""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator, Iterator
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

import anyio.lowlevel
import httpx
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request as WebRequest
from starlette.responses import Response as WebResponse
from starlette.responses import StreamingResponse
from starlette.routing import BaseRoute, Route
from starlette.types import Receive, Scope, Send

from . import (  # noqa: F401 - registration
    _routes_account,
    _routes_market,
    _routes_prices,
    _routes_trading,
)
from ._faults import Fault
from ._http import ROUTES, BadRequest, Request, Response, html_response, json_response
from ._http import Route as Handled
from ._inspect import inspect_request

if TYPE_CHECKING:
    from ._sandbox import Sandbox

__all__ = ["DroppedConnection", "SandboxApp"]

_KNOWN_STATUSES = frozenset(status.value for status in HTTPStatus)
# Every path takes every method, so that a wrong method is answered the way the service
# does (405 with a JSON body), not with the toolkit's plain-text 405.
_ANY_METHOD = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]


class DroppedConnection(Exception):
    """Raised out of the server app to make the server cut the connection mid-answer."""


class SandboxApp:
    """ASGI 3 application over a :class:`Sandbox` (a Starlette application inside)."""

    def __init__(self, sandbox: Sandbox, *, wire_faults: bool) -> None:
        self.sandbox = sandbox
        self.wire_faults = wire_faults
        routes: list[BaseRoute] = [
            Route(path, self._interface, methods=_ANY_METHOD)
            for path in sorted({path for _, path in ROUTES})
        ]
        routes.append(Route("/_sandbox/{rest:path}", self._inspect, methods=_ANY_METHOD))
        self.web = Starlette(routes=routes, exception_handlers={404: self._not_found})
        self.web.router.redirect_slashes = False  # "/v1/user/" is not found, as on the service

    def __repr__(self) -> str:
        return f"SandboxApp(wire_faults={self.wire_faults})"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.web(scope, receive, send)

    # -- endpoints --------------------------------------------------------------------

    async def _inspect(self, web: WebRequest) -> WebResponse:
        request = Request.from_scope(web.scope, await web.body())
        self.sandbox.advance()
        return _web(inspect_request(self.sandbox, request))

    async def _not_found(self, web: WebRequest, exc: Exception) -> WebResponse:
        assert isinstance(exc, HTTPException)
        request = Request.from_scope(web.scope, await web.body())
        back = await self._arrive()
        return await self._answer(self._unknown(request, 404), back)

    async def _interface(self, web: WebRequest) -> WebResponse:
        request = Request.from_scope(web.scope, await web.body())
        back = await self._arrive()
        found = ROUTES.get((request.method, request.path))
        if found is None:
            return await self._answer(self._unknown(request, 405), back)
        if found.purchase:
            self.sandbox.record_purchase_request(request)
        fault = self.sandbox.faults.draw(request.method, request.path)
        if fault is not None:
            self.sandbox.faults_fired.append(
                {"endpoint": request.endpoint, "kind": fault.kind, "at": self.sandbox.now()}
            )
        return await self._serve(found, request, fault, back)

    async def _arrive(self) -> float:
        """The way there (the request is counted only once it arrives); returns the
        delay of the way back."""
        there, back = self.sandbox.network_delays()
        if there > 0.0:
            await self.sandbox.clock.sleep(there)
        self.sandbox.advance()
        return back

    async def _answer(self, response: Response | WebResponse, back: float) -> WebResponse:
        """``response`` once the way back is over."""
        if back > 0.0:
            await self.sandbox.clock.sleep(back)
        return response if isinstance(response, WebResponse) else _web(response)

    def _unknown(self, request: Request, status: int) -> Response:
        self._count(request, status)
        return json_response({"success": False, "msg": "Not found"}, status)

    def _count(self, request: Request, status: int) -> None:
        self.sandbox.requests[request.endpoint] += 1
        self.sandbox.requests[f"{request.endpoint} {status}"] += 1

    async def _serve(
        self, found: Handled, request: Request, fault: Fault | None, back: float
    ) -> WebResponse:
        clock = self.sandbox.clock
        if fault is not None and fault.kind == "latency":
            await clock.sleep(fault.delay)
            self.sandbox.advance()
        commits = fault is not None and fault.commits(found.purchase)
        if fault is not None and not commits:
            early = _failure_response(fault, request)
            if early is not None:
                self._count(request, early.status)
                return await self._answer(early, back)
            if fault.kind == "drop_connection":
                self._count(request, 0)
                return await self._answer(self._drop(), back)
        response = self._carry_out(found, request, fault)
        self._count(request, response.status)
        if fault is None or fault.kind in ("latency", "late_accept"):
            return await self._answer(response, back)
        if fault.kind == "refuse_after_commit":
            return await self._answer(json_response({"success": False, "msg": fault.msg}), back)
        if fault.kind in ("timeout_after_commit", "hidden_commit"):
            if not self.wire_faults:
                raise httpx.ReadTimeout("sandbox: the answer was never sent (timeout_after_commit)")
            await clock.sleep(fault.delay)
            return await self._answer(response, back)
        if fault.kind == "drop_connection":
            return await self._answer(self._drop(), back)
        return await self._answer(_failure_response(fault, request) or response, back)

    def _drop(self) -> WebResponse:
        if not self.wire_faults:
            raise httpx.RemoteProtocolError("sandbox: server disconnected without a response")
        return _BrokenResponse()

    def _carry_out(self, found: Handled, request: Request, fault: Fault | None) -> Response:
        """Handle the request, shaped by a fault that changes what the work does."""
        if fault is None:
            return self._handle(found, request)
        if fault.kind == "refuse_after_commit" and fault.portion < 1.0:
            request = _first_items(request, fault.portion)
        hidden = fault.delay if fault.kind == "hidden_commit" else None
        late = fault.delay if fault.kind == "late_accept" else None
        with self.sandbox.trading.shaping(hidden_for=hidden, accept_late_by=late):
            return self._handle(found, request)

    def _handle(self, found: Handled, request: Request) -> Response:
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


class _BrokenResponse(WebResponse):
    """A 200 that promises 400 bytes, sends a few and breaks the connection."""

    def __init__(self) -> None:
        super().__init__(b'{"success":tr', 200, media_type="application/json")
        self.raw_headers = [(b"content-type", b"application/json"), (b"content-length", b"400")]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
        await send({"type": "http.response.body", "body": self.body, "more_body": True})
        raise DroppedConnection("sandbox: connection dropped on purpose (fault injection)")


def _web(response: Response) -> WebResponse:
    """The toolkit's response for a handler's answer: the same status, headers and bytes."""
    headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in response.headers}
    if isinstance(response.body, bytes):
        return WebResponse(response.body, response.status, headers)
    return StreamingResponse(_chunks(response.body), response.status, headers)


async def _chunks(chunks: Iterator[bytes]) -> AsyncIterator[bytes]:
    """A big answer made by a plain generator, with a checkpoint between chunks so other
    requests run meanwhile (and without the thread the toolkit would use for a plain
    iterator: the sandbox is single-threaded)."""
    for chunk in chunks:
        if chunk:
            yield chunk
            await anyio.lowlevel.checkpoint()


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
