"""Requests, responses and the route table of the sandbox's HTTP layer (no framework: a
dict from (method, path) to a handler is all the interface needs)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

if TYPE_CHECKING:
    from ._sandbox import Sandbox
    from ._trading import Account

__all__ = [
    "ROUTES",
    "BadRequest",
    "Request",
    "Response",
    "Route",
    "html_response",
    "json_response",
    "rfc3339",
    "route",
]


class BadRequest(Exception):
    """A parameter breaks the interface; answered as ``success: false`` with ``msg``."""


@dataclass(slots=True)
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    body: bytes = b""

    @classmethod
    def from_scope(cls, scope: Mapping[str, Any], body: bytes) -> Request:
        raw = scope.get("query_string", b"").decode("latin-1")
        return cls(
            method=scope["method"].upper(),
            path=scope["path"],
            query=parse_qs(raw, keep_blank_values=True),
            body=body,
        )

    @property
    def endpoint(self) -> str:
        return f"{self.method} {self.path}"

    def arg(self, name: str, *, required: bool = False) -> str | None:
        values = self.query.get(name)
        if not values or values[0] == "":
            if required:
                raise BadRequest(f"{name} is required")
            return None
        return values[0]

    def args(self, name: str) -> list[str]:
        return [v for v in self.query.get(name, []) if v != ""]

    def int_arg(
        self,
        name: str,
        *,
        required: bool = False,
        minimum: int | None = None,
        maximum: int | None = None,
    ) -> int | None:
        text = self.arg(name, required=required)
        if text is None:
            return None
        return _checked_int(name, text, minimum, maximum)

    def flag(self, name: str) -> bool:
        """``1`` or ``true`` (any case) is on; anything else is off."""
        value = self.arg(name)
        return value is not None and value.lower() in ("1", "true")

    def choice(self, name: str, choices: tuple[str, ...], default: str | None = None) -> str | None:
        value = self.arg(name)
        if value is None:
            return default
        if value not in choices:
            raise BadRequest(f"{name}: expected one of {', '.join(choices)}, got {value!r}")
        return value

    def json(self) -> dict[str, Any]:
        if not self.body.strip():
            return {}
        try:
            data = json.loads(self.body)
        except (ValueError, UnicodeDecodeError) as exc:
            raise BadRequest(f"body is not valid JSON: {exc}") from None
        if not isinstance(data, dict):
            raise BadRequest("body must be a JSON object")
        return data


def _checked_int(name: str, value: Any, minimum: int | None, maximum: int | None) -> int:
    if isinstance(value, bool):
        raise BadRequest(f"{name}: expected a whole number, got {value!r}")
    try:
        number = int(value) if isinstance(value, int) else int(str(value).strip())
    except ValueError:
        raise BadRequest(f"{name}: expected a whole number, got {value!r}") from None
    if minimum is not None and number < minimum:
        raise BadRequest(f"{name}: must be at least {minimum}, got {number}")
    if maximum is not None and number > maximum:
        raise BadRequest(f"{name}: must be at most {maximum}, got {number}")
    return number


def body_int(body: dict[str, Any], name: str, *, minimum: int | None = None) -> int:
    if name not in body:
        raise BadRequest(f"{name} is required")
    return _checked_int(name, body[name], minimum, None)


@dataclass(slots=True)
class Response:
    status: int = 200
    body: bytes | Iterator[bytes] = b""
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)


def json_response(data: Any, status: int = 200) -> Response:
    body = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return Response(status, body, [(b"content-type", b"application/json; charset=utf-8")])


_HTML = (
    "<!DOCTYPE html><html><head><title>{title}</title></head><body><h1>{title}</h1>"
    "<p>Checking your browser before accessing the marketplace.</p></body></html>"
)


def html_response(status: int, title: str) -> Response:
    body = _HTML.format(title=title).encode("utf-8")
    return Response(status, body, [(b"content-type", b"text/html; charset=utf-8")])


def rfc3339(epoch: float) -> str:
    return datetime.fromtimestamp(int(epoch), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


Handler = Callable[["Sandbox", Request, "Account | None"], Response]


@dataclass(frozen=True, slots=True)
class Route:
    """``auth``: needs a valid ``api`` key. ``bucket``: the rate limit it counts against.
    ``purchase``: spends money, so a dropped connection happens after the commit."""

    handler: Handler
    auth: bool = True
    bucket: str | None = None
    purchase: bool = False


ROUTES: dict[tuple[str, str], Route] = {}


def route(
    method: str, path: str, *, auth: bool = True, bucket: str | None = None, purchase: bool = False
) -> Callable[[Handler], Handler]:
    def register(handler: Handler) -> Handler:
        ROUTES[(method, path)] = Route(handler, auth=auth, bucket=bucket, purchase=purchase)
        return handler

    return register
