"""Serving the API: hypercorn on the engine's own event loop (asyncio or trio), with TLS
when the settings name a certificate, no access log (a request line could carry a
mistaken token; headers are never logged either way)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from anyio.abc import Listener, SocketStream
from pydantic import ValidationError
from starlette.applications import Starlette

from .._errors import ConfigError
from .._web import serve_asgi
from ..rules import ApiSettings
from ._security import (
    Network,
    TokenStore,
    allowed_hosts,
    check_bind,
    load_tokens,
    trusted_proxies,
)

__all__ = ["ApiOptions", "api_options", "serve_app"]


@dataclass(frozen=True)
class ApiOptions:
    """What ``snipe run`` serves the API with, checked before anything starts."""

    settings: ApiSettings
    host: str
    port: int
    tokens: TokenStore = field(repr=False)

    @property
    def tls(self) -> bool:
        return bool(self.settings.certfile and self.settings.keyfile)

    @property
    def proxies(self) -> tuple[Network, ...]:
        """Peers whose ``X-Forwarded-For`` is believed (see :func:`trusted_proxies`)."""
        return trusted_proxies(self.settings)

    @property
    def hosts(self) -> frozenset[str]:
        """Host header names accepted (see :func:`allowed_hosts`)."""
        return allowed_hosts(self.settings, self.host)

    def with_port(self, port: int | None) -> ApiOptions:
        """The same, with the port it got (``0`` asked for any free one)."""
        return replace(self, port=self.port if port is None else port)

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}"


def api_options(
    settings: ApiSettings | None, listen: str | None, *, environ: Any = None
) -> ApiOptions | None:
    """The API to serve: the rules file's ``api:`` section, its ``listen`` replaced by
    ``listen`` (``--api``) when given; ``None`` when neither asks for one. Raises
    :class:`~engine.ConfigError` for a bind that is not safe or missing tokens."""
    if settings is None and listen is None:
        return None
    if listen is not None:
        try:
            ApiSettings(listen=listen)  # the same check as the rules file's
        except ValidationError as exc:
            message = exc.errors()[0]["msg"].removeprefix("Value error, ")
            raise ConfigError(message, location="--api") from None
    if settings is None:
        settings = ApiSettings(listen=listen or ApiSettings().listen)
    elif listen is not None:
        settings = settings.model_copy(update={"listen": listen})
    host, port = check_bind(settings)
    tokens = load_tokens(settings, environ=environ)
    return ApiOptions(settings, host, port, tokens)


async def serve_app(
    listener: Listener[SocketStream],
    app: Starlette,
    settings: ApiSettings,
    *,
    on_stop: Callable[[], None] | None = None,
) -> None:
    """Answer connections on ``listener`` with ``app`` until cancelled, then stop cleanly
    (``on_stop`` first: the event bus's ``close``, which ends the event streams); closes
    the listener."""
    await serve_asgi(
        listener, app, certfile=settings.certfile, keyfile=settings.keyfile, on_stop=on_stop
    )
