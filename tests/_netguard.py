"""The suite's network guard: tests reach 127.0.0.1 (and Unix sockets) only.

Installed for the whole session by ``conftest.py``. Every ``connect``, ``connect_ex``,
``sendto``/``sendmsg`` with an address, and every name lookup of a host other than
``localhost`` is checked; anything else is refused as a firewall would (``PermissionError``
or ``socket.gaierror``, so the code under test fails the way it would offline) AND recorded,
so the test fails even when the code under test swallows the error.

Child processes cannot be guarded from here: ``CHILD_ENVIRONMENT`` is set for them instead,
so the tools they run (Ray) do not phone home.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["CHILD_ENVIRONMENT", "NetworkGuard"]

CHILD_ENVIRONMENT = {
    "RAY_USAGE_STATS_ENABLED": "0",
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",  # Ray binds and finds its address on 127.0.0.1
    "DO_NOT_TRACK": "1",
}

_LOCAL_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


def is_local(host: object) -> bool:
    """Is ``host`` (an address or a name) this machine's loopback?"""
    if host is None or host == "":
        return True  # a passive lookup (bind to any) or the default: no traffic leaves
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    if not isinstance(host, str):
        return False
    if host.lower() in _LOCAL_NAMES:
        return True
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback


class NetworkGuard:
    """Patches ``socket`` for the session; ``violations`` lists what was refused."""

    def __init__(self) -> None:
        self.violations: list[str] = []
        self._saved: list[tuple[object, str, Any]] = []

    def _refuse(self, what: str) -> None:
        self.violations.append(what)

    def _allowed(self, sock: socket.socket, address: object) -> bool:
        if getattr(socket, "AF_UNIX", None) is not None and sock.family == socket.AF_UNIX:
            return True
        if isinstance(address, tuple) and address:
            return is_local(address[0])
        return False

    def _wrap_connect(self, original: Callable[..., Any], name: str) -> Callable[..., Any]:
        guard = self

        def connect(sock: socket.socket, address: Any) -> Any:
            if not guard._allowed(sock, address):
                guard._refuse(f"{name}{address!r}")
                raise PermissionError(f"network guard: tests may reach 127.0.0.1 only: {address!r}")
            return original(sock, address)

        return connect

    def _wrap_sendto(self, original: Callable[..., Any]) -> Callable[..., Any]:
        guard = self

        def sendto(sock: socket.socket, data: Any, *args: Any) -> Any:
            address = args[-1] if args else None
            if not guard._allowed(sock, address):
                guard._refuse(f"sendto{address!r}")
                raise PermissionError(f"network guard: tests may reach 127.0.0.1 only: {address!r}")
            return original(sock, data, *args)

        return sendto

    def _wrap_sendmsg(self, original: Callable[..., Any]) -> Callable[..., Any]:
        guard = self

        def sendmsg(sock: socket.socket, buffers: Any, *args: Any) -> Any:
            address = args[2] if len(args) >= 3 else None
            if address is not None and not guard._allowed(sock, address):
                guard._refuse(f"sendmsg{address!r}")
                raise PermissionError(f"network guard: tests may reach 127.0.0.1 only: {address!r}")
            return original(sock, buffers, *args)

        return sendmsg

    def _wrap_getaddrinfo(self, original: Callable[..., Any]) -> Callable[..., Any]:
        guard = self

        def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
            if not is_local(host):
                guard._refuse(f"getaddrinfo({host!r})")
                raise socket.gaierror(
                    socket.EAI_NONAME, f"network guard: no name lookups in tests ({host!r})"
                )
            return original(host, *args, **kwargs)

        return getaddrinfo

    def _patch(self, owner: object, name: str, replacement: Any) -> None:
        self._saved.append((owner, name, getattr(owner, name)))
        setattr(owner, name, replacement)

    @contextmanager
    def installed(self) -> Iterator[NetworkGuard]:
        cls = socket.socket
        self._patch(cls, "connect", self._wrap_connect(cls.connect, "connect"))
        self._patch(cls, "connect_ex", self._wrap_connect(cls.connect_ex, "connect_ex"))
        self._patch(cls, "sendto", self._wrap_sendto(cls.sendto))
        if hasattr(cls, "sendmsg"):
            self._patch(cls, "sendmsg", self._wrap_sendmsg(cls.sendmsg))
        self._patch(socket, "getaddrinfo", self._wrap_getaddrinfo(socket.getaddrinfo))
        try:
            yield self
        finally:
            for owner, name, original in reversed(self._saved):
                setattr(owner, name, original)
            self._saved.clear()
