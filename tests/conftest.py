"""Shared fixtures. Every async test runs on asyncio and on trio; no test reaches beyond
127.0.0.1 (see ``_netguard.py``)."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator

import pytest
from _netguard import CHILD_ENVIRONMENT, NetworkGuard

from engine import VirtualClock

for _name, _value in CHILD_ENVIRONMENT.items():  # inherited by every child process
    os.environ.setdefault(_name, _value)


@pytest.fixture(scope="session", autouse=True)
def network_guard() -> Iterator[NetworkGuard]:
    """Tests may reach 127.0.0.1 only; see ``_netguard.py``."""
    with NetworkGuard().installed() as guard:
        yield guard


@pytest.fixture(autouse=True)
def _loopback_only(network_guard: NetworkGuard) -> Iterator[None]:
    network_guard.violations.clear()
    yield
    if network_guard.violations:
        tried = ", ".join(network_guard.violations[:5])
        network_guard.violations.clear()
        pytest.fail(f"the test tried to reach beyond 127.0.0.1: {tried}", pytrace=False)


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
