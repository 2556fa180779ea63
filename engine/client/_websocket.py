"""The feed's websocket: permessage-deflate (RFC 7692) when the server agrees, and a count
of the bytes that cross the socket.

httpx-ws opens the websocket (the upgrade request on httpx, the session's reader task, the
close) but builds its wsproto connection without extensions. The feed is ~430 JSON frames a
second that repeat the same keys and names, which a deflate context kept across messages
shrinks several times (``bench/bench_detection.py`` measures it), so:

- :func:`offer_headers` is the ``Sec-WebSocket-Extensions`` offer added to the upgrade
  request (``compression="off"``: none);
- :class:`FeedSession` is httpx-ws's session with two changes made before it reads a
  byte: when the server's 101 answer accepts ``permessage-deflate``, its wsproto
  connection is rebuilt with wsproto's :class:`~wsproto.extensions.PerMessageDeflate`
  finalized with the parameters the server accepted (no answer: plain frames, as before);
  and its network stream counts the bytes read and written (:class:`WireMeter`), so the
  traffic figures are what the socket carried, compressed or not.

A server that accepts an extension that was not offered, or parameters that cannot be
used, fails the handshake (:class:`FeedHandshakeError`), as RFC 6455 (section 9.1) asks.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from typing import Any, Final, Literal

import httpcore
import httpx
import wsproto
import wsproto.connection
import wsproto.extensions
import wsproto.utilities
from httpx_ws import AsyncWebSocketSession, HTTPXWSException
from wsproto.handshake import client_extensions_handshake

from .._errors import ConfigError

__all__ = [
    "COMPRESSION_MODES",
    "FeedHandshakeError",
    "FeedSession",
    "WireMeter",
    "check_compression",
    "offer_headers",
]

Compression = Literal["auto", "off"]
COMPRESSION_MODES: Final[tuple[Compression, ...]] = ("auto", "off")
"""``auto``: offer permessage-deflate, use it if the server accepts; ``off``: never offer."""
EXTENSIONS_HEADER: Final = "sec-websocket-extensions"


class FeedHandshakeError(HTTPXWSException):
    """The server's upgrade answer cannot be used (an extension that was not offered, or
    parameters out of range): the connection is refused, the client retries later."""


def check_compression(value: object) -> Compression:
    """``value`` as a compression mode, or a :class:`ConfigError` naming the field."""
    if value == "auto" or value == "off":
        return value
    raise ConfigError(
        f"expected one of {', '.join(COMPRESSION_MODES)}, got {value!r}",
        field="feed_compression",
    )


def offer_headers(compression: Compression) -> dict[str, str]:
    """The headers that offer compression in the upgrade request (none when ``off``)."""
    if compression == "off":
        return {}
    offer = wsproto.extensions.PerMessageDeflate().offer()
    assert isinstance(offer, str)  # permessage-deflate always has parameters
    return {EXTENSIONS_HEADER: f"{wsproto.extensions.PerMessageDeflate.name}; {offer}"}


def negotiated(response: httpx.Response | None) -> wsproto.extensions.PerMessageDeflate | None:
    """What the server's 101 answer agreed to: a finalized permessage-deflate, or ``None``
    (plain frames). Raises :class:`FeedHandshakeError` for an answer that breaks the
    handshake."""
    if response is None:
        return None
    accepts = [
        part.strip()
        for value in response.headers.get_list(EXTENSIONS_HEADER)
        for part in value.split(",")
        if part.strip()
    ]
    if not accepts:
        return None
    answer = ", ".join(accepts)[:200]
    if EXTENSIONS_HEADER not in response.request.headers:
        raise FeedHandshakeError(f"the server accepted extensions never offered: {answer!r}")
    deflate = wsproto.extensions.PerMessageDeflate()
    try:
        agreed = client_extensions_handshake(accepts, [deflate])
    except (wsproto.utilities.RemoteProtocolError, ValueError, IndexError) as exc:
        raise FeedHandshakeError(
            f"the server answered the upgrade with extensions it cannot use ({answer!r}): {exc}"
        ) from None
    if len(agreed) != 1:  # the same extension accepted twice
        raise FeedHandshakeError(f"the server accepted {len(agreed)} permessage-deflate")
    return deflate


@dataclass(slots=True)
class WireMeter:
    """Bytes that crossed one connection's socket after the upgrade (websocket frames as
    sent: headers, masks, compressed payloads)."""

    received: int = 0
    sent: int = 0


class _CountingStream(httpcore.AsyncNetworkStream):
    """A network stream that counts what it reads and writes into a :class:`WireMeter`."""

    def __init__(self, inner: httpcore.AsyncNetworkStream, meter: WireMeter) -> None:
        self._inner = inner
        self._meter = meter

    # httpcore's interface names these ``timeout``: the signature is not ours to choose
    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:  # noqa: ASYNC109
        data = await self._inner.read(max_bytes, timeout)
        self._meter.received += len(data)
        return data

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:  # noqa: ASYNC109
        await self._inner.write(buffer, timeout)
        self._meter.sent += len(buffer)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,  # noqa: ASYNC109
    ) -> httpcore.AsyncNetworkStream:  # pragma: no cover - a websocket never starts TLS
        raise NotImplementedError("TLS starts before the upgrade")

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class FeedSession(AsyncWebSocketSession):
    """httpx-ws's session, run with the compression the server accepted and its bytes
    counted (see the module docstring). ``deflate`` tells whether frames are compressed;
    ``wire`` counts the socket's bytes."""

    def __init__(
        self,
        stream: httpcore.AsyncNetworkStream,
        *,
        response: httpx.Response | None = None,
        **options: Any,
    ) -> None:
        super().__init__(stream, response=response, **options)
        deflate = negotiated(response)
        self.extension: wsproto.extensions.PerMessageDeflate | None = deflate
        """The permessage-deflate agreed (its parameters say how the server compresses)."""
        self.wire = WireMeter()
        # Both before the session's reader starts (in ``__aenter__``): nothing was read yet.
        self.stream = _CountingStream(stream, self.wire)
        if deflate is not None:
            self.connection = wsproto.connection.Connection(
                wsproto.ConnectionType.CLIENT, extensions=[deflate]
            )

    @property
    def deflate(self) -> bool:
        """Whether the session's frames are compressed (permessage-deflate agreed)."""
        return self.extension is not None
