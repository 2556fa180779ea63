"""The transport seam that keeps secrets out of everything httpx shows.

The client builds every request WITHOUT its secret query parameters (the API key ``api``,
``platform_api``, the trade-link ``token``) and names them in a request extension instead.
:class:`KeyInjectingTransport` adds them to a private copy of the request just before the
inner transport sends it. So the request httpx logs (``HTTP Request: GET ...``), attaches to
its exceptions (``exc.request``) and to responses (``response.request``) never carries
them: only the copy does, and the copy never leaves this module.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from typing import Any

import httpx

from ._secret import APIKey, Secret

__all__ = [
    "AUTH_EXTENSION",
    "SECRETS_UNREAD",
    "SECRET_PARAMS_EXTENSION",
    "KeyInjectingTransport",
]

AUTH_EXTENSION = "snipe.auth"
"""Request extension: ``True`` when the request must carry the API key as ``api=``."""

SECRET_PARAMS_EXTENSION = "snipe.secret_params"
"""Request extension: a mapping of query-parameter name to :class:`Secret` to add."""

_OUR_EXTENSIONS = (AUTH_EXTENSION, SECRET_PARAMS_EXTENSION)

SECRETS_UNREAD = "secrets_unread"
"""The attribute by which an inner transport that answers in-process and reads no
secret (a backtest's replay of the market) says so (``True``): it is handed the request
without them, and the address is not parsed again to add them (a search's 50 names)."""


class KeyInjectingTransport(httpx.AsyncBaseTransport):
    """Wraps ``inner``; adds ``api=<key>`` (and any other secret parameters the request
    names) to a copy of each request that asks for them, and sends the copy; an
    ``inner`` with a true :data:`SECRETS_UNREAD` attribute gets the request as it is.

    A transport error from ``inner`` is re-raised as the same error type, carrying the
    keyless request and a message with every secret replaced by ``***``; it is raised
    outside the ``except`` block, so neither ``__cause__`` nor ``__context__`` holds the
    original (whose ``request`` may be the keyed copy).
    """

    def __init__(self, inner: httpx.AsyncBaseTransport, key: APIKey) -> None:
        self._inner = inner
        self._key = key
        self._unread = getattr(inner, SECRETS_UNREAD, False) is True

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        secrets = {} if self._unread else self._secrets_for(request.extensions)
        outgoing = _with_params(request, secrets) if secrets else _without_ours(request)
        error: httpx.TransportError | None = None
        try:
            response = await self._inner.handle_async_request(outgoing)
        except httpx.TransportError as exc:
            error = _scrubbed(exc, request, (self._key, *secrets.values()))
        if error is not None:
            raise error
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()

    def _secrets_for(self, extensions: Mapping[str, Any]) -> dict[str, Secret]:
        secrets: dict[str, Secret] = {}
        if extensions.get(AUTH_EXTENSION):
            secrets["api"] = self._key
        extra = extensions.get(SECRET_PARAMS_EXTENSION)
        if extra:
            secrets.update(extra)
        return secrets

    def __repr__(self) -> str:
        return f"KeyInjectingTransport({self._inner!r}, key={self._key!r})"


def _extensions_for_inner(request: httpx.Request) -> dict[str, Any]:
    return {k: v for k, v in request.extensions.items() if k not in _OUR_EXTENSIONS}


def _without_ours(request: httpx.Request) -> httpx.Request:
    if not any(name in request.extensions for name in _OUR_EXTENSIONS):
        return request
    request.extensions = _extensions_for_inner(request)
    return request


def _with_params(request: httpx.Request, secrets: Mapping[str, Secret]) -> httpx.Request:
    # Appended to the text and parsed once: copy_merge_params would parse the URL twice.
    extra = urllib.parse.urlencode([(name, s.reveal()) for name, s in secrets.items()])
    text = str(request.url)
    url = httpx.URL(f"{text}{'&' if request.url.query else '?'}{extra}")
    return httpx.Request(
        request.method,
        url,
        headers=request.headers,
        stream=request.stream,
        extensions=_extensions_for_inner(request),
    )


def _scrubbed(
    exc: httpx.TransportError, request: httpx.Request, secrets: tuple[Secret, ...]
) -> httpx.TransportError:
    message = str(exc)
    for secret in secrets:
        message = secret.redact(message)
    try:
        clean = type(exc)(message, request=request)
    except TypeError:  # an error type with another signature: keep the family
        clean = httpx.TransportError(message, request=request)
    return clean
