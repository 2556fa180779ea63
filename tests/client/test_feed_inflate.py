"""The feed's frame reader on a compressed session (engine/client/_wsread.py owns the inflate
of incoming data frames) against wsproto's own decoding of the same bytes: the same
messages however the reads cut them, with and without context takeover, messages in
fragments, a ping among them; and what it refuses (a message past the cap, data that does
not inflate, fragments out of order) closes the connection with the code that says why.
Sans I/O, synchronous."""

from __future__ import annotations

import zlib

import pytest
import wsproto.connection
import wsproto.events
from wsproto import ConnectionType
from wsproto.events import BytesMessage, CloseConnection, Ping, Pong, TextMessage
from wsproto.extensions import PerMessageDeflate

from engine.client._wsread import FrameReader, Inflate

LISTING = '42["new",{"item_id":"1","name":"★ StatTrak™ Karambit | Doppler","price":1}]'
Shown = list[tuple[object, ...]]


def deflate(bits: int, takeover: bool, side: str = "client") -> PerMessageDeflate:
    """Either side's permessage-deflate, agreed with these parameters."""
    agreed = f"permessage-deflate; server_max_window_bits={bits}"
    if not takeover:
        agreed += "; server_no_context_takeover"
    extension = PerMessageDeflate()
    if side == "server":
        extension.accept(agreed)
    else:
        extension.finalize(agreed)
    assert extension.enabled()
    return extension


def server_bytes(bits: int, takeover: bool, *events: wsproto.events.Event) -> bytes:
    """What a server that compresses with these parameters writes for ``events``."""
    server = wsproto.connection.Connection(
        ConnectionType.SERVER, extensions=[deflate(bits, takeover, "server")]
    )
    return b"".join(server.send(event) for event in events)


def shown(events: list[str | wsproto.events.Event]) -> Shown:
    """What the feed client reads of the events: whole messages (wsproto's fragments
    joined, as the session joins them), pings and pongs, a close's code."""
    out: Shown = []
    partial: str | bytes | None = None
    for event in events:
        if isinstance(event, str):
            out.append(("text", event))
        elif isinstance(event, TextMessage | BytesMessage):
            data = event.data if partial is None else partial + event.data  # type: ignore[operator]
            if not event.message_finished:
                partial = data
                continue
            partial = None
            out.append(("text" if isinstance(data, str) else "bytes", data))
        elif isinstance(event, CloseConnection):
            out.append(("close", event.code))
        elif isinstance(event, Ping | Pong):
            out.append((type(event).__name__, bytes(event.payload)))
    return out


def by_wsproto(data: bytes, bits: int, takeover: bool) -> Shown:
    client = wsproto.connection.Connection(
        ConnectionType.CLIENT, extensions=[deflate(bits, takeover)]
    )
    client.receive_data(data)
    return shown([*client.events()])


def by_reader(
    data: bytes, bits: int, takeover: bool, step: int, limit: int = 64, cap: int = 1 << 20
) -> tuple[Shown, FrameReader]:
    connection = wsproto.connection.Connection(ConnectionType.CLIENT)
    reader = FrameReader(connection, Inflate(bits, takeover), cap)
    events: list[str | wsproto.events.Event] = []
    for at in range(0, len(data), step):
        reader.feed(data[at : at + step])
        while (messages := reader.messages(limit)) is not None:
            events += messages
    return shown(events), reader


def fragmented(bits: int, takeover: bool, ping: bool = False) -> bytes:
    """A message in fragments between two whole ones (then one in binary), a ping
    written among the fragments when ``ping`` (control frames are never compressed:
    the ping's bytes are the same whatever the compressor did before)."""
    server = wsproto.connection.Connection(
        ConnectionType.SERVER, extensions=[deflate(bits, takeover, "server")]
    )
    return b"".join(
        [
            server.send(TextMessage(LISTING)),
            server.send(TextMessage('42["new",', message_finished=False)),
            server.send(Ping(b"p")) if ping else b"",
            server.send(
                TextMessage('{"item_id":"2","name":"' + "AK-47 " * 40, message_finished=False)
            ),
            server.send(TextMessage('"}]', message_finished=True)),
            server.send(BytesMessage(b"\x00\x01" * 50, message_finished=False)),
            server.send(BytesMessage(b"\x02", message_finished=True)),
            server.send(TextMessage(LISTING)),
        ]
    )


CASES = {
    "events as the feed sends them": lambda b, t: server_bytes(
        b, t, *(TextMessage(LISTING) for _ in range(6))
    ),
    "an empty message": lambda b, t: server_bytes(b, t, TextMessage(""), TextMessage("2")),
    "a long message (16-bit and 64-bit lengths)": lambda b, t: server_bytes(
        b, t, TextMessage(str(list(range(3000)))), TextMessage(str(list(range(30_000))))
    ),
    "binary, ping and pong between texts": lambda b, t: server_bytes(
        b, t, TextMessage("a"), BytesMessage(b"\x00\x01"), Ping(b"1"), Pong(b"2"), TextMessage("a")
    ),
    "messages in fragments": fragmented,
    "a close after events": lambda b, t: server_bytes(
        b, t, TextMessage(LISTING), CloseConnection(1000, "bye")
    ),
}
PARAMETERS = [(15, True), (15, False), (9, True), (12, False)]


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize(("bits", "takeover"), PARAMETERS)
def test_the_reader_inflates_what_wsproto_inflates_however_the_reads_cut_it(
    name: str, bits: int, takeover: bool
) -> None:
    data = CASES[name](bits, takeover)
    expected = by_wsproto(data, bits, takeover)
    assert expected
    assert ("close", 1007) not in expected
    steps = range(1, len(data) + 1) if len(data) <= 400 else [1, 2, 3, 7, 61, 1000, len(data)]
    for step in steps:
        for limit in (1, 64):
            assert by_reader(data, bits, takeover, step, limit)[0] == expected, (step, limit)


@pytest.mark.parametrize(("bits", "takeover"), PARAMETERS)
def test_a_ping_among_the_fragments_of_a_compressed_message_is_answered_in_place(
    bits: int, takeover: bool
) -> None:
    # wsproto 1.3 itself loses the message here (its inflate state is reset by the ping's
    # end, then it reads the next fragment as uncompressed: 1007); the reference is its
    # reading of the same bytes without the ping, with the ping first (the message
    # comes whole once its last fragment is read, after the ping)
    data = fragmented(bits, takeover, ping=True)
    expected = by_wsproto(fragmented(bits, takeover), bits, takeover)
    expected.insert(1, ("Ping", b"p"))
    for step in [*range(1, 40), 100, len(data)]:
        assert by_reader(data, bits, takeover, step)[0] == expected, step


def test_with_context_takeover_later_messages_lean_on_earlier_ones() -> None:
    # the case that needs the one context for the connection: the second message is a
    # back-reference to the first and inflates only with its window
    data = server_bytes(15, True, TextMessage(LISTING), TextMessage(LISTING))
    alone = server_bytes(15, True, TextMessage(LISTING))
    assert len(data) - len(alone) < len(alone) / 2
    assert by_reader(data, 15, True, 1)[0] == [("text", LISTING)] * 2


def test_uncompressed_messages_in_a_compressed_session_are_read_too() -> None:
    plain = wsproto.connection.Connection(ConnectionType.SERVER)
    data = (
        server_bytes(15, True, TextMessage(LISTING))
        + plain.send(TextMessage("ab", message_finished=False))
        + plain.send(TextMessage("c"))
        + server_bytes(15, False, TextMessage("d"))  # a stream of its own: inflates alone
    )
    assert by_reader(data, 15, True, 5)[0] == [("text", LISTING), ("text", "abc"), ("text", "d")]


def bomb(size: int) -> bytes:
    """A text frame, compressed, of a few hundred bytes that inflates to ``size`` bytes."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    payload = compressor.compress(b"a" * size) + compressor.flush(zlib.Z_SYNC_FLUSH)
    payload = payload[:-4]  # the tail RFC 7692 has the sender take off
    assert len(payload) < 126 + size // 500
    length = len(payload)
    head = bytes([0xC1, length]) if length < 126 else bytes([0xC1, 126]) + length.to_bytes(2)
    return head + payload


@pytest.mark.parametrize(
    ("size", "cap", "expected"),
    [
        (1000, 1000, [("text", "a" * 1000), ("text", "b")]),  # at the cap: read
        (1001, 1000, [("close", 1009)]),  # one byte past it: refused, nothing after
        (10_000_000, 1 << 20, [("close", 1009)]),  # a bomb: never inflated whole
    ],
)
def test_a_message_that_inflates_past_the_cap_closes_with_1009(
    size: int, cap: int, expected: Shown
) -> None:
    data = bomb(size) + server_bytes(15, False, TextMessage("b"))
    for step in (1, 7, len(data)):
        read, reader = by_reader(data, 15, False, step, cap=cap)
        assert read == expected
        assert (reader.failed is not None) is (expected[0][0] == "close")


def test_the_cap_counts_a_message_in_fragments_whole() -> None:
    data = server_bytes(
        15,
        True,
        TextMessage("x" * 600, message_finished=False),
        TextMessage("y" * 600, message_finished=True),
    )
    assert by_reader(data, 15, True, 3, cap=1200)[0] == [("text", "x" * 600 + "y" * 600)]
    assert by_reader(data, 15, True, 3, cap=1199)[0] == [("close", 1009)]


def test_a_frame_longer_than_the_cap_is_refused_before_it_is_buffered() -> None:
    huge = bytes([0xC1, 127]) + (1 << 40).to_bytes(8) + b"\x00" * 10
    assert by_reader(huge, 15, True, 3, cap=1 << 20)[0] == [("close", 1009)]


def compressed_frame(first: int, data: bytes) -> bytes:
    compressor = zlib.compressobj(6, zlib.DEFLATED, -15)
    payload = (compressor.compress(data) + compressor.flush(zlib.Z_SYNC_FLUSH))[:-4]
    return bytes([first, len(payload)]) + payload


REFUSED = {
    "data that does not inflate": bytes([0xC1, 0x05]) + b"\xff" * 5,
    "inflates, but not UTF-8": compressed_frame(0xC1, b"\xc3\x28"),
    "plain, but not UTF-8": bytes([0x81, 0x02, 0xC3, 0x28]),
    "a continuation outside a message": compressed_frame(0x80, b"a"),
    "RSV1 on a continuation": compressed_frame(0x41, b"a") + compressed_frame(0xC0, b"b"),
    "a new message before the last ended": compressed_frame(0x41, b"a")
    + compressed_frame(0xC1, b"b"),
    "RSV2 on a data frame": bytes([0xA1, 0x01]) + b"a",
    "a masked frame": bytes([0x81, 0x81]) + b"\x01\x02\x03\x04" + b"\x60",
    "a ping with RSV1": bytes([0xC9, 0x00]),
}


# wsproto 1.3 says 1007 (it inflates the second first frame as a continuation of the
# first message); RFC 6455 (5.4) makes it a protocol error: 1002
OURS = {"a new message before the last ended": 1002}


@pytest.mark.parametrize("name", list(REFUSED))
def test_what_wsproto_refuses_the_reader_refuses_with_the_same_code(name: str) -> None:
    data = server_bytes(15, True, TextMessage(LISTING)) + REFUSED[name]
    expected = by_wsproto(data, 15, True)
    assert expected[0] == ("text", LISTING)
    assert expected[-1][0] == "close"
    if name in OURS:
        expected[-1] = ("close", OURS[name])
    for step in (1, len(data)):
        read, reader = by_reader(data, 15, True, step)
        assert read == expected
        # what the reader refused itself is told to the server; what wsproto refused
        # (a header) wsproto closes as before
        assert reader.failed is None or reader.failed.code == expected[-1][1]


def finished_frame(data: bytes, after: bytes = b"") -> bytes:
    """A compressed text frame whose deflate stream ends with a final block (RFC 7692
    7.2.3.3 lets a sender end a message so), then ``after``."""
    compressor = zlib.compressobj(6, zlib.DEFLATED, -15)
    payload = compressor.compress(data) + compressor.flush() + after
    return bytes([0xC1, len(payload)]) + payload


@pytest.mark.parametrize("takeover", [True, False])
def test_a_message_ended_by_a_final_deflate_block_is_read_and_the_next_starts_afresh(
    takeover: bool,
) -> None:
    # (wsproto 1.3 reads the first, then inflates nothing of the next ones: a context
    # that has ended takes no more data, silently)
    data = finished_frame(b"one") + finished_frame(b"two") + compressed_frame(0xC1, b"three")
    for step in (1, 4, len(data)):
        read, reader = by_reader(data, 15, takeover, step)
        assert read == [("text", "one"), ("text", "two"), ("text", "three")]
        assert reader.failed is None


def test_data_after_the_end_of_a_deflate_stream_closes_with_1007() -> None:
    read, reader = by_reader(finished_frame(b"one", after=b"\x00\x01"), 15, True, 1)
    assert read == [("close", 1007)]
    assert reader.failed is not None
