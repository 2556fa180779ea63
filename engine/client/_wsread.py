"""The feed's websocket session, with what one read of the socket holds handed over at once.

httpx-ws (0.9) reads the socket in a task of its own and hands each message to the reader
through an unbuffered memory stream: two turns of the event loop per message (the
hand-over, then the reader's wake-up), whatever the reader does with it. In the feed's
bursts that was most of the feed client's cost (bench/bench_feed_decode.py: ~160 us an
event through it, ~50 us with the messages of a read taken together).

:class:`BatchingSession` is a :class:`~._websocket.FeedSession` (the compression the
server accepted, the socket's bytes counted) that keeps httpx-ws's handshake, sending,
closing and keep-alive, and replaces only its reading task: every complete message of one
read (up to the read size) goes over in one list, with websocket pings answered and pongs
acknowledged as before.

:class:`FrameReader` splits what is read into frames. wsproto's parser, in Python, was
half of what was left per event; the feed's every event is one complete, unmasked text
frame, whose header is two to ten bytes, so those are read here. In a plain session every
other frame (control frames, fragments, binary, anything odd or invalid) is handed whole to
wsproto, which keeps the protocol's state and its errors as before.

In a compressed session (permessage-deflate agreed, the default) the reader owns the
inflate of incoming messages, RFC 7692's way: one raw-deflate context for the connection
(``server_max_window_bits``), or a fresh one a message when the server said
``server_no_context_takeover``; RSV1 on a message's first frame only, its continuation
frames until FIN, the 4 bytes ``00 00 ff ff`` put back at its end. Every data frame of such
a session is read here (fragments joined, a message handed over whole), so wsproto's own
inflate context for incoming frames is never used and never drifts from this one; wsproto
reads the control frames (never compressed; a ping between two fragments is answered at
once) and the frames whose header it refuses anyway; outgoing frames keep wsproto's
compressor (the two directions have contexts of their own). A message is capped at
``max_message`` bytes inflated (``account.feed_max_message``, :data:`MAX_MESSAGE` unless
set), checked as it inflates (``max_length``, then ``unconsumed_tail``): a frame of a few
KB that would inflate to gigabytes never does, the connection closes with 1009; data that
does not inflate or is not UTF-8 closes it with 1007, fragments out of order with 1002
(the close is sent to the server; the feed client counts it as a connection end and
reconnects with backoff). That made a compressed session 2.4-3.2x faster, close to a
plain one (``bench/bench_feed_decode.py``).

The same cap holds in a plain session: a data frame longer than it is refused from its
header, before its payload is buffered, and a message in fragments from the fragment that
takes it past the cap (wsproto joins no fragments and caps nothing: without this, a
server could grow the message the session joins without end).

:func:`receiver` gives the reading function for any session: the batched one when the
installed httpx-ws is the one this was written against, one message a list otherwise.
"""

from __future__ import annotations

import functools
import inspect
import zlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Final

import httpcore
import httpx_ws._api
import wsproto.connection
import wsproto.events
import wsproto.utilities
from anyio import EndOfStream
from httpx_ws import AsyncWebSocketSession, HTTPXWSException, WebSocketNetworkError
from wsproto.extensions import PerMessageDeflate
from wsproto.frame_protocol import CloseReason

from .._errors import ConfigError
from ._websocket import FeedSession

__all__ = [
    "HANDOVER",
    "LARGEST_MESSAGE_CAP",
    "MAX_MESSAGE",
    "MIN_MESSAGE_CAP",
    "BatchingSession",
    "FrameReader",
    "Inflate",
    "Messages",
    "batching_available",
    "check_max_message",
    "receiver",
    "session_class",
]

Messages = list[str | wsproto.events.Event]
"""What one read of the socket held, in order: a text message read by :class:`FrameReader`
as its ``str`` (no event object per message: on a loaded machine building one cost as much
as splitting the frame), any other message or event as wsproto's event, then maybe the
close."""

# The methods of httpx-ws's session the replaced reading task stands on (its attributes
# ``_send_event``, ``_receive_event``, ``_ping_manager`` and ``_write_lock`` are set by the
# same version's code): if a later version renames them, the feed client uses
# FeedSession, httpx-ws's own reading (correct, only slower).
_NEEDS = ("_background_receive", "_read_stream")

# What httpx-ws's ``_read_stream`` raises when the socket just ends (the server's process
# died, the network dropped: no close frame): its own class, not anyio's. Uncaught, it
# left the session as an error the client did not know, and the feed stopped for good.
_READ_ENDED: Final[tuple[type[BaseException], ...]] = (
    httpcore.ReadError,
    httpcore.WriteError,
    EndOfStream,
    getattr(httpx_ws._api, "EndOfStream", EndOfStream),
)


_TEXT_FINAL: Final = 0x81  # FIN, no reserved bit, opcode 1 (text)
_TEXT_DEFLATED: Final = 0xC1  # FIN, RSV1 (compressed), opcode 1 (text)
_FIN: Final = 0x80
_RSV1: Final = 0x40
_RSV23: Final = 0x30
_MASKED: Final = 0x80
_OPCODE: Final = 0x0F
_TAIL: Final = b"\x00\x00\xff\xff"  # RFC 7692 7.2.2: the end every message was cut from

PROTOCOL_ERROR: Final = 1002
INVALID_DATA: Final = 1007
TOO_BIG: Final = 1009


HANDOVER: Final = 64
"""Frames read and handed to the reader at most at a time: the reading task gives the loop
a turn between two lists, so a read full of small frames (a 256 KiB read of compressed
frames of ~50 B holds ~5,000) is never all parsed and inflated in one turn."""

MAX_MESSAGE: Final = 1 << 20
"""A message's largest size (inflated, in a compressed session) unless
``account.feed_max_message`` says otherwise: a message past it closes the connection
(1009) instead of filling memory. The feed's events are ~300 B; the largest legitimate
message seen is well under this (tests send 400 KB)."""
MIN_MESSAGE_CAP: Final = 64 << 10
"""The smallest cap that may be set: the Engine.IO handshake, a Socket.IO packet of a
burst and a joined fragmented event all fit well under it, so a cap below would only
close healthy connections."""
LARGEST_MESSAGE_CAP: Final = 1 << 30
"""The largest cap that may be set: a message of a GiB held in memory is no feed event."""


def check_max_message(value: object) -> int:
    """``value`` as the largest message in bytes, or a :class:`ConfigError` naming the
    field (``feed_max_message``) and the range."""
    if (
        isinstance(value, int)
        and not isinstance(value, bool)
        and MIN_MESSAGE_CAP <= value <= LARGEST_MESSAGE_CAP
    ):
        return value
    bytes_ = isinstance(value, int) and not isinstance(value, bool)
    raise ConfigError(
        f"the largest feed message is between {MIN_MESSAGE_CAP >> 10} KiB and "
        f"{LARGEST_MESSAGE_CAP >> 30} GiB (the feed's events are ~300 B; the default is "
        f"{MAX_MESSAGE >> 20} MiB), got {value!r}{' bytes' if bytes_ else ''}",
        field="feed_max_message",
    )


@dataclass(frozen=True, slots=True)
class Inflate:
    """How the server compresses its messages (the permessage-deflate agreed)."""

    window_bits: int = 15
    """``server_max_window_bits``: the inflate window (raw deflate: ``-window_bits``)."""
    takeover: bool = True
    """``False`` when the server said ``server_no_context_takeover``: every message is a
    deflate stream of its own."""

    @classmethod
    def of(cls, extension: PerMessageDeflate) -> Inflate:
        return cls(extension.server_max_window_bits, not extension.server_no_context_takeover)


class FrameReader:
    """Server frames to messages, sans I/O: :meth:`feed` the bytes as read, then take the
    messages (see :data:`Messages`) of the frames they complete with :meth:`messages`, a
    few frames at a time (a frame cut by a read waits for the rest).

    Plain session (``inflate`` is ``None``): a complete, final, unmasked text frame with no
    reserved bit, outside a fragmented message, whose payload is valid UTF-8, is read
    here; every other frame goes whole to ``connection`` (wsproto), so wsproto sees frame
    boundaries only and its state (a fragmented message under way, a close received)
    stays its own. The cap holds here too: a data frame longer than ``max_message`` is
    refused from its header, a message in fragments at the fragment that takes it past
    (1009, as below).

    Compressed session (``inflate`` given): every data frame (text, binary, continuation,
    compressed or not) is read here, with the one inflate context of the connection (a
    fresh one a message without context takeover), a message's inflated size capped at
    ``max_message``; a message in fragments comes whole once its last fragment is read.
    wsproto sees the control frames only (never compressed), and frames whose header it
    refuses anyway (masked, RSV2/RSV3, a reserved opcode): its own inflate context for
    incoming frames is never used, so the two cannot drift apart. What this reader
    refuses (data that does not inflate or is not UTF-8: 1007; a message past the cap:
    1009; fragments out of order: 1002) comes as a
    :class:`~wsproto.events.CloseConnection` with that code, kept in :attr:`failed`, and
    nothing is read after it."""

    def __init__(
        self,
        connection: wsproto.connection.Connection,
        inflate: Inflate | None = None,
        max_message: int = MAX_MESSAGE,
    ) -> None:
        self._connection = connection
        self._buffer = bytearray()
        self._at = 0  # where the first frame not yet read starts
        self._fragmented = False  # a text or binary message sent in fragments is under way
        self._inflate = inflate
        self._max = max_message
        self._decompressor: Any = None  # zlib's, made at the first compressed message
        # a compressed session's message in fragments: its opcode, compressed or not, parts
        self._opcode = 0
        self._compressed = False
        self._parts: list[bytes] = []
        self._size = 0
        self.failed: wsproto.events.CloseConnection | None = None
        """The close this reader decided (the session sends it to the server)."""

    def feed(self, data: bytes) -> None:
        """Bytes as read from the socket."""
        if self._at:
            del self._buffer[: self._at]
            self._at = 0
        self._buffer += data

    def messages(self, limit: int) -> Messages | None:
        """The messages of the next ``limit`` complete frames at most (a control frame
        may give none, a message in fragments one per fragment, or one at its end in a
        compressed session); ``None`` when no complete frame is left."""
        if self.failed is not None:
            return None
        buffer = self._buffer
        size = len(buffer)
        at = self._at
        events: Messages = []
        frames = 0
        inflate = self._inflate
        while frames < limit and size - at >= 2:
            first, second = buffer[at], buffer[at + 1]
            length = second & 0x7F
            head = 2
            if length == 126:
                if size - at < 4:
                    break
                length = int.from_bytes(buffer[at + 2 : at + 4], "big")
                head = 4
            elif length == 127:
                if size - at < 10:
                    break
                length = int.from_bytes(buffer[at + 2 : at + 10], "big")
                head = 10
            if second & _MASKED:
                head += 4  # a server must not mask: wsproto says so, below
            if length > self._max and first & _OPCODE < 8:
                # refused before it is buffered: a payload this size is past the cap,
                # plain or compressed (deflate never makes data shorter than ~1/1032 of
                # it, but a server that pads to this size is not one to wait for)
                events.append(self._fail(TOO_BIG, f"a frame of {length} bytes"))
                frames += 1
                break
            end = at + head + length
            if end > size:
                break
            if first == _TEXT_FINAL and not second & _MASKED and not self._fragmented:
                try:
                    events.append(buffer[at + head : end].decode())
                except UnicodeDecodeError:
                    if inflate is None:
                        events.extend(self._by_wsproto(buffer[at:end]))
                    else:
                        events.append(self._fail(INVALID_DATA, "a text message not UTF-8"))
            elif (
                first == _TEXT_DEFLATED
                and inflate is not None
                and not (second & _MASKED or self._fragmented)
            ):  # the feed's events in a compressed session
                events.append(self._deflated_text(buffer[at + head : end]))
            elif inflate is not None and first & _OPCODE < 3 and not second & _MASKED:
                events.extend(self._data(first, bytes(buffer[at + head : end])))
            else:
                if inflate is None and first & _OPCODE < 3:
                    if first & _OPCODE:  # a message's first frame
                        self._fragmented = not first & _FIN
                        self._size = length
                    elif self._fragmented:  # wsproto joins nothing and caps nothing
                        self._fragmented = not first & _FIN
                        self._size += length
                        if self._size > self._max:
                            events.append(
                                self._fail(TOO_BIG, f"a message of more than {self._max} bytes")
                            )
                            frames += 1
                            break
                events.extend(self._by_wsproto(buffer[at:end]))
            at = end
            frames += 1
            if self.failed is not None:
                break
        self._at = at
        return events if frames else None

    def _by_wsproto(self, frame: bytearray) -> list[wsproto.events.Event]:
        self._connection.receive_data(bytes(frame))
        return list(self._connection.events())

    def _fail(self, code: int, reason: str) -> wsproto.events.CloseConnection:
        self.failed = wsproto.events.CloseConnection(code, reason)
        return self.failed

    def _data(self, first: int, payload: bytes) -> list[str | wsproto.events.Event]:
        """A data frame of a compressed session: its message when it is the last."""
        if first & _RSV23:  # no extension agreed uses them
            return [self._fail(PROTOCOL_ERROR, "a reserved bit set (RSV2 or RSV3)")]
        opcode = first & _OPCODE
        if opcode:  # the first frame of a message
            if self._fragmented:
                return [self._fail(PROTOCOL_ERROR, "a new message before the last one ended")]
            self._opcode = opcode
            self._compressed = bool(first & _RSV1)
            self._parts = []
            self._size = 0
        elif not self._fragmented:
            return [self._fail(PROTOCOL_ERROR, "a continuation frame outside a message")]
        elif first & _RSV1:
            return [self._fail(PROTOCOL_ERROR, "RSV1 set on a continuation frame")]
        final = bool(first & _FIN)
        self._fragmented = not final
        if self._compressed:
            data = self._inflated(payload, final)
            if data is None:
                return [self.failed] if self.failed is not None else []
        else:
            data = payload
            self._size += len(data)
            if self._size > self._max:
                return [self._fail(TOO_BIG, f"a message of more than {self._max} bytes")]
        if not final:
            self._parts.append(data)
            return []
        if self._parts:
            self._parts.append(data)
            data = b"".join(self._parts)
            self._parts = []
        if self._opcode == 2:
            return [wsproto.events.BytesMessage(data)]
        try:
            return [data.decode()]
        except UnicodeDecodeError:
            return [self._fail(INVALID_DATA, "a text message not UTF-8")]

    def _inflated(self, payload: bytes | bytearray, final: bool) -> bytes | None:
        """``payload`` inflated (with the message's end when ``final``); ``None`` when the
        connection must close (:attr:`failed` says why)."""
        inflate = self._inflate
        assert inflate is not None
        decompressor = self._decompressor
        if decompressor is None:
            decompressor = self._decompressor = zlib.decompressobj(-inflate.window_bits)
        room = self._max - self._size
        try:
            # at most one byte past the room: more than the room means too big, and what
            # zlib has not yet inflated (unconsumed_tail) is never inflated
            data: bytes = decompressor.decompress(payload + _TAIL if final else payload, room + 1)
        except zlib.error:
            return self._refuse(INVALID_DATA, "a message that does not inflate")
        if len(data) > room or decompressor.unconsumed_tail:
            return self._refuse(TOO_BIG, f"a message that inflates past {self._max} bytes")
        if decompressor.eof:  # ended by a final deflate block: nothing may follow it
            left = decompressor.unused_data
            if left and not (final and left == _TAIL):
                return self._refuse(INVALID_DATA, "data after the end of a message")
        self._size += len(data)
        if final and (not inflate.takeover or decompressor.eof):
            self._decompressor = None  # the next message is a deflate stream of its own
        return data

    def _deflated_text(self, payload: bytearray) -> str | wsproto.events.Event:
        """A whole compressed text message in one frame (the feed's every event in a
        compressed session): :meth:`_data`'s work for it, without a fragment's state."""
        self._size = 0
        data = self._inflated(payload, True)
        if data is None:
            assert self.failed is not None
            return self.failed
        try:
            return data.decode()
        except UnicodeDecodeError:
            return self._fail(INVALID_DATA, "a text message not UTF-8")

    def _refuse(self, code: int, reason: str) -> bytes | None:
        """No data: the connection closes with ``code`` (the context is not used again)."""
        self._fail(code, reason)
        self._decompressor = None
        return None


class BatchingSession(FeedSession):
    """A :class:`~._websocket.FeedSession` whose reading task hands over the messages of
    each read in lists of up to :data:`HANDOVER` frames' worth; read them with
    :meth:`receive_batch` (not ``receive``). Its messages are capped at
    :attr:`max_message` (a subclass per cap: :func:`session_class`)."""

    max_message: ClassVar[int] = MAX_MESSAGE
    """The largest message read (inflated): past it the connection closes with 1009.
    A class attribute, since httpx-ws builds the session from its class."""

    async def _background_receive(self, max_bytes: int) -> None:
        # The message a read left unfinished (a frame split between two reads, or one
        # sent in fragments) waits here for the rest.
        partial: Any = None
        connection = self.connection
        frames = FrameReader(
            connection,
            None if self.extension is None else Inflate.of(self.extension),
            # not httpx-ws's max_message_size_bytes: that one is its read size
            self.max_message,
        )
        try:
            while not self._should_close.is_set():
                frames.feed(await self._read_stream(max_bytes))
                while (messages := frames.messages(HANDOVER)) is not None:
                    batch: Messages = []
                    for event in messages:
                        if type(event) is str:
                            batch.append(event)
                        elif isinstance(event, wsproto.events.Message):
                            if not event.message_finished:
                                partial = event.data if partial is None else partial + event.data
                                continue
                            if partial is not None:
                                event = type(event)(partial + event.data)
                                partial = None
                            batch.append(event)
                        elif isinstance(event, wsproto.events.Ping):
                            answer = connection.send(event.response())
                            async with self._write_lock:
                                await self.stream.write(answer)
                        elif isinstance(event, wsproto.events.Pong):
                            self._ping_manager.ack(event.payload)
                        else:
                            if isinstance(event, wsproto.events.CloseConnection):
                                self._should_close.set()
                                if event is frames.failed:  # the server is told why
                                    await self._refuse(event)
                            batch.append(event)
                    if batch:
                        # unbuffered: waits for the reader to take it, a turn of the loop
                        await self._send_event.send(batch)  # type: ignore[arg-type]
                    if self._should_close.is_set():
                        break
        except _READ_ENDED:
            await self.close(CloseReason.INTERNAL_ERROR, "Stream error")
            await self._send_event.send(WebSocketNetworkError())

    async def _refuse(self, close: wsproto.events.CloseConnection) -> None:
        """Sends the close this reader decided (httpx-ws's own close, on leaving the
        session, then only closes the stream)."""
        try:
            data = self.connection.send(close)
            async with self._write_lock:
                await self.stream.write(data)
        except (httpcore.WriteError, wsproto.utilities.LocalProtocolError):
            pass  # the connection ends either way

    async def receive_batch(self) -> Messages:
        """The next messages read, in order; raises what httpx-ws's ``receive``
        raises for a failed connection (a close comes as the list's last event)."""
        item: Any = await self._receive_event.receive()
        if isinstance(item, HTTPXWSException):
            raise item
        return item  # type: ignore[no-any-return]


def batching_available() -> bool:
    """Whether the installed httpx-ws has the reading task :class:`BatchingSession`
    replaces, called as it calls it (checked, not assumed: these are httpx-ws's own
    names, not its API; a test says when an upgrade changes them)."""
    for name in _NEEDS:
        method = getattr(AsyncWebSocketSession, name, None)
        if method is None or not inspect.iscoroutinefunction(method):
            return False
        if list(inspect.signature(method).parameters) != ["self", "max_bytes"]:
            return False
    return True


@functools.cache
def session_class(max_message: int = MAX_MESSAGE) -> type[FeedSession]:
    """The session the feed client opens with httpx-ws (which builds it from its class):
    a :class:`BatchingSession` whose messages are capped at ``max_message``, or httpx-ws's
    own reading (:class:`~._websocket.FeedSession`, its messages capped by nothing of
    ours) when the installed httpx-ws is not the one it was written against."""
    if not batching_available():
        return FeedSession
    if max_message == BatchingSession.max_message:
        return BatchingSession
    return type(f"BatchingSession{max_message}", (BatchingSession,), {"max_message": max_message})


def receiver(ws: Any) -> Callable[[], Awaitable[Messages]]:
    """The function that reads the next list of messages from ``ws``: its
    :meth:`~BatchingSession.receive_batch`, or a list of one message from ``receive`` for
    any other session (a test's stand-in, or httpx-ws's own session)."""
    batch = getattr(ws, "receive_batch", None)
    if batch is not None:
        return batch  # type: ignore[no-any-return]
    receive = ws.receive

    async def one() -> Messages:
        return [await receive()]

    return one
