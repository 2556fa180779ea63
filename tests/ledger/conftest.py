"""Fixtures of the ledger tests: a ledger on a temporary file, on every driver."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import cast

import pytest

from engine import VirtualClock
from engine.ledger import Driver, Ledger


@pytest.fixture(params=["auto", "thread"])
def driver(request: pytest.FixtureRequest) -> Driver:
    """``auto`` is aiosqlite under asyncio and the thread connection under trio; ``thread``
    runs the thread connection under asyncio too."""
    return cast(Driver, request.param)


@pytest.fixture
def ledger_path(tmp_path: Path) -> Path:
    return tmp_path / "ledger.sqlite"


@pytest.fixture
async def ledger(ledger_path: Path, clock: VirtualClock, driver: Driver) -> AsyncIterator[Ledger]:
    async with await Ledger.open(ledger_path, clock=clock, driver=driver) as opened:
        yield opened
