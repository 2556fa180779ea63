"""The feed's websocket frame reader (engine/client/_wsread.py) against wsproto's own parser:
the same events for the same bytes, however the reads cut them; and the message cap a
plain session keeps too (wsproto keeps none). Sans I/O, synchronous."""

from __future__ import annotations

import pytest
import wsproto.connection
import wsproto.events
from wsproto import ConnectionType
from wsproto.events import BytesMessage, CloseConnection, Ping, Pong, TextMessage

from engine.client import _feed
from engine.client._wsread import (
    MAX_MESSAGE,
    BatchingSession,
    FrameReader,
    batching_available,
    session_class,
)

LISTING = '42["new",{"item_id":"1","name":"★ StatTrak™ Karambit | Doppler","price":1}]'


def server_bytes(*events: wsproto.events.Event) -> bytes:
    server = wsproto.connection.Connection(ConnectionType.SERVER)
    return b"".join(server.send(event) for event in events)


def shown(events: list[str | wsproto.events.Event]) -> list[tuple[object, ...]]:
    """What a reader of the events can tell apart (a text message read by the reader
    comes as its ``str``: a finished text message)."""
    out: list[tuple[object, ...]] = []
    for event in events:
        if isinstance(event, str):
            out.append(("TextMessage", event, True))
        elif isinstance(event, TextMessage | BytesMessage):
            out.append((type(event).__name__, event.data, event.message_finished))
        elif isinstance(event, CloseConnection):
            out.append(("close", event.code))
        elif isinstance(event, Ping | Pong):
            out.append((type(event).__name__, bytes(event.payload)))
        else:
            out.append((type(event).__name__,))
    return out


def by_wsproto(data: bytes) -> list[tuple[object, ...]]:
    client = wsproto.connection.Connection(ConnectionType.CLIENT)
    client.receive_data(data)
    return shown([*client.events()])


def by_reader(
    data: bytes, step: int, limit: int, cap: int = MAX_MESSAGE
) -> list[tuple[object, ...]]:
    reader = FrameReader(wsproto.connection.Connection(ConnectionType.CLIENT), None, cap)
    events: list[str | wsproto.events.Event] = []
    for at in range(0, len(data), step):
        reader.feed(data[at : at + step])
        while (messages := reader.messages(limit)) is not None:
            events += messages
    return shown(events)


def masked_text(payload: bytes) -> bytes:
    """A text frame masked (a server must not): wsproto closes with a protocol error."""
    mask = b"\x01\x02\x03\x04"
    body = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    return bytes([0x81, 0x80 | len(payload)]) + mask + body


FRAGMENTED = server_bytes(
    TextMessage('42["new",', message_finished=False),
    Ping(b"p"),
    TextMessage('{"item_id":"2"', message_finished=False),
    TextMessage("}]", message_finished=True),
)

CASES = {
    "a short text frame": server_bytes(TextMessage("2")),
    "events as the feed sends them": server_bytes(*(TextMessage(LISTING) for _ in range(5))),
    "an empty text frame": server_bytes(TextMessage("")),
    "a 16-bit length": server_bytes(TextMessage("x" * 300)),
    "a 64-bit length": server_bytes(TextMessage("y" * 70_000), TextMessage("3")),
    "binary between texts": server_bytes(
        TextMessage("a"), BytesMessage(b"\x00\x01"), TextMessage("b")
    ),
    "ping and pong between texts": server_bytes(
        TextMessage("a"), Ping(b"1"), Pong(b"2"), TextMessage("b")
    ),
    "a message in fragments, a ping among them": FRAGMENTED + server_bytes(TextMessage("z")),
    "a close after events": server_bytes(TextMessage("a"), CloseConnection(1000, "bye")),
    "invalid UTF-8": bytes([0x81, 0x02, 0xC3, 0x28]),
    "a masked frame": masked_text(b"hello"),
    "a reserved bit set": bytes([0xC1, 0x01]) + b"a",
}


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize(
    ("step", "limit"), [(1, 64), (2, 64), (3, 1), (7, 2), (64, 64), (10**6, 1), (10**6, 64)]
)
def test_the_reader_tells_what_wsproto_tells(name: str, step: int, limit: int) -> None:
    data = CASES[name]
    assert by_reader(data, step, limit) == by_wsproto(data)


def test_a_frame_cut_by_a_read_waits_for_the_rest() -> None:
    reader = FrameReader(wsproto.connection.Connection(ConnectionType.CLIENT))
    data = server_bytes(TextMessage(LISTING), TextMessage("2"))
    cut = len(data) // 3
    reader.feed(data[:cut])
    assert reader.messages(64) is None
    reader.feed(data[cut:])
    assert reader.messages(64) == [LISTING, "2"]
    assert reader.messages(64) is None


def test_a_read_full_of_frames_is_handed_over_a_few_frames_at_a_time() -> None:
    reader = FrameReader(wsproto.connection.Connection(ConnectionType.CLIENT))
    reader.feed(server_bytes(*(TextMessage(str(n)) for n in range(10)), Ping(b"p")))
    taken = []
    while (messages := reader.messages(4)) is not None:
        assert len(messages) <= 4
        taken.append(messages)
    # four frames a list: the last holds two texts and the ping (an event of wsproto's)
    assert [len(m) for m in taken] == [4, 4, 3]
    assert [m for batch in taken for m in batch if isinstance(m, str)] == [
        str(n) for n in range(10)
    ]
    assert isinstance(taken[-1][-1], Ping)


def test_the_installed_httpx_ws_is_the_one_the_batching_session_was_written_for() -> None:
    # Were it not, the feed client would fall back to httpx-ws's own session (correct, a
    # tenth of the speed in a burst): this says so when an upgrade changes its internals.
    assert batching_available()
    assert _feed._SESSION is BatchingSession


def fragments(*parts: str, ping_after: int | None = None) -> bytes:
    """A text message sent in ``parts``, a ping after the part ``ping_after``, then "z"."""
    events: list[wsproto.events.Event] = []
    for n, part in enumerate(parts):
        events.append(TextMessage(part, message_finished=n == len(parts) - 1))
        if n == ping_after:
            events.append(Ping(b"p"))
    return server_bytes(*events, TextMessage("z"))


def joined(events: list[tuple[object, ...]]) -> list[tuple[object, ...]]:
    """Text fragments joined into their message, as the session joins them."""
    out: list[tuple[object, ...]] = []
    partial = ""
    for event in events:
        if event[0] == "TextMessage":
            partial += str(event[1])
            if event[2]:
                out.append(("text", partial))
                partial = ""
        else:
            out.append(event)
    return out


@pytest.mark.parametrize(
    ("parts", "cap", "expected"),
    [
        # 3 x 400 bytes: at the cap it is read, one byte under it refused at the fragment
        # that takes it past (the last), nothing read after it
        (["x" * 400] * 3, 1200, [("Ping", b"p"), ("text", "x" * 1200), ("text", "z")]),
        (["x" * 400] * 3, 1199, [("Ping", b"p"), ("close", 1009)]),
        (["x" * 400] * 3, 799, [("Ping", b"p"), ("close", 1009)]),  # at the second
        # one frame: at the cap read, past it refused from its header
        (["y" * 1000], 1000, [("text", "y" * 1000), ("Ping", b"p"), ("text", "z")]),
        (["y" * 1001], 1000, [("close", 1009)]),
    ],
)
def test_a_plain_session_caps_a_message_in_fragments_too(
    parts: list[str], cap: int, expected: list[tuple[object, ...]]
) -> None:
    data = fragments(*parts, ping_after=0)
    if expected[-1] != ("close", 1009):
        assert joined(by_wsproto(data)) == expected  # under the cap: as wsproto reads it
    for step in (1, 7, 400, len(data)):
        assert joined(by_reader(data, step, 64, cap=cap)) == expected, step


def test_a_plain_frame_longer_than_the_cap_is_refused_before_it_is_buffered() -> None:
    reader = FrameReader(wsproto.connection.Connection(ConnectionType.CLIENT), None, 1 << 16)
    # a header that announces a terabyte: refused from the header, nothing waited for
    reader.feed(server_bytes(TextMessage("a")) + bytes([0x81, 127]) + (1 << 40).to_bytes(8))
    messages = reader.messages(64)
    assert messages is not None
    assert messages[0] == "a"
    assert isinstance(messages[1], CloseConnection)
    assert messages[1].code == 1009
    assert reader.failed is messages[1]
    reader.feed(b"\x00" * 1000)
    assert reader.messages(64) is None  # nothing is read after the close


def test_the_session_class_carries_the_cap_it_was_made_for() -> None:
    assert session_class() is BatchingSession
    assert BatchingSession.max_message == MAX_MESSAGE
    capped = session_class(1 << 17)
    assert issubclass(capped, BatchingSession)
    assert capped.max_message == 1 << 17  # type: ignore[attr-defined]
    assert session_class(1 << 17) is capped  # one class a cap
