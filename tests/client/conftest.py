"""Fixtures of the client tests: a recorder and a client over it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from client_support import BASE_URL, IMAGE_BASE_URL, KEY, Recorder

from engine.client import MarketClient


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
async def client(recorder: Recorder) -> AsyncIterator[MarketClient]:
    async with MarketClient(
        KEY,
        base_url=BASE_URL,
        image_base_url=IMAGE_BASE_URL,
        transport=recorder.transport,
    ) as market:
        yield market
