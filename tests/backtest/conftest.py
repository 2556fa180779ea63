"""A recording made with the in-process sandbox, shared by the slower backtest tests."""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx
import pytest

from engine import VirtualClock
from engine._limiter import DEFAULT_LIMITS, RateLimiter
from engine.backtest import Recorder, RecordWriter
from engine.client import MarketClient
from engine.sandbox import MarketConfig, Sandbox, SandboxConfig

from .support import SANDBOX_NAMES


async def _record(directory: Path, minutes: int) -> None:
    clock = VirtualClock()
    market = MarketConfig(size=400, featured=SANDBOX_NAMES, featured_share=0.5)
    sandbox = Sandbox(SandboxConfig(seed=11, market=market), clock=clock)
    limiter = RateLimiter(clock, DEFAULT_LIMITS)
    transport = httpx.ASGITransport(app=sandbox.app)
    async with MarketClient(
        sandbox.api_key,
        base_url="http://sandbox",
        transport=transport,
        limiter=limiter,
        clock=clock,
    ) as client:
        with RecordWriter(directory, include_hold=True) as writer:
            recorder = Recorder(client, writer, clock, limiter)
            for _ in range(minutes * 6):
                await recorder.step()
                clock.advance(10.0)


@pytest.fixture(scope="session")
def sandbox_recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """10 minutes of a small sandbox market, recorded through the client."""
    directory = tmp_path_factory.mktemp("recording") / "rec"
    anyio.run(_record, directory, 10)
    return directory
