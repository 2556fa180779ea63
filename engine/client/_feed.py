"""The public listing feed's client: a Socket.IO websocket, kept open.

:class:`FeedClient` connects to ``<feed_url>/socket.io/?EIO=4&transport=websocket`` over
httpx-ws (a websocket on httpx, asyncio and trio through anyio), speaks the framing of
:mod:`._eio`, subscribes to each watched game, answers every ping, and yields typed events
(:mod:`._feed_events`). It never gives up: a connection that ends, fails or stalls (no
frame for pingInterval + pingTimeout, on the injected clock) is closed and opened again
after a capped, jittered backoff; each new connection is announced with a
:class:`FeedConnected` of the next generation, because the feed never replays what was
missed. An event that cannot be read is set aside, counted, logged once per kind and told
to :attr:`FeedClient.malformed_observer` under the endpoint label ``feed``; the connection
goes on.

In a burst the cost is per socket read, not per frame, wherever it can be: the session
(:mod:`._wsread`) hands over every message of one read at once, and the events decoded from
them go to the consumer in lists (:meth:`FeedClient.run_batches`), so neither the reading
nor the consuming task takes a turn of the event loop per event.

The upgrade request offers permessage-deflate (``compression="auto"``, the default; ``off``
offers nothing) and the session runs compressed only when the server accepts it
(:mod:`._websocket`); :meth:`FeedClient.health` tells which, and the bytes the socket
carried. A message larger than ``max_message`` (``account.feed_max_message``, 1 MiB by
default; inflated, in a compressed session) ends the connection with 1009, plain or
compressed, and the client connects again with backoff.

The API key, when given, is sent in an ``authorization`` header added by a transport to a
private copy of the upgrade request, never in the address, so nothing httpx logs or
attaches to an error shows it.
"""

from __future__ import annotations

import json
import logging
import random
import urllib.parse
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Final, Self

import anyio
import anyio.abc
import httpcore
import httpx
import wsproto.events
import wsproto.utilities
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from httpx_ws import HTTPXWSException, WebSocketDisconnect, aconnect_ws

from .._clock import Clock, SystemClock
from .._errors import ConfigError, SnipeError
from ..models import FeedListing, FeedRemoval, SetAside, decode_item
from . import _eio, _wsread
from ._core import MalformedObserver
from ._feed_events import (
    Backoff,
    EventRate,
    FeedConnected,
    FeedDisconnected,
    FeedEvent,
    FeedHealth,
    FeedListingEvent,
    FeedRemovalEvent,
)
from ._secret import APIKey, Secret
from ._transport import _scrubbed
from ._websocket import (
    FeedHandshakeError,
    FeedSession,
    WireMeter,
    check_compression,
    offer_headers,
)

__all__ = ["BATCH", "FEED_ENDPOINT", "FeedBatch", "FeedClient", "FeedClientError"]

FEED_ENDPOINT: Final = "feed"
"""The endpoint label of the feed in the set-aside counter and logs."""
FEED_PATH: Final = "/socket.io/"
FEED_QUERY: Final = "EIO=4&transport=websocket"

_log = logging.getLogger("engine.client.feed")

_PATHS: Final = {name: f"feed.{name}" for name in ("new", "update", "removed")}
"""Where an odd event of each kind is set aside (made once, not per event)."""

FeedBatch = Sequence[FeedEvent]
"""Events handed over together (:meth:`FeedClient.run_batches`), in the order they came."""
BATCH: Final = 64
"""Events of one read of the socket handed over together at most: a burst costs the
consumer one wake-up per batch (~0.5 us an event at 64), and the first event of a read
waits for at most this many others to be decoded (about a millisecond), the consumer's
turn is bounded by it as much as by its clock (see FeedWatch.consume)."""

# The session whose reading task hands over a read's messages at once, when the installed
# httpx-ws is the one it was written for (see _wsread.py).
_SESSION: Final[type[FeedSession]] = _wsread.session_class()

# How much httpx-ws reads from the socket at a time (its "max message size" is the read
# size): a burst of ~2,800 events a second is ~1.5 MB/s, so reads larger than its 64 KiB
# default take a burst in fewer turns of the loop.
_READ_CHUNK: Final = 256 * 1024
# What a connection attempt may raise when the network, the server or the websocket fails:
# each ends the connection, none ends the client.
_CONNECTION_ERRORS: Final = (
    HTTPXWSException,
    httpx.HTTPError,
    httpcore.NetworkError,
    httpcore.TimeoutException,
    httpcore.ProtocolError,
    wsproto.utilities.LocalProtocolError,
    anyio.BrokenResourceError,
    anyio.ClosedResourceError,
    OSError,
)


@dataclass(frozen=True, slots=True)
class _Ended:
    reason: str
    detail: str


class FeedClientError(SnipeError):
    """An unexpected error of the feed's client whose text held the API key: its type and
    text with the key redacted (the original is dropped, so no traceback shows it)."""


class _ConsumerGone(Exception):
    """The receiving end of the events was closed: nobody listens, so the client stops."""


class _Sink:
    """Where the events go: one by one (:meth:`FeedClient.run`) or in lists
    (:meth:`FeedClient.run_batches`)."""

    def __init__(self, stream: MemoryObjectSendStream[Any], *, batched: bool) -> None:
        self.stream = stream
        self.batched = batched

    async def put(self, events: list[FeedEvent]) -> None:
        """Hand ``events`` over (a batched sink keeps the list: the caller makes a new one).

        With room in the queue, without a turn of the event loop: reading the next frames
        takes one already. A full queue waits for the consumer; a closed one raises
        :class:`_ConsumerGone`."""
        if not events:
            return
        stream = self.stream
        try:
            if self.batched:
                try:
                    stream.send_nowait(events)
                except anyio.WouldBlock:
                    await stream.send(events)
                return
            for event in events:
                try:
                    stream.send_nowait(event)
                except anyio.WouldBlock:
                    await stream.send(event)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            raise _ConsumerGone from None


class FeedClient:
    """A self-healing subscription to the listing feed of ``games``.

    Use it as an async context manager and iterate it::

        async with FeedClient(url, games=["csgo"]) as feed:
            async for event in feed:  # FeedListingEvent, FeedRemovalEvent, FeedConnected...
                ...

    or run :meth:`run` in a task group of your own with the sending end of a memory
    object stream. ``on_connect`` is called with each :class:`FeedConnected` as it
    happens (before it is queued); :meth:`health` tells the state at any time.
    Events are queued up to ``buffer``; when the consumer falls behind that far, reading
    the socket waits for it (nothing is dropped), pings included, and a consumer stuck
    for pingInterval + pingTimeout makes the connection count as stalled.
    """

    def __init__(
        self,
        feed_url: str,
        *,
        games: Sequence[str],
        api_key: str | Secret | None = None,
        clock: Clock | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        backoff: Backoff | None = None,
        rng: random.Random | None = None,
        open_timeout: float = 10.0,
        buffer: int = 8192,
        on_connect: Callable[[FeedConnected], None] | None = None,
        compression: str = "auto",
        max_message: int = _wsread.MAX_MESSAGE,
    ) -> None:
        self._base = _check_feed_url(feed_url)
        self._url = f"{self._base}{FEED_PATH}?{FEED_QUERY}"
        self._games = _check_games(games)
        self._key = _check_key(api_key)
        self._compression = check_compression(compression)
        self._offer = offer_headers(self._compression)
        self._max_message = _wsread.check_max_message(max_message)
        self._session = _wsread.session_class(self._max_message)
        self._clock: Clock = clock if clock is not None else SystemClock()
        self._transport = transport
        self._backoff = backoff if backoff is not None else Backoff()
        self._rng = rng if rng is not None else random.Random()
        if not open_timeout > 0:
            raise ConfigError("open_timeout must be a positive number of seconds")
        self._open_timeout = float(open_timeout)
        self._buffer = buffer
        self.on_connect = on_connect
        self.malformed_observer: MalformedObserver | None = None
        """Called with (``"feed"``, :class:`~engine.models.SetAside`) for every frame or
        event set aside; it must not block, and one that raises is ignored."""
        self._logged_kinds: set[str] = set()
        # the state :meth:`health` reports
        self._generation = 0
        self._attempts = 0
        self._connected_since: float | None = None
        self._subscribed: set[str] = set()
        self._events: dict[str, int] = {"new": 0, "update": 0, "removed": 0}
        self._set_aside: dict[str, int] = {}
        self._disconnects: dict[str, int] = {}
        self._frames = 0
        self._bytes = 0
        # the socket's bytes: of the connections that ended, and of the one under way
        self._wire_done = 0
        self._wire: WireMeter | None = None
        self._compressed: bool | None = None
        self._last_event_at: float | None = None
        self._last_frame_at: float | None = None
        self._rate = EventRate()
        # the connection under way: silence beyond ``_silence`` after ``_last_sign``
        self._last_sign = 0.0
        self._silence = self._open_timeout
        self._open: _eio.EioOpen | None = None
        # the context-manager form
        self._tg: anyio.abc.TaskGroup | None = None
        self._receive: MemoryObjectReceiveStream[FeedEvent] | None = None

    def __repr__(self) -> str:
        key = "" if self._key is None else f", api_key={self._key!r}"
        return f"FeedClient({self._base!r}, games={list(self._games)!r}{key})"

    @property
    def url(self) -> str:
        """The websocket's address (it never holds the key)."""
        return self._url

    @property
    def max_message(self) -> int:
        """The largest message read, in bytes (inflated): past it the connection closes
        with 1009 and is opened again."""
        return self._max_message

    @property
    def compression(self) -> str:
        """``auto`` (permessage-deflate offered, used if accepted) or ``off``."""
        return self._compression

    # --- the consumer's side ----------------------------------------------------------

    async def __aenter__(self) -> Self:
        send, receive = anyio.create_memory_object_stream[FeedEvent](self._buffer)
        self._receive = receive
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        self._tg.start_soon(self.run, send)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._tg is not None
        assert self._receive is not None
        self._tg.cancel_scope.cancel()
        try:
            await self._tg.__aexit__(exc_type, exc, tb)
        finally:
            self._receive.close()
            self._tg = None

    def __aiter__(self) -> AsyncIterator[FeedEvent]:
        if self._receive is None:
            raise RuntimeError("iterate the feed inside `async with FeedClient(...)`")
        return self._receive.__aiter__()

    def health(self) -> FeedHealth:
        """The state now (a copy: it does not change afterwards)."""
        now = self._clock.now()
        return FeedHealth(
            connected=self._connected_since is not None,
            generation=self._generation,
            reconnects=max(0, self._generation - 1),
            connected_since=self._connected_since,
            subscribed=tuple(sorted(self._subscribed)),
            events=dict(self._events),
            set_aside=dict(self._set_aside),
            disconnects=dict(self._disconnects),
            frames_received=self._frames,
            bytes_received=self._bytes,
            last_event_at=self._last_event_at,
            last_frame_at=self._last_frame_at,
            events_per_second=self._rate.per_second(now),
            attempts=self._attempts,
            compressed=self._compressed,
            wire_bytes_received=self._wire_done
            + (self._wire.received if self._wire is not None else 0),
        )

    # --- the connection loop ----------------------------------------------------------

    async def run(self, sink: MemoryObjectSendStream[FeedEvent]) -> None:
        """Connect, read, reconnect, for ever, sending every event to ``sink``: returns
        only when ``sink``'s receiving end is closed (and is cancelled like any task).
        Closes ``sink`` on the way out."""
        await self._run(_Sink(sink, batched=False))

    async def run_batches(self, sink: MemoryObjectSendStream[FeedBatch]) -> None:
        """:meth:`run`, with the events sent in lists of up to :data:`BATCH` (those of one
        read of the socket, in order): the consumer wakes once per list, not per event.
        A list once sent is never changed."""
        await self._run(_Sink(sink, batched=True))

    async def _run(self, sink: _Sink) -> None:
        timeout = httpx.Timeout(self._open_timeout)
        async with (
            sink.stream,
            httpx.AsyncClient(transport=self._http_transport(), timeout=timeout) as http,
        ):
            failures = 0
            while True:
                began = self._clock.now()
                try:
                    ended = await self._connection(http, sink)
                except _ConsumerGone:
                    return
                except Exception as exc:
                    # nobody planned for it: the caller decides (FeedWatch retries after
                    # retry_delay); the state health() shows must say the connection ended
                    self._connected_since = None
                    self._subscribed.clear()
                    self._attempts += 1
                    self._disconnects["error"] = self._disconnects.get("error", 0) + 1
                    self._scrub(exc)
                    raise
                generation = self._generation
                was_connected = self._connected_since is not None
                stable = (
                    was_connected
                    and self._clock.now() - (self._connected_since or began)
                    >= self._backoff.stable_after
                )
                self._connected_since = None
                self._subscribed.clear()
                self._disconnects[ended.reason] = self._disconnects.get(ended.reason, 0) + 1
                failures = 0 if stable else failures + 1
                self._attempts += 1
                delay = self._backoff.delay(max(0, failures - 1), self._rng)
                _log.warning(
                    "feed: %s (%s); reconnecting in %.1f s", ended.reason, ended.detail, delay
                )
                if was_connected:
                    gone = FeedDisconnected(
                        generation, self._clock.now(), ended.reason, ended.detail
                    )
                    try:
                        await sink.put([gone])
                    except _ConsumerGone:
                        return
                await self._clock.sleep(delay)

    def _scrub(self, exc: Exception) -> None:
        """Raise, in place of ``exc``, a :class:`FeedClientError` with its description
        (its type named, the key redacted) if its text holds the key: the error, its
        traceback and its chain are logged, and another library's message might."""
        if self._key is None:
            return
        chain: list[str] = []
        link: BaseException | None = exc
        while link is not None and len(chain) < 16:  # what a traceback prints of it
            chain.append(_describe(link))
            link = link.__cause__ or link.__context__
        if any(self._key.reveal() in text for text in chain):
            raise FeedClientError(self._key.redact(chain[0])) from None

    @property
    def stable_after(self) -> float:
        """Seconds of a run after which the count of failures in a row starts again."""
        return self._backoff.stable_after

    def retry_delay(self, failures: int) -> float:
        """Seconds to wait before trying again after ``failures`` failures in a row (1 for
        the first): the client's own capped, jittered backoff, for a caller that restarts
        :meth:`run` after an error the client did not plan for."""
        return self._backoff.delay(max(0, failures - 1), self._rng)

    def _http_transport(self) -> httpx.AsyncBaseTransport:
        inner = self._transport if self._transport is not None else httpx.AsyncHTTPTransport()
        return inner if self._key is None else _AuthorizationTransport(inner, self._key)

    async def _connection(self, http: httpx.AsyncClient, sink: _Sink) -> _Ended:
        """One connection from its start to its end, watched for silence."""
        self._last_sign = self._clock.now()
        self._silence = self._open_timeout
        self._open = None
        ended: _Ended | None = None
        gone = False
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._watchdog, tg.cancel_scope)
                try:
                    ended = await self._connect_and_read(http, sink)
                except _ConsumerGone:
                    gone = True  # raised outside the task group, which would wrap it
                tg.cancel_scope.cancel()
        finally:  # an unexpected error too: the bytes the socket carried stay counted
            if self._wire is not None:
                self._wire_done += self._wire.received
                self._wire = None
        if gone:
            raise _ConsumerGone
        if ended is None:  # the watchdog cancelled it
            return _Ended("stall", f"no frame for {self._silence:g} s")
        return ended

    async def _watchdog(self, scope: anyio.CancelScope) -> None:
        while True:
            deadline = self._last_sign + self._silence
            if self._clock.now() >= deadline:
                scope.cancel()
                return
            await self._clock.sleep_until(deadline)

    async def _connect_and_read(self, http: httpx.AsyncClient, sink: _Sink) -> _Ended:
        try:
            async with aconnect_ws(
                self._url,
                http,
                keepalive_ping_interval_seconds=None,  # Engine.IO has its own heartbeat
                max_message_size_bytes=_READ_CHUNK,
                session_class=self._session,
                headers=dict(self._offer),  # httpx-ws adds its own to the dict
            ) as ws:
                self._wire = ws.wire
                self._compressed = ws.deflate
                return await self._read(ws, sink)
        except _ConsumerGone:
            raise
        except BaseExceptionGroup as group:
            # httpx-ws's own task group wraps what leaves its session: unwrap ours, keep
            # an unexpected error as it is.
            consumer, rest = group.split(_ConsumerGone)
            if consumer is not None:
                raise _ConsumerGone from None
            if rest is None or rest.split(_CONNECTION_ERRORS)[1] is not None:
                raise
            return _Ended("network", _describe(rest))
        except _CONNECTION_ERRORS as exc:
            return _Ended(_reason_of(exc), _describe(exc))

    async def _read(self, ws: FeedSession, sink: _Sink) -> _Ended:
        """Frames until the connection ends; returns why it ended. The messages of one
        read of the socket are taken together (see _wsread.py) and their events handed over
        in lists of up to :data:`BATCH`; a control packet (a ping, the namespace joined)
        first hands over the events before it, so the order is kept."""
        clock = self._clock
        receive = _wsread.receiver(ws)
        hot = _eio.event_parts
        parse = _eio.parse
        sio_event = _eio.SioEvent
        text_message = wsproto.events.TextMessage
        generation = self._generation
        while True:
            try:
                messages = await receive()
            except WebSocketDisconnect as exc:
                return _Ended("closed", _closed(exc.code, exc.reason))
            now = clock.now()
            self._last_sign = now
            self._last_frame_at = now
            events: list[FeedEvent] = []
            for message in messages:
                if type(message) is str:  # a text frame, as _wsread.FrameReader reads it
                    text = message
                elif type(message) is text_message:
                    text = message.data
                else:
                    await sink.put(events)
                    events = []
                    if isinstance(message, wsproto.events.CloseConnection):
                        return _Ended("closed", _closed(message.code, message.reason))
                    self._frames += 1
                    if isinstance(message, wsproto.events.BytesMessage):
                        self._bytes += len(message.data)
                        self._report(SetAside("feed.frame", "(binary)", "a binary frame"))
                    continue
                self._frames += 1
                self._bytes += len(text) if text.isascii() else len(text.encode())
                # the hot path: a compact event, read without a packet object
                parts: tuple[str, str | None] | None = hot(text)
                if parts is None:
                    packet = parse(text)
                    if type(packet) is not sio_event:
                        await sink.put(events)
                        events = []
                        ended = await self._control(ws, packet, now, sink)
                        if ended is not None:
                            return ended
                        generation = self._generation
                        continue
                    parts = packet.name, packet.payload
                event = self._event(parts[0], parts[1], now, generation)
                if event is not None:
                    events.append(event)
                    if len(events) >= BATCH:
                        await sink.put(events)
                        events = []
            await sink.put(events)

    async def _control(
        self, ws: FeedSession, packet: _eio.Packet, now: float, sink: _Sink
    ) -> _Ended | None:
        """Everything but an event; an :class:`_Ended` when the connection must end."""
        if isinstance(packet, _eio.EioPing):
            await ws.send_text(_eio.pong(packet))
        elif isinstance(packet, _eio.EioOpen):
            self._open = packet
            # From now on the server promises a ping every interval, answered within the
            # timeout: silence beyond both means the connection is dead.
            self._silence = packet.ping_interval + packet.ping_timeout
            await ws.send_text(_eio.CONNECT)
        elif isinstance(packet, _eio.SioConnect):
            await self._joined(ws, packet, now, sink)
        elif isinstance(packet, _eio.EioClose):
            return _Ended("closed", "the server closed the session (Engine.IO close)")
        elif isinstance(packet, _eio.SioDisconnect):
            return _Ended("closed", "the server left the namespace")
        elif isinstance(packet, _eio.SioConnectError):
            return _Ended("refused", f"the server refused the namespace: {packet.message}")
        elif isinstance(packet, _eio.Odd):
            self._report(
                SetAside("feed.frame", packet.field, f"{packet.reason}: {packet.excerpt!r}")
            )
        return None

    async def _joined(
        self, ws: FeedSession, packet: _eio.SioConnect, now: float, sink: _Sink
    ) -> None:
        opened = self._open
        for game in self._games:
            await ws.send_text(_eio.encode_event("sub", {"name": game}))
        self._generation += 1
        self._connected_since = now
        connected = FeedConnected(
            generation=self._generation,
            at=now,
            sid=packet.sid or (opened.sid if opened else ""),
            games=self._games,
            ping_interval=opened.ping_interval if opened else 0.0,
            ping_timeout=opened.ping_timeout if opened else 0.0,
        )
        _log.info(
            "feed: connected (generation %d) to %s, subscribed to %s",
            connected.generation,
            self._base,
            ", ".join(self._games),
        )
        if self.on_connect is not None:
            try:
                self.on_connect(connected)
            except Exception:  # the hook must not take the feed down
                _log.exception("the feed's on_connect hook failed")
        await sink.put([connected])

    def _event(
        self, name: str, payload: str | None, now: float, generation: int
    ) -> FeedEvent | None:
        """The typed event ``name`` with ``payload`` (its JSON text), counted; ``None`` when
        it was set aside (or is the answer to a subscription)."""
        event: FeedEvent
        if name == "new" or name == "update":
            if payload is None:
                self._no_payload(name)
                return None
            listing = decode_item(FeedListing, payload, path=_PATHS[name])
            if isinstance(listing, SetAside):
                self._report(listing)
                return None
            event = FeedListingEvent("new" if name == "new" else "update", listing, now, generation)
        elif name == "removed":
            if payload is None:
                self._no_payload(name)
                return None
            removal = decode_item(FeedRemoval, payload, path=_PATHS[name])
            if isinstance(removal, SetAside):
                self._report(removal)
                return None
            event = FeedRemovalEvent(removal, now, generation)
        elif name == "subscribed" or name == "handshake":
            self._answered(name, payload)
            return None
        else:
            self._report(
                SetAside(
                    f"feed.{name[:40]}", "(event name)", "an event name the feed does not send"
                )
            )
            return None
        self._events[name] += 1
        self._last_event_at = now
        self._rate.add(now)
        return event

    def _no_payload(self, name: str) -> None:
        self._report(SetAside(f"feed.{name}", "(item)", "an event without a payload"))

    def _answered(self, name: str, payload: str | None) -> None:
        """``subscribed`` / ``handshake``: the server took a subscription (the game is
        named in the payload when it can be read)."""
        if name != "subscribed":
            return
        game = _game_of(payload)
        if game is not None:
            self._subscribed.add(game)

    def _report(self, item: SetAside) -> None:
        """Count it, log its kind once, tell the observer."""
        self._set_aside[item.field] = self._set_aside.get(item.field, 0) + 1
        if item.field not in self._logged_kinds:
            self._logged_kinds.add(item.field)
            _log.warning(
                "feed: set aside what could not be read (field %s), the feed goes on; "
                "further ones of this kind are only counted: %s",
                item.field,
                item,
            )
        if self.malformed_observer is not None:
            try:
                self.malformed_observer(FEED_ENDPOINT, item)
            except Exception:  # metrics must never break the feed
                _log.exception("the malformed-item observer failed")


class _AuthorizationTransport(httpx.AsyncBaseTransport):
    """Adds ``authorization: <key>`` to a private copy of each request (the feed's upgrade
    request), so the request httpx shows in logs and errors never carries it."""

    def __init__(self, inner: httpx.AsyncBaseTransport, key: Secret) -> None:
        self._inner = inner
        self._key = key

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        headers = httpx.Headers(request.headers)
        headers["authorization"] = self._key.reveal()
        outgoing = httpx.Request(
            request.method,
            request.url,
            headers=headers,
            stream=request.stream,
            extensions=request.extensions,
        )
        error: httpx.TransportError | None = None
        try:
            return await self._inner.handle_async_request(outgoing)
        except httpx.TransportError as exc:
            error = _scrubbed(exc, request, (self._key,))
        raise error

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __repr__(self) -> str:
        return f"_AuthorizationTransport({self._inner!r}, key={self._key!r})"


def _closed(code: int, reason: str | None = None) -> str:
    # the server's close, or one the client decided on what it read (1007 data that does
    # not inflate, 1009 a message past the cap, 1002 a protocol error): the reason says
    return f"the websocket closed (code {code}{f': {reason}' if reason else ''})"


def _game_of(payload: str | None) -> str | None:
    try:
        data = json.loads(payload) if payload else None
    except ValueError:
        return None
    if isinstance(data, dict):
        name = data.get("name", data.get("game"))
        return name if isinstance(name, str) else None
    return data if isinstance(data, str) else None


def _reason_of(exc: BaseException) -> str:
    if isinstance(exc, WebSocketDisconnect):
        return "closed"
    if isinstance(exc, FeedHandshakeError):
        return "refused"
    return "network"


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(inner) for inner in exc.exceptions)
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _check_feed_url(feed_url: object) -> str:
    if not isinstance(feed_url, str):
        raise ConfigError("feed_url must be a URL string", field="feed_url")
    parts = urllib.parse.urlsplit(feed_url.strip())
    scheme = {"ws": "http", "wss": "https"}.get(parts.scheme, parts.scheme)
    if scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError("feed_url must be an http(s) or ws(s) URL", field="feed_url")
    if parts.query or parts.fragment or parts.username or parts.password:
        # A key in the address would be logged with every connection: it goes in a header.
        raise ConfigError(
            "feed_url must not carry a query, a fragment or credentials", field="feed_url"
        )
    path = parts.path.rstrip("/")
    if path.endswith("/socket.io"):
        path = path[: -len("/socket.io")]
    return urllib.parse.urlunsplit((scheme, parts.netloc, path, "", ""))


def _check_games(games: Sequence[str]) -> tuple[str, ...]:
    if isinstance(games, str) or not games:
        raise ConfigError("the feed needs a list of at least one game", field="games")
    chosen: list[str] = []
    for game in games:
        if not isinstance(game, str) or not game.strip():
            raise ConfigError(f"a game must be a non-empty name, got {game!r}", field="games")
        if game not in chosen:
            chosen.append(game)
    return tuple(chosen)


def _check_key(api_key: str | Secret | None) -> Secret | None:
    if api_key is None or isinstance(api_key, Secret):
        return api_key
    if isinstance(api_key, str) and api_key.strip():
        return APIKey(api_key.strip())
    raise ConfigError("the API key must be a non-empty string", field="api_key")
