"""The suite's network guard refuses everything but loopback, however it is asked."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator

import pytest
from _netguard import NetworkGuard, is_local

FAR = ("192.0.2.1", 53)  # TEST-NET-1: documentation only, never routed


@pytest.fixture
def guard(network_guard: NetworkGuard) -> Iterator[NetworkGuard]:
    yield network_guard
    network_guard.violations.clear()  # the refusals below are this test's point


@pytest.mark.parametrize(
    ("host", "local"),
    [
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("::1", True),
        ("::ffff:127.0.0.1", True),
        ("localhost", True),
        ("8.8.8.8", False),
        ("169.254.169.254", False),
        ("192.168.1.10", False),
        ("example.com", False),
        ("::ffff:8.8.8.8", False),
    ],
)
def test_only_loopback_is_local(host: str, local: bool) -> None:
    assert is_local(host) is local


def _tcp(do: Callable[[socket.socket], object]) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        do(sock)


def _udp(do: Callable[[socket.socket], object]) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        do(sock)


@pytest.mark.parametrize(
    "attempt",
    [
        pytest.param(lambda: _tcp(lambda s: s.connect(FAR)), id="connect"),
        pytest.param(lambda: _tcp(lambda s: s.connect_ex(FAR)), id="connect_ex"),
        pytest.param(lambda: _udp(lambda s: s.connect(FAR)), id="udp-connect"),
        pytest.param(lambda: _udp(lambda s: s.sendto(b"x", FAR)), id="sendto"),
        pytest.param(lambda: _udp(lambda s: s.sendto(b"x", 0, FAR)), id="sendto-flags"),
        pytest.param(lambda: socket.getaddrinfo("example.com", 80), id="dns"),
        pytest.param(lambda: socket.create_connection(FAR, timeout=1), id="create_connection"),
    ],
)
def test_reaching_beyond_loopback_is_refused_and_recorded(
    guard: NetworkGuard, attempt: Callable[[], object]
) -> None:
    with pytest.raises(OSError, match="network guard"):
        attempt()
    assert guard.violations


def test_loopback_goes_through(guard: NetworkGuard) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        with socket.create_connection(server.getsockname(), timeout=5):
            pass
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        udp.sendto(b"x", ("127.0.0.1", 9))
    assert socket.getaddrinfo("localhost", 80)
    assert guard.violations == []
