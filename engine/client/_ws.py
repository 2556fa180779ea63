"""httpx-ws's websocket session, with what one read of the socket holds handed over at once.

httpx-ws (0.9) reads the socket in a task of its own and hands each message to the reader
through an unbuffered memory stream: two turns of the event loop per message (the
hand-over, then the reader's wake-up), whatever the reader does with it. In the feed's
bursts that was a third of the feed client's cost (bench/bench_feed_decode.py).

:class:`BatchingSession` keeps httpx-ws's handshake, sending, closing and keep-alive, and
replaces only its reading task: every complete message of one read (up to the read size)
goes over in one list, with websocket pings answered and pongs acknowledged as before.
:func:`receiver` gives the reading function for any session: the batched one when the
installed httpx-ws is the one this was written against, one message a list otherwise.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import httpcore
import wsproto.events
from anyio import EndOfStream
from httpx_ws import AsyncWebSocketSession, HTTPXWSException, WebSocketNetworkError
from wsproto.frame_protocol import CloseReason

__all__ = ["BatchingSession", "Messages", "batching_available", "receiver"]

Messages = list[wsproto.events.Event]
"""What one read of the socket held: text or bytes messages, then maybe the close."""

# The methods of httpx-ws's session the replaced reading task stands on (its attributes
# ``_send_event``, ``_receive_event``, ``_ping_manager`` and ``_write_lock`` are set by the
# same version's code): if a later version renames them, the feed client uses httpx-ws's
# own session and reading (correct, only slower).
_NEEDS = ("_background_receive", "_read_stream")


class BatchingSession(AsyncWebSocketSession):
    """An :class:`~httpx_ws.AsyncWebSocketSession` whose reading task hands over a list of
    the messages of each read; read them with :meth:`receive_batch` (not ``receive``)."""

    async def _background_receive(self, max_bytes: int) -> None:
        # The message a read left unfinished (a frame split between two reads, or one
        # sent in fragments) waits here for the rest.
        partial: Any = None
        connection = self.connection
        try:
            while not self._should_close.is_set():
                connection.receive_data(await self._read_stream(max_bytes))
                batch: Messages = []
                for event in connection.events():
                    if isinstance(event, wsproto.events.Message):
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
                    await self._send_event.send(batch)  # type: ignore[arg-type]
        except (httpcore.ReadError, httpcore.WriteError, EndOfStream):
            await self.close(CloseReason.INTERNAL_ERROR, "Stream error")
            await self._send_event.send(WebSocketNetworkError())

    async def receive_batch(self) -> Messages:
        """The messages of the next read, in order; raises what httpx-ws's ``receive``
        raises for a failed connection (a close comes as the list's last event)."""
        item: Any = await self._receive_event.receive()
        if isinstance(item, HTTPXWSException):
            raise item
        return item  # type: ignore[no-any-return]


def batching_available() -> bool:
    """Whether the installed httpx-ws has the reading task :class:`BatchingSession`
    replaces (checked, not assumed: the names are httpx-ws's own, not its API)."""
    return all(hasattr(AsyncWebSocketSession, name) for name in _NEEDS)


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
