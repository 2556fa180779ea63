"""Fixtures of the sandbox tests: a small seeded sandbox on a virtual clock, and raw HTTP
to it through ``httpx.ASGITransport``."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from sandbox_support import Api

from engine import VirtualClock
from engine.sandbox import MarketConfig, Sandbox, SandboxConfig


@pytest.fixture
def sandbox(clock: VirtualClock) -> Sandbox:
    return Sandbox(SandboxConfig(seed=7, market=MarketConfig(size=1500)), clock=clock)


@pytest.fixture
async def http(sandbox: Sandbox) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=sandbox.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://sandbox") as client:
        yield client


@pytest.fixture
def api(http: httpx.AsyncClient, sandbox: Sandbox) -> Api:
    return Api(http, sandbox)
