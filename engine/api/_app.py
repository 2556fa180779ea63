"""The control-plane API: a Starlette application over one running :class:`Engine`.

Read (any token): ``GET /api/status``, ``/api/budget``, ``/api/purchases``,
``/api/unresolved``, ``/api/orders``, ``/api/history``, ``/api/why/{name}``,
``/api/references/{name}``, ``/api/control-events``, ``/api/events``
(server-sent events) and ``/healthz``.

Control (a control token, ``POST``): ``/api/pause``, ``/api/resume``, ``/api/reload``,
``/api/orders/remove``, ``/api/stop``. Each is written to the ledger's control events
with the time and the name of the token that did it.

Every request passes :meth:`Api.guard` first (see ``_security.py``); every answer is JSON
(or the event stream) with ``Cache-Control: no-store`` and is checked, as a last line of
defence, not to contain the marketplace API key.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from ..ledger import PurchaseState
from ..paper import PaperView
from ..portfolio import value_ledger
from ..rules import RuleSet, explain
from ..sniper import Engine, EngineView, caps_for_rule, controls
from ._events import EventBus
from ._security import (
    FailureLimiter,
    Network,
    Role,
    Token,
    TokenStore,
    client_address,
    cross_site,
    host_allowed,
    token_in_query,
)

__all__ = ["Api", "api_app"]

log = logging.getLogger("snipe.api")

MAX_PAGE = 500
_SECURITY_HEADERS = {
    "cache-control": "no-store",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
}

RulesLoader = Callable[[str], RuleSet]
"""Path -> checked rule set; raises :class:`~engine.ConfigError` for an invalid file."""


@dataclass
class Api:
    """What the application answers from, and its guard's state."""

    engine: Engine
    tokens: TokenStore
    bus: EventBus
    hosts: frozenset[str]
    secrets: Sequence[str] = ()
    """Values no answer may contain (the marketplace API key)."""
    load: RulesLoader | None = None
    """How a reload reads the rules file (default: :func:`load_rules` with the engine's
    plugins, the loader ``snipe run`` starts with)."""
    proxies: tuple[Network, ...] = ()
    """Trusted reverse proxies: from them, the client is the one ``X-Forwarded-For``
    states (see :func:`client_address`)."""
    failures: FailureLimiter = field(init=False)

    def __post_init__(self) -> None:
        self.failures = FailureLimiter(self.engine.clock)

    def guard(self, request: Request, role: Role) -> Token | Response:
        """The token of an allowed request, or the refusal to send."""
        if not host_allowed(request.headers.get("host"), self.hosts):
            return _error(421, "this host name is not served here")
        if token_in_query(request.url.query, self.tokens):
            return _error(400, "tokens are never accepted in a URL: send Authorization: Bearer")
        if cross_site(request.method, request.headers, self.hosts):
            return _error(403, "cross-site request refused")
        peer = request.client.host if request.client else None
        client = client_address(peer, request.headers.getlist("x-forwarded-for"), self.proxies)
        wait = self.failures.locked_for(client)
        if wait > 0:
            return _error(429, "too many failed attempts", {"retry-after": f"{wait:.0f}"})
        scheme, _, presented = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not presented.strip():
            return _error(401, "a token is needed", {"www-authenticate": "Bearer"})
        token = self.tokens.match(presented.strip())
        if token is None:
            self.failures.failed(client)
            log.warning("api: a bad token from %s", client)  # never the token
            return _error(401, "bad token", {"www-authenticate": "Bearer"})
        self.failures.succeeded(client)
        if not token.allows(role):
            return _error(403, f"the token {token.name!r} may only read")
        return token

    def answer(self, body: Any, status: int = 200) -> Response:
        text = json.dumps(body, separators=(",", ":"), default=str)
        if any(secret and secret in text for secret in self.secrets):
            log.error("api: an answer held the API key and was withheld")
            return _error(500, "answer withheld")
        return Response(text, status, headers=_SECURITY_HEADERS, media_type="application/json")

    async def record(self, action: str, token: Token, outcome: str, **details: Any) -> None:
        """Write a control action to the ledger's control events and the event stream."""
        await self.engine.ledger.record_control(
            action, actor=token.name, outcome=outcome, details=details or None
        )
        self.publish(action, token, outcome, **details)

    def publish(self, action: str, token: Token, outcome: str, **details: Any) -> None:
        """Tell the event stream of a control action (``engine.sniper.controls`` wrote it to
        the ledger)."""
        self.bus.publish("control", action=action, actor=token.name, outcome=outcome, **details)


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    return Response(
        json.dumps({"error": message}),
        status,
        headers={**_SECURITY_HEADERS, **(headers or {})},
        media_type="application/json",
    )


Endpoint = Callable[[Api, Request, Token], Awaitable[Response]]


def _route(api: Api, path: str, role: Role, handler: Endpoint) -> Route:
    async def endpoint(request: Request) -> Response:
        allowed = api.guard(request, role)
        if isinstance(allowed, Response):
            return allowed
        try:
            return await handler(api, request, allowed)
        except ValueError as exc:  # a bad parameter
            return _error(400, str(exc))

    methods = ["POST"] if role is Role.CONTROL else ["GET", "HEAD"]
    return Route(path, endpoint, methods=methods)


_STATIC = {
    "": ("index.html", "text/html; charset=utf-8"),
    "dashboard.css": ("dashboard.css", "text/css; charset=utf-8"),
    "dashboard.js": ("dashboard.js", "text/javascript; charset=utf-8"),
}
_PAGE_HEADERS = {
    **_SECURITY_HEADERS,
    # nothing from elsewhere, no inline script, never framed
    "content-security-policy": "default-src 'self'; connect-src 'self'; img-src 'self';"
    " style-src 'self'; script-src 'self'; frame-ancestors 'none'; base-uri 'none';"
    " form-action 'none'",
}


def _dashboard(api: Api) -> list[Route]:
    """The dashboard's files, shipped in the package: they hold no data (every figure is
    read with the token the user pastes), so they answer without a token, after the Host
    check, with a strict content security policy."""
    from importlib.resources import files

    folder = files(__package__ or "engine.api") / "static"
    bodies = {
        path: (folder.joinpath(name).read_bytes(), kind) for path, (name, kind) in _STATIC.items()
    }

    async def endpoint(request: Request) -> Response:
        if not host_allowed(request.headers.get("host"), api.hosts):
            return _error(421, "this host name is not served here")
        found = bodies.get(request.path_params.get("file", ""))
        if found is None:
            return _error(404, "not found")
        return Response(found[0], headers=_PAGE_HEADERS, media_type=found[1])

    return [
        Route("/dashboard/", endpoint, methods=["GET", "HEAD"]),
        Route("/dashboard/{file:str}", endpoint, methods=["GET", "HEAD"]),
    ]


def api_app(api: Api) -> Starlette:
    """The ASGI application (routes above; anything else is a 404 or 405)."""
    read, control = Role.READ, Role.CONTROL
    routes = [
        *_dashboard(api),
        _route(api, "/healthz", read, _health),
        _route(api, "/api/status", read, _status),
        _route(api, "/api/budget", read, _budget),
        _route(api, "/api/purchases", read, _purchases),
        _route(api, "/api/unresolved", read, _unresolved),
        _route(api, "/api/orders", read, _orders),
        _route(api, "/api/history", read, _history),
        _route(api, "/api/why/{name:path}", read, _why),
        _route(api, "/api/references/{name:path}", read, _references),
        _route(api, "/api/control-events", read, _control_events),
        _route(api, "/api/events", read, _events),
        _route(api, "/api/pause", control, _pause),
        _route(api, "/api/resume", control, _resume),
        _route(api, "/api/reload", control, _reload),
        _route(api, "/api/orders/remove", control, _remove_orders),
        _route(api, "/api/stop", control, _stop),
    ]
    return Starlette(routes=routes)


# -- read ------------------------------------------------------------------------------------


def _paper_json(paper: PaperView) -> dict[str, Any]:
    """A paper run's figures (money: int USD x 1000)."""
    return {
        "pending": paper.pending,
        "judged": dict(paper.judged),
        "wallet_start": paper.wallet_start,
        "wallet_left": paper.wallet_left,
    }


def view_json(view: EngineView) -> dict[str, Any]:
    """The view as JSON (money: int USD x 1000)."""
    return {
        "now": view.now,
        "mode": view.mode.value,
        "paused": view.paused,
        "buying_allowed": view.mode.value == "running" and view.paused is None,
        "halt_reason": view.halt_reason,
        "dry_run": view.dry_run,
        "paper": None if view.paper is None else _paper_json(view.paper),
        "started_at": view.started_at,
        "buying_since": view.buying_since,
        "waiting": view.waiting,
        "rules_file": view.rules_file,
        "spent_total": view.spent_total,
        "spent_today": view.spent_today,
        "order_exposure": view.order_exposure,
        "left_total": view.left_total,
        "left_today": view.left_today,
        "by_state": dict(view.by_state),
        "unresolved": view.unresolved,
        "open_trades": view.open_trades,
        "overdue": view.overdue,
        "searches": view.searches,
        "search_used": view.search_used,
        "search_limit": view.search_limit,
        "snapshots": view.snapshots,
        "listings_seen": view.listings_seen,
        "candidates": view.candidates,
        "outcomes": {k.value: v for k, v in view.outcomes.items()},
        "watched": view.watched,
        "orders_live": view.orders_live,
        "errors": list(view.errors),
        "skips": [{"rule": s.rule, "example": s.example, "count": s.count} for s in view.skips],
        # the live listing feed's state (None: off, the snapshot alone watches the market)
        "feed": None if view.feed is None else dataclasses.asdict(view.feed),
        "recent": [
            {
                "at": r.at,
                "name": r.name,
                "item_id": r.item_id,
                "rule": r.rule,
                "price": r.price,
                "outcome": r.outcome.value,
                "detail": r.detail,
            }
            for r in view.recent
        ],
    }


async def _health(api: Api, request: Request, token: Token) -> Response:
    view = await api.engine.view()
    return api.answer({"mode": view.mode.value, "paused": view.paused})


async def _status(api: Api, request: Request, token: Token) -> Response:
    return api.answer(view_json(await api.engine.view()))


async def _budget(api: Api, request: Request, token: Token) -> Response:
    """Every cap (global, and each rule's ``max_spend``/``max_count``) with what it counts
    now: purchases in flight or spent, and buy-order exposure."""
    engine = api.engine
    ruleset, now = engine.ruleset, engine.clock.now()
    names = [r.name for r in (*ruleset.rules, *ruleset.buy_order_rules)] or [""]
    caps = list({c.describe(): c for n in names for c in caps_for_rule(ruleset, n, now)}.values())
    used = await engine.ledger.cap_usage(caps)
    view = await engine.view()
    return api.answer(
        {
            "per_day": ruleset.budgets.per_day,
            "total": ruleset.budgets.total,
            "spent_today": view.spent_today,
            "spent_total": view.spent_total,
            "order_exposure": view.order_exposure,
            "left_today": view.left_today,
            "left_total": view.left_total,
            "caps": [
                {"cap": c.describe(), "kind": c.kind, "rule": c.rule, "limit": c.limit, "used": u}
                for c, u in zip(caps, used, strict=True)
            ],
        }
    )


def _int(request: Request, name: str, default: int, most: int) -> int:
    text = request.query_params.get(name)
    if text is None:
        return default
    if not text.isdigit() or int(text) > most:
        raise ValueError(f"{name}: expected a whole number from 0 to {most}, got {text!r}")
    return int(text)


async def _purchases(api: Api, request: Request, token: Token) -> Response:
    states = None
    text = request.query_params.get("state")
    if text:
        try:
            states = {PurchaseState(s.strip().upper()) for s in text.split(",")}
        except ValueError:
            known = ", ".join(s.value for s in PurchaseState)
            raise ValueError(f"state: expected one or more of {known}, got {text!r}") from None
    limit = _int(request, "limit", 50, MAX_PAGE)
    offset = _int(request, "offset", 0, 10**9)
    rule = request.query_params.get("rule") or None
    found = await api.engine.ledger.purchases(states=states, rule=rule)
    found.reverse()  # newest first
    page = found[offset : offset + limit]
    return api.answer(
        {
            "total": len(found),
            "offset": offset,
            "limit": limit,
            "purchases": [p.to_json() for p in page],
        }
    )


async def _unresolved(api: Api, request: Request, token: Token) -> Response:
    found = await api.engine.ledger.unresolved()
    return api.answer({"purchases": [p.to_json() for p in found]})


async def _orders(api: Api, request: Request, token: Token) -> Response:
    engine = api.engine
    live = await engine.ledger.orders()
    return api.answer(
        {
            "orders": [o.to_json() for o in live],
            "planned": [p.describe() for p in engine.orders.planned],
        }
    )


async def _history(api: Api, request: Request, token: Token) -> Response:
    """Spend and value over time, for the dashboard's chart: one point per held purchase
    (oldest first) with the running cost and the running value by ``portfolio.value_by``
    (a holding without a value counts at its cost, and ``unvalued`` says how many)."""
    engine = api.engine
    now = engine.clock.now()
    settings = engine.ruleset.portfolio
    portfolio = await value_ledger(engine.ledger, engine.references, settings, now=now)
    points, spent, value, unvalued = [], 0, 0, 0
    for h in sorted(portfolio.holdings, key=lambda h: h.purchase.created_at):
        spent += h.cost
        if h.value is None:
            unvalued += 1
        value += h.cost if h.value is None else h.value
        points.append({"at": h.purchase.created_at, "spent": spent, "value": value})
    return api.answer(
        {
            "now": now,
            "paper": engine.paper is not None,
            "value_by": portfolio.settings.value_by,
            "unvalued": unvalued,
            "points": points,
        }
    )


async def _why(api: Api, request: Request, token: Token) -> Response:
    name = request.path_params["name"]
    engine = api.engine
    lines = explain(engine.ruleset, name)
    recent = [
        {"rule": d.rule, "accepted": d.accepted, "price": d.price, "reasons": list(d.reasons)}
        for d in api.bus.decisions.get(name, ())
    ]
    skips = [
        {"rule": s.rule, "example": s.example, "count": s.count}
        for s in (await engine.view()).skips
    ]
    return api.answer({"name": name, "rules": lines, "last_seen": recent, "skips": skips})


async def _references(api: Api, request: Request, token: Token) -> Response:
    name = request.path_params["name"]
    engine = api.engine
    view = engine.ruleset.view(name)
    readings = engine.references.readings(view.base_name, view.phase, engine.clock.now())
    return api.answer(
        {
            "name": name,
            "references": [
                {
                    "source": r.source,
                    "price": r.price,
                    "observations": r.observations,
                    "as_of": r.as_of,
                    "note": r.note,
                }
                for r in readings
            ],
        }
    )


async def _control_events(api: Api, request: Request, token: Token) -> Response:
    after = _int(request, "after", 0, 10**12)
    limit = _int(request, "limit", 100, MAX_PAGE)
    found = await api.engine.ledger.control_events(after=after, limit=limit)
    return api.answer({"events": [e.to_json() for e in found]})


async def _events(api: Api, request: Request, token: Token) -> Response:
    """Server-sent events: the recent ones after ``Last-Event-ID`` (or ``after``), then
    each as it happens; ``limit`` ends the stream after that many (tests, polling)."""
    last = request.headers.get("last-event-id") or request.query_params.get("after") or "0"
    if not last.isdigit():
        raise ValueError(f"Last-Event-ID: expected a number, got {last!r}")
    limit = _int(request, "limit", 0, 10**9) or None

    async def stream() -> AsyncIterator[str]:
        sent, cursor = 0, int(last)
        yield ": snipe events\n\n"
        while limit is None or sent < limit:
            events = None
            # only the wait is timed, never a yield: a slow reader holds this generator at
            # a yield, and a deadline passing there would cancel the server's send instead
            with anyio.move_on_after(15):  # real seconds: keeps proxies from closing it
                events = await api.bus.wait(cursor)
            if events is None:
                yield ": keep-alive\n\n"
                continue
            if not events:  # the server is stopping: end the stream (clients reconnect)
                return
            for event in events:
                cursor = event.id
                text = event.sse()
                if not any(s and s in text for s in api.secrets):
                    yield text
                sent += 1
                if limit is not None and sent >= limit:
                    return

    headers = {**_SECURITY_HEADERS, "x-accel-buffering": "no"}
    if request.scope.get("http_version") in ("1.0", "1.1"):
        # the connection ends with the stream (a client reconnects on a new one): kept
        # alive, one whose stream ended as the server stopped held the stop (hypercorn on
        # trio) for its whole grace. HTTP/2 (TLS) has no such header and needs none.
        headers["connection"] = "close"
    return StreamingResponse(stream(), headers=headers, media_type="text/event-stream")


# -- control ---------------------------------------------------------------------------------


async def _body(request: Request) -> dict[str, Any]:
    raw = await request.body()
    if not raw:
        return {}
    if len(raw) > 4096:
        raise ValueError("the body is too large")
    try:
        body = json.loads(raw)
    except ValueError:
        raise ValueError("the body is not JSON") from None
    if not isinstance(body, dict):
        raise ValueError("the body must be a JSON object")
    return body


async def _pause(api: Api, request: Request, token: Token) -> Response:
    body = await _body(request)
    reason = str(body.get("reason") or f"paused through the API by {token.name}")[:200]
    removed = await controls.pause(api.engine, reason, token.name)
    api.publish("pause", token, "paused", reason=reason, orders_removed=removed)
    return api.answer({"paused": reason, "orders_removed": removed})


async def _resume(api: Api, request: Request, token: Token) -> Response:
    engine = api.engine
    outcome = await controls.resume(engine, token.name)
    api.publish("resume", token, outcome)
    if outcome == "halted":
        return _error(409, f"HALTED: {engine.status.halt_reason}; a HALT needs a restart")
    return api.answer({"resumed": outcome == "resumed"})


async def _reload(api: Api, request: Request, token: Token) -> Response:
    done = await controls.reload_rules(api.engine, None, token.name, load=api.load)
    if done.error is not None:
        api.publish("reload", token, "refused", error=done.error)
        return api.answer({"reloaded": False, "error": done.error}, 422)
    notes = list(done.notes)
    api.publish("reload", token, "reloaded", rules=len(done.rules), notes=notes)
    return api.answer(
        {
            "reloaded": True,
            "rules": list(done.rules),
            "warnings": [str(p) for p in api.engine.ruleset.problems],
            "notes": notes,
        }
    )


async def _remove_orders(api: Api, request: Request, token: Token) -> Response:
    engine = api.engine
    removed = 0 if engine.settings.simulated else await engine.orders.remove_all()
    # open (or maybe open) on the service: a removed order whose last fills are not yet
    # settled is no longer live there, though the ledger still counts its exposure
    left = len(await engine.orders.left_open())
    await api.record("remove_orders", token, "removed", removed=removed, left=left)
    return api.answer({"removed": removed, "still_live": left})


async def _stop(api: Api, request: Request, token: Token) -> Response:
    await api.record("stop", token, "stopping")
    api.engine.request_stop(f"stop through the API by {token.name}")
    return api.answer({"stopping": True})
