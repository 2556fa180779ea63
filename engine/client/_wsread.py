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
frame, whose header is two to ten bytes, so those are read here and every other frame
(control frames, fragments, binary, compressed ones, anything odd or invalid) is handed
whole to wsproto, which keeps the protocol's state, its permessage-deflate context and its
errors as before. (With permessage-deflate running, the feed's frames are compressed:
they all go through wsproto, in batches still.)

:func:`receiver` gives the reading function for any session: the batched one when the
installed httpx-ws is the one this was written against, one message a list otherwise.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any, Final

import httpcore
import wsproto.connection
import wsproto.events
from anyio import EndOfStream
from httpx_ws import AsyncWebSocketSession, HTTPXWSException, WebSocketNetworkError
from wsproto.frame_protocol import CloseReason

from ._websocket import FeedSession

__all__ = [
    "HANDOVER",
    "BatchingSession",
    "FrameReader",
    "Messages",
    "batching_available",
    "receiver",
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


_TEXT_FINAL: Final = 0x81  # FIN, no reserved bit, opcode 1 (text)
_FIN: Final = 0x80
_MASKED: Final = 0x80
_OPCODE: Final = 0x0F


HANDOVER: Final = 64
"""Frames read and handed to the reader at most at a time: the reading task gives the loop
a turn between two lists, so a read full of small frames (a 256 KiB read of compressed
frames of ~50 B holds ~5,000) is never all parsed and inflated in one turn."""


class FrameReader:
    """Server frames to messages, sans I/O: :meth:`feed` the bytes as read, then take the
    messages (see :data:`Messages`) of the frames they complete with :meth:`messages`, a
    few frames at a time (a frame cut by a read waits for the rest).

    A complete, final, unmasked text frame with no reserved bit, outside a fragmented
    message, whose payload is valid UTF-8, is read here; every other frame goes whole
    to ``connection`` (wsproto), so wsproto sees frame boundaries only and its state
    (a fragmented message under way, a close received, the inflate context) stays its
    own."""

    def __init__(self, connection: wsproto.connection.Connection) -> None:
        self._connection = connection
        self._buffer = bytearray()
        self._at = 0  # where the first frame not yet read starts
        self._fragmented = False  # a text or binary message sent in fragments is under way

    def feed(self, data: bytes) -> None:
        """Bytes as read from the socket."""
        if self._at:
            del self._buffer[: self._at]
            self._at = 0
        self._buffer += data

    def messages(self, limit: int) -> Messages | None:
        """The messages of the next ``limit`` complete frames at most (a control frame
        may give none, a message in fragments one per fragment); ``None`` when no
        complete frame is left."""
        buffer = self._buffer
        size = len(buffer)
        at = self._at
        events: Messages = []
        frames = 0
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
            end = at + head + length
            if end > size:
                break
            if first == _TEXT_FINAL and not second & _MASKED and not self._fragmented:
                try:
                    events.append(buffer[at + head : end].decode())
                except UnicodeDecodeError:
                    events.extend(self._by_wsproto(buffer[at:end]))
            else:
                opcode = first & _OPCODE
                if opcode in (1, 2):
                    self._fragmented = not first & _FIN
                elif opcode == 0 and first & _FIN:
                    self._fragmented = False
                events.extend(self._by_wsproto(buffer[at:end]))
            at = end
            frames += 1
        self._at = at
        return events if frames else None

    def _by_wsproto(self, frame: bytearray) -> list[wsproto.events.Event]:
        self._connection.receive_data(bytes(frame))
        return list(self._connection.events())


class BatchingSession(FeedSession):
    """A :class:`~._websocket.FeedSession` whose reading task hands over the messages of
    each read in lists of up to :data:`HANDOVER` frames' worth; read them with
    :meth:`receive_batch` (not ``receive``)."""

    async def _background_receive(self, max_bytes: int) -> None:
        # The message a read left unfinished (a frame split between two reads, or one
        # sent in fragments) waits here for the rest.
        partial: Any = None
        connection = self.connection
        frames = FrameReader(connection)
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
                            batch.append(event)
                    if batch:
                        # unbuffered: waits for the reader to take it, a turn of the loop
                        await self._send_event.send(batch)  # type: ignore[arg-type]
                    if self._should_close.is_set():
                        break
        except (httpcore.ReadError, httpcore.WriteError, EndOfStream):
            await self.close(CloseReason.INTERNAL_ERROR, "Stream error")
            await self._send_event.send(WebSocketNetworkError())

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
