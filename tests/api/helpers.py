"""An API over a rigged engine (sandbox through ASGI, virtual clock), reached in-process."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
from sniper.harness import Rig, rig

from engine import VirtualClock
from engine.api import Api, EventBus, Role, Token, TokenStore, api_app
from engine.api._security import allowed_hosts, trusted_proxies
from engine.rules import ApiSettings
from engine.sandbox import Sandbox

READ = "r" * 8 + "-read-token-0123456789"
CONTROL = "c" * 8 + "-control-token-0123456789"
BASE = "http://127.0.0.1:8788"


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


@dataclass
class Served:
    rig: Rig
    api: Api
    client: httpx.AsyncClient
    transport: httpx.ASGITransport

    def other_client(self, address: str) -> httpx.AsyncClient:
        """A client seen as coming from ``address``."""
        app: Any = self.transport.app
        return httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app, client=(address, 50_000)), base_url=BASE
        )


@asynccontextmanager
async def served(
    clock: VirtualClock,
    sandbox: Sandbox,
    rules: str,
    *,
    api_settings: ApiSettings | None = None,
    **rig_options: Any,
) -> AsyncIterator[Served]:
    """The API over a rigged engine; ``api_settings`` (default: the defaults) give the
    trusted proxies."""
    settings = api_settings or ApiSettings()
    async with rig(clock, sandbox, rules, **rig_options) as r:
        bus = EventBus(clock)
        r.host.register(bus, "api.bus")
        tokens = TokenStore(
            [Token("phone", Role.READ, READ), Token("laptop", Role.CONTROL, CONTROL)]
        )
        api = Api(
            r.engine,
            tokens,
            bus,
            allowed_hosts(settings, "127.0.0.1"),
            secrets=(sandbox.api_key,),
            proxies=trusted_proxies(settings),
        )
        transport = httpx.ASGITransport(app=api_app(api))
        async with httpx.AsyncClient(transport=transport, base_url=BASE) as client:
            yield Served(r, api, client, transport)
