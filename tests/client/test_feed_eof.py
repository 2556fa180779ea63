"""A feed server that goes away without a goodbye: its process dies or the network drops,
and the socket just ends (no websocket close frame; hypercorn, which the other feed tests
use, always sends one). The client must treat it as a lost connection and come back, as
for any other; before, the end of the stream escaped the reader and took the whole feed
down for the rest of the run (found from outside: `snipe sandbox` killed under `snipe
run`, and the feed stayed "unavailable" after the sandbox was back)."""

from __future__ import annotations

import base64
import hashlib

import anyio
from anyio.abc import SocketStream
from feed_support import OPEN, until

from engine import VirtualClock
from engine.client import FeedClient, FeedConnected, FeedDisconnected, FeedEvent

_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def _text_frame(text: str) -> bytes:
    data = text.encode()
    assert len(data) < 126
    return bytes([0x81, len(data)]) + data  # a server's frames are not masked


def _client_frames(buffer: bytes) -> int:
    """How many whole (small, masked) frames the client has sent in ``buffer``."""
    count, at = 0, 0
    while at + 2 <= len(buffer):
        size = 2 + 4 + (buffer[at + 1] & 0x7F)
        if at + size > len(buffer):
            break
        count, at = count + 1, at + size
    return count


class EndingFeed:
    """Speaks the handshake, joins the namespace, takes the client's subscription, then
    ends the TCP stream (FIN, no close frame). Counts the connections."""

    def __init__(self) -> None:
        self.connections = 0

    async def __call__(self, stream: SocketStream) -> None:
        async with stream:
            self.connections += 1
            request = b""
            while b"\r\n\r\n" not in request:
                request += await stream.receive()
            head, _, rest = request.partition(b"\r\n\r\n")
            key = next(
                line.split(b":", 1)[1].strip()
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"sec-websocket-key:")
            )
            accept = base64.b64encode(hashlib.sha1(key + _GUID).digest())
            await stream.send(
                b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                b"Connection: Upgrade\r\nSec-WebSocket-Accept: " + accept + b"\r\n\r\n"
            )
            await stream.send(_text_frame(OPEN.replace("{n}", str(self.connections))))
            while _client_frames(rest) < 1:  # "40": join the namespace
                rest += await stream.receive()
            await stream.send(_text_frame('40{"sid":"ns"}'))
            while _client_frames(rest) < 2:  # the subscription
                rest += await stream.receive()
        # leaving `async with stream` closes the socket: the client reads the end of it


async def test_a_stream_that_just_ends_is_a_lost_connection_and_the_feed_comes_back(
    clock: VirtualClock,
) -> None:
    server = EndingFeed()
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, server)
        feed = FeedClient(f"http://127.0.0.1:{port}", games=["csgo"], clock=clock)
        async with feed:
            events = aiter(feed)

            async def next_event() -> FeedEvent:
                with anyio.fail_after(5):
                    return await anext(events)

            first = await next_event()
            assert isinstance(first, FeedConnected)
            gone = await next_event()
            assert isinstance(gone, FeedDisconnected)
            assert gone.reason == "network"
            await until(lambda: clock.next_deadline() is not None, "the backoff sleep")
            clock.advance(3.0)
            back = await next_event()
            assert isinstance(back, FeedConnected)
            assert back.generation == 2
            assert feed.health().attempts == 1
        tg.cancel_scope.cancel()
    assert server.connections >= 2
