"""Shared fixtures. Every async test runs on asyncio and on trio."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from engine import VirtualClock


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def clock() -> VirtualClock:
    return VirtualClock()


@pytest.fixture(autouse=True)
def _isolated_logging() -> Iterator[None]:
    """Commands configure logging for their process (root handlers, the `snipe` and `httpx`
    levels); give every test the configuration it started with."""
    root = logging.getLogger()
    named = [logging.getLogger(name) for name in ("snipe", "httpx")]
    handlers, levels = root.handlers[:], [root.level, *(lg.level for lg in named)]
    yield
    root.handlers[:] = handlers
    for logger, level in zip([root, *named], levels, strict=True):
        logger.setLevel(level)
