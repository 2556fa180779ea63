"""permessage-deflate on the feed's websocket: offered by default, used only when the
server accepts it, events read the same either way, fewer bytes on the socket; a server
that declines gets plain frames, one that answers with what was not offered is refused,
and ``compression="off"`` offers nothing."""

from __future__ import annotations

import json
import zlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio
import anyio.abc
import pytest
import wsproto
import wsproto.events
from feed_support import OPEN, FakeFeed, served, until
from wsproto.extensions import Extension, PerMessageDeflate

from engine import ConfigError, VirtualClock
from engine.client import (
    Backoff,
    FeedClient,
    FeedConnected,
    FeedDisconnected,
    FeedEvent,
    FeedListingEvent,
    FeedRemovalEvent,
)

KEY = "FEED-KEY-0123456789abcdef"


def listing_frame(n: int) -> str:
    """A ``new`` event as the feed writes them: the same keys every time, other values."""
    return "42" + json.dumps(
        [
            "new",
            {
                "auto": n % 7 == 0, "float": round(0.001 * (n % 997), 6), "game": "csgo",
                "item_id": str(53_862_560_251 + n), "name": f"AK-47 | Redline #{n % 40}",
                "paint_index": n % 1000, "phase": "", "price": 10_000 + 37 * n,
                "platform_price": 12_000 + 41 * n, "sticker_names": None,
                "platform_id": str(76_561_198_000_000_000 + n),
            },
        ],
        separators=(",", ":"),
    )  # fmt: skip


FRAMES = [listing_frame(n) for n in range(200)] + [
    '42["removed",{"game":"csgo","item_id":"53862560251","name":"x","price":199000}]'
]


async def events_of(feed: FeedClient, count: int) -> list[FeedEvent]:
    with anyio.fail_after(5):
        return [await anext(aiter(feed)) for _ in range(count)]


def readings(events: list[FeedEvent]) -> list[object]:
    """What a consumer reads of each event (the arrival time and generation aside)."""
    return [
        (e.kind, e.listing)
        if isinstance(e, FeedListingEvent)
        else (e.removal if isinstance(e, FeedRemovalEvent) else type(e).__name__)
        for e in events
    ]


async def test_deflate_is_negotiated_and_the_events_read_the_same_in_fewer_bytes(
    clock: VirtualClock,
) -> None:
    server = FakeFeed()  # on hypercorn, whose wsproto accepts permessage-deflate
    read: dict[str, list[object]] = {}
    wire: dict[str, int] = {}
    async with served(server) as url:
        for number, mode in enumerate(("auto", "off"), start=1):
            async with FeedClient(url, games=["csgo"], clock=clock, compression=mode) as feed:
                assert isinstance((await events_of(feed, 1))[0], FeedConnected)
                conn = server.connections[number - 1]
                await until(lambda: feed.health().subscribed == ("csgo",), "subscribed")
                before = feed.health().wire_bytes_received
                await conn.send(*FRAMES)
                read[mode] = readings(await events_of(feed, len(FRAMES)))
                health = feed.health()
                wire[mode] = health.wire_bytes_received - before
                assert health.compressed is (mode == "auto")
                assert health.set_aside == {}
                # the payload count is the messages' text, the same either way
                assert health.bytes_received > sum(len(f.encode()) for f in FRAMES)
    offers = [conn.headers.get("sec-websocket-extensions") for conn in server.connections]
    assert str(offers[0]).startswith("permessage-deflate")
    assert offers[1] is None
    assert read["auto"] == read["off"]
    assert len(read["auto"]) == len(FRAMES)
    payload = sum(len(f.encode()) for f in FRAMES)
    assert wire["off"] >= payload  # plain frames: the text plus each frame's header
    assert wire["auto"] < wire["off"] / 2  # listings repeat keys and names: deflate pays


@dataclass
class RawFeed:
    """A websocket server of the test's own on wsproto, which answers the upgrade with
    ``answer`` as its ``Sec-WebSocket-Extensions`` (``None``: declines, plain frames),
    then speaks the feed's side: open, namespace, ``subscribed``, then ``frames``."""

    answer: str | None
    frames: list[str]
    offers: list[list[str]] = field(default_factory=list)
    deflate: bool = False
    """Accept the offer with wsproto's own negotiation (``answer`` is then unused)."""
    garbage: bytes = b""
    """Bytes written as they are after ``frames`` (a frame of the test's making)."""
    closes: list[int] = field(default_factory=list)
    """The codes of the client's close frames."""

    async def handle(self, stream: anyio.abc.ByteStream) -> None:
        ws = wsproto.WSConnection(wsproto.ConnectionType.SERVER)
        async with stream:
            while True:
                try:
                    data = await stream.receive()
                except (anyio.EndOfStream, anyio.BrokenResourceError):
                    return
                ws.receive_data(data)
                for event in ws.events():
                    out = self._answer(ws, event)
                    if out is None:
                        return
                    for message in out:
                        await stream.send(message)

    def _answer(self, ws: wsproto.WSConnection, event: wsproto.events.Event) -> list[bytes] | None:
        if isinstance(event, wsproto.events.Request):
            self.offers.append([str(offer) for offer in event.extensions])
            extra = (
                [] if self.answer is None else [(b"sec-websocket-extensions", self.answer.encode())]
            )
            if self.deflate:
                extensions: list[Extension] = [PerMessageDeflate()]
                accept = ws.send(wsproto.events.AcceptConnection(extensions=extensions))
            else:
                accept = ws.send(wsproto.events.AcceptConnection(extra_headers=extra))
            return [accept, ws.send(wsproto.events.TextMessage(OPEN.replace("{n}", "1")))]
        if isinstance(event, wsproto.events.TextMessage):
            if event.data == "40":
                return [ws.send(wsproto.events.TextMessage('40{"sid":"ns-1"}'))]
            if event.data.startswith('42["sub"'):
                replies = ['42["subscribed",{"name":"csgo"}]', *self.frames]
                sent = [ws.send(wsproto.events.TextMessage(r)) for r in replies]
                return [*sent, self.garbage] if self.garbage else sent
            return []
        if isinstance(event, wsproto.events.CloseConnection):
            self.closes.append(event.code)
            return None
        return []


@asynccontextmanager
async def raw_served(feed: RawFeed) -> AsyncIterator[str]:
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, feed.handle)
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            tg.cancel_scope.cancel()


async def test_a_server_that_declines_gets_plain_frames(clock: VirtualClock) -> None:
    server = RawFeed(answer=None, frames=FRAMES[:3])
    async with raw_served(server) as url, FeedClient(url, games=["csgo"], clock=clock) as feed:
        connected, *events = await events_of(feed, 4)
        assert isinstance(connected, FeedConnected)
        assert [e.listing.item_id for e in events if isinstance(e, FeedListingEvent)] == [
            "53862560251", "53862560252", "53862560253"
        ]  # fmt: skip
        health = feed.health()
        assert health.compressed is False
        assert health.wire_bytes_received > sum(len(f) for f in FRAMES[:3])
    # it was offered, and declined
    assert [o[0].startswith("permessage-deflate") for o in server.offers] == [True]


def bomb(size: int) -> bytes:
    """A compressed text frame of a few KB that inflates to ``size`` bytes."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    payload = (compressor.compress(b"a" * size) + compressor.flush(zlib.Z_SYNC_FLUSH))[:-4]
    return bytes([0xC1, 126]) + len(payload).to_bytes(2, "big") + payload


@pytest.mark.parametrize(
    ("broken", "code"),
    [
        # FIN + RSV1 (compressed) + text, 5 bytes of payload that are not a deflate stream
        (bytes([0xC1, 0x05]) + b"\xff\xff\xff\xff\xff", 1007),  # invalid frame payload data
        (bomb(20_000_000), 1009),  # message too big: ~20 KB that inflate to 20 MB
    ],
)
async def test_a_compressed_frame_that_does_not_inflate_ends_the_connection_not_the_client(
    clock: VirtualClock, broken: bytes, code: int
) -> None:
    server = RawFeed(answer=None, frames=FRAMES[:2], deflate=True, garbage=broken)
    fast = Backoff(initial=0.5, cap=1.0)
    async with (
        raw_served(server) as url,
        FeedClient(url, games=["csgo"], clock=clock, backoff=fast) as feed,
    ):
        connected, first, second = await events_of(feed, 3)
        assert isinstance(connected, FeedConnected)
        assert feed.health().compressed is True
        assert [e.listing.item_id for e in (first, second) if isinstance(e, FeedListingEvent)] == [
            "53862560251", "53862560252"
        ]  # fmt: skip
        gone = (await events_of(feed, 1))[0]
        assert isinstance(gone, FeedDisconnected)
        assert gone.reason == "closed"
        assert f"code {code}" in gone.detail
        assert feed.health().disconnects == {"closed": 1}
        await until(lambda: server.closes == [code], "the server told why")
        await until(lambda: clock.next_deadline() is not None, "the backoff")
        clock.advance(1.0)
        again = (await events_of(feed, 1))[0]
        assert isinstance(again, FeedConnected)
        assert again.generation == 2


@pytest.mark.parametrize(
    ("answer", "compression"),
    [
        ("x-webkit-deflate-frame", "auto"),  # an extension never offered
        ("permessage-deflate; server_max_window_bits=99", "auto"),  # out of range
        ("permessage-deflate; client_max_window_bits", "auto"),  # a value missing
        ("permessage-deflate", "off"),  # accepted when nothing was offered
    ],
)
async def test_an_answer_that_breaks_the_handshake_is_refused_and_retried(
    clock: VirtualClock, caplog: pytest.LogCaptureFixture, answer: str, compression: str
) -> None:
    server = RawFeed(answer=answer, frames=FRAMES[:1])
    fast = Backoff(initial=0.5, cap=1.0)
    async with (
        raw_served(server) as url,
        FeedClient(
            url, games=["csgo"], clock=clock, api_key=KEY, backoff=fast, compression=compression
        ) as feed,
    ):
        await until(lambda: feed.health().attempts == 1, "the refusal")
        health = feed.health()
        assert health.disconnects == {"refused": 1}
        assert health.generation == 0  # never counted as connected
        await until(lambda: clock.next_deadline() is not None, "the backoff")
        clock.advance(1.0)
        await until(lambda: feed.health().attempts == 2, "the retry")
    assert "extensions" in caplog.text
    assert KEY not in caplog.text


@pytest.mark.parametrize("value", ["gzip", "on", "", None, True])
def test_an_unknown_compression_mode_is_refused_naming_the_setting(value: object) -> None:
    with pytest.raises(ConfigError, match="feed_compression") as caught:
        FeedClient("https://feed.example", games=["csgo"], compression=value)  # type: ignore[arg-type]
    assert "auto, off" in str(caught.value)


def plain_frame(first: int, payload: bytes) -> bytes:
    """A server's (unmasked) frame: ``first`` is FIN, RSV and opcode."""
    size = len(payload)
    if size < 126:
        return bytes([first, size]) + payload
    if size < 1 << 16:
        return bytes([first, 126]) + size.to_bytes(2, "big") + payload
    return bytes([first, 127]) + size.to_bytes(8, "big") + payload


def in_fragments(text: str, parts: int) -> bytes:
    """A plain text message in ``parts`` frames (text, continuations, the last with FIN)."""
    data = text.encode()
    cut = -(-len(data) // parts)
    pieces = [data[at : at + cut] for at in range(0, len(data), cut)]
    return b"".join(
        plain_frame((0x80 if n == len(pieces) - 1 else 0) | (0x01 if n == 0 else 0x00), piece)
        for n, piece in enumerate(pieces)
    )


NOTICE = '42["notice","' + "n" * 99_985 + '"]'  # a 100 KB message, in 5 fragments


@pytest.mark.parametrize(("cap", "read"), [(64 << 10, False), (128 << 10, True)])
async def test_a_plain_message_in_fragments_past_the_cap_ends_the_connection(
    clock: VirtualClock, cap: int, read: bool
) -> None:
    # a plain session (the server declines compression) joins fragments up to the cap:
    # past it the connection closes with 1009, the server told why, the client reconnects
    assert len(NOTICE) == 100_000
    after = plain_frame(0x81, FRAMES[1].encode())
    server = RawFeed(answer=None, frames=FRAMES[:1], garbage=in_fragments(NOTICE, 5) + after)
    fast = Backoff(initial=0.5, cap=1.0)
    async with (
        raw_served(server) as url,
        FeedClient(url, games=["csgo"], clock=clock, backoff=fast, max_message=cap) as feed,
    ):
        connected, first = await events_of(feed, 2)
        assert isinstance(connected, FeedConnected)
        assert feed.health().compressed is False
        assert isinstance(first, FeedListingEvent)
        (then,) = await events_of(feed, 1)
        if read:  # the big message read (an event nobody listens to), the next one too
            assert isinstance(then, FeedListingEvent)
            assert then.listing.item_id == "53862560252"
            assert feed.health().disconnects == {}
            return
        assert isinstance(then, FeedDisconnected)
        assert "code 1009" in then.detail
        await until(lambda: server.closes == [1009], "the server told why")
        await until(lambda: clock.next_deadline() is not None, "the backoff")
        clock.advance(1.0)
        (again,) = await events_of(feed, 1)
        assert isinstance(again, FeedConnected)
        assert again.generation == 2


@pytest.mark.parametrize("value", [0, 1000, (64 << 10) - 1, (1 << 30) + 1, True, "1 MiB", None])
def test_a_message_cap_out_of_range_is_refused_naming_the_setting(value: object) -> None:
    with pytest.raises(ConfigError, match="feed_max_message") as caught:
        FeedClient("https://feed.example", games=["csgo"], max_message=value)  # type: ignore[arg-type]
    assert "between 64 KiB and 1 GiB" in str(caught.value)
