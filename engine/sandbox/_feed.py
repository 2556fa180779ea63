"""The live listing feed: Engine.IO 4 / Socket.IO over a websocket at ``/socket.io/``.

What the live service pushes (see the README's "The live listing feed" and the
scenario format for its faults), served from the same market the interface answers from:
every change the market writes to :attr:`Market.changes <._market.Market.changes>` (an
arrival, a reprice, a departure, a purchase) goes to every connection subscribed to its
game, in order, as it is played on market time. Nothing is replayed: a connection sees
only what happens while it is open.

The frames (sans-I/O, :func:`open_packet`, :func:`event_frame`, :func:`listing_payload`)::

    server  0{"sid":..,"upgrades":[],"pingInterval":25000,"pingTimeout":20000,"maxPayload":..}
    client  40                      server  40{"sid":..}
    client  42["sub",{"name":"csgo"}]
    server  42["subscribed",{"name":"csgo"}]  42["handshake",{"game":"csgo",..}]
    server  42["new",{listing}]  42["update",{listing}]  42["removed",{game,item_id,name,price}]
    server  2 (every pingInterval)  client  3 (within pingTimeout, or the connection is dropped)

Each connection runs four tasks: the reader (client packets), the pinger, the ticker (plays
the market up to each scheduled change on the sandbox's clock) and the pusher (sends what
the log holds). A purchase between two scheduled changes wakes the pusher through the log's
``on_record`` hook.
"""

from __future__ import annotations

import contextlib
import json
import logging
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
from starlette.requests import Request as WebRequest
from starlette.responses import JSONResponse
from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState

from ._http import rfc3339
from ._market import Change, Listing

if TYPE_CHECKING:
    from ._sandbox import Sandbox

__all__ = [
    "FeedConfig",
    "FeedHub",
    "event_frame",
    "feed_polling_refused",
    "listing_payload",
    "open_packet",
    "removed_payload",
    "serve_feed",
]

log = logging.getLogger(__name__)

FEED_PATH = "/socket.io/"


@dataclass(frozen=True, slots=True)
class FeedConfig:
    """The feed's heartbeat, in market seconds (the sandbox's clock), and the largest
    message it accepts."""

    ping_interval: float = 25.0
    ping_timeout: float = 20.0
    max_payload: int = 1_000_000

    def __post_init__(self) -> None:
        if not (self.ping_interval > 0 and self.ping_timeout > 0):
            raise ValueError("ping_interval and ping_timeout must be positive")


# -- frames (sans-I/O) -------------------------------------------------------------------


def _dumps(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def open_packet(sid: str, config: FeedConfig) -> str:
    """Engine.IO's open packet (``0`` + JSON)."""
    return "0" + _dumps(
        {
            "sid": sid,
            "upgrades": [],
            "pingInterval": round(config.ping_interval * 1000),
            "pingTimeout": round(config.ping_timeout * 1000),
            "maxPayload": config.max_payload,
        }
    )


def event_frame(name: str, payload: Any) -> str:
    """A Socket.IO event on the default namespace (``42`` + JSON array)."""
    return "42" + _dumps([name, payload])


def listing_payload(listing: Listing, price: int, now: float) -> dict[str, Any]:
    """A listing as the feed writes it: the phase inside the name, ``item_id`` a string,
    no paint seed, no sticker wear or value; some fields as the live feed varies them."""
    item_id = listing.item_id
    names = [sticker.name for sticker in listing.stickers]
    reference = listing.platform_price
    entry: dict[str, Any] = {
        "auto": item_id % 7 == 0,
        "classid": None if item_id % 9 == 0 else str(5_000_000_000 + item_id % 1_000_003),
        "float": listing.float_value,
        "game": listing.game,
        "instance_id": None if item_id % 9 == 0 else str(item_id % 11),
        "item_id": str(item_id),
        "name": listing.snapshot_name,
        "paint_index": None if listing.float_value is None else item_id % 1000,
        "phase": listing.phase or "",
        "platform_id": str(76_561_198_000_000_000 + item_id % 9_999_991),
        # the suggested price: a number, or on some listings the same number as a string
        "platform_price": str(reference) if item_id % 6 == 0 else reference,
        "price": price,
        "sticker_names": names if names or item_id % 3 else None,
    }
    if listing.locked(now) and listing.unlock_at is not None:
        entry["unlock_at"] = rfc3339(listing.unlock_at)
        entry["send_until"] = rfc3339(listing.send_until or listing.unlock_at)
    return entry


def removed_payload(listing: Listing, price: int) -> dict[str, Any]:
    return {
        "game": listing.game,
        "item_id": str(listing.item_id),
        "name": listing.snapshot_name,
        "price": price,
    }


def change_frame(change: Change) -> str:
    if change.kind == "removed":
        return event_frame("removed", removed_payload(change.listing, change.price))
    return event_frame(change.kind, listing_payload(change.listing, change.price, change.at))


# -- the hub: one per sandbox --------------------------------------------------------------


class FeedHub:
    """What the feed's connections share: the wake-up when the market changes, and the
    count of connections (for ground truth)."""

    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox
        self.connections = 0
        self.opened = 0
        self.dropped_for_silence = 0
        self.malformed_sent = 0
        self.faults_fired: list[dict[str, Any]] = []
        self._changed: anyio.Event | None = None
        sandbox.market.changes.on_record = self._pulse

    def _pulse(self) -> None:
        if self._changed is not None:
            self._changed.set()
            self._changed = None

    async def wait_change(self) -> None:
        """Until the market's log gets its next change."""
        if self._changed is None:
            self._changed = anyio.Event()
        await self._changed.wait()


# -- one connection ----------------------------------------------------------------------


class _Closed(Exception):
    """The connection is over (the client left, or the server ends it)."""


class _Dropped(_Closed):
    """The server ends the connection abruptly (a ``disconnect`` fault)."""


_SEND_FAULTS = frozenset({"stall", "disconnect", "duplicate", "out_of_order", "burst", "malformed"})
# Frames a decoder must survive, sent in turn by ``malformed`` faults.
MALFORMED = (
    '42["new",{"item_id":"3100',
    '42["update",{"item_id":12,"price":"cheap","name":null}]',
    '42["removed"]',
    '42{"new":"not an array"}',
    "7unknown packet type",
    '42["new",null]',
)


class FeedConnection:
    def __init__(self, sandbox: Sandbox, websocket: WebSocket) -> None:
        self.sandbox = sandbox
        self.ws = websocket
        self.config = sandbox.config.feed
        self.sid = secrets.token_urlsafe(15)
        self.games: set[str] = set()
        self.joined = False
        self._pong: anyio.Event | None = None
        self._lock = anyio.Lock()  # one writer at a time; a stall holds it
        self._cursor = sandbox.market.changes.cursor
        self._held: str | None = None  # an event sent after the next (out_of_order)
        self.dropped = False

    async def send(self, frame: str) -> None:
        async with self._lock:
            await self._send_now(frame)

    async def _send_now(self, frame: str) -> None:
        try:
            await self.ws.send_text(frame)
        except (WebSocketDisconnect, RuntimeError, OSError):
            raise _Closed from None

    async def run(self) -> None:
        await self.ws.send_text(open_packet(self.sid, self.config))
        async with anyio.create_task_group() as tg:

            async def until_done(task: Callable[[], Awaitable[None]]) -> None:
                try:
                    await task()
                except _Dropped:
                    self.dropped = True
                except _Closed:
                    pass
                tg.cancel_scope.cancel()

            for task in (self._read, self._ping, self._tick, self._push):
                tg.start_soon(until_done, task)

    # -- the four tasks -------------------------------------------------------------------

    async def _read(self) -> None:
        while True:
            message = await self.ws.receive()
            if message["type"] == "websocket.disconnect":
                return
            text = message.get("text")
            if text is None:
                continue  # binary frames mean nothing here
            if len(text) > self.config.max_payload:
                return  # as Engine.IO servers do: the connection is closed
            await self._packet(text)

    async def _packet(self, text: str) -> None:
        if text == "3":
            if self._pong is not None:
                self._pong.set()
        elif text.startswith("40"):
            self.joined = True
            await self.send("40" + _dumps({"sid": secrets.token_urlsafe(15)}))
        elif text.startswith("41") or text == "1":
            raise _Closed
        elif text.startswith("42") and self.joined:
            await self._event(text[2:].lstrip("0123456789"))  # an ack id may follow 42

    async def _event(self, body: str) -> None:
        try:
            data = json.loads(body)
        except ValueError:
            return
        if not (isinstance(data, list) and data and data[0] == "sub" and len(data) > 1):
            return
        game = data[1].get("name") if isinstance(data[1], dict) else None
        if game not in self.sandbox.market.config.games:
            return
        self.games.add(game)
        await self.send(event_frame("subscribed", {"name": game}))
        await self.send(
            event_frame(
                "handshake",
                {"game": game, "sid": self.sid, "server_time": rfc3339(self.sandbox.now())},
            )
        )

    async def _ping(self) -> None:
        clock = self.sandbox.clock
        while True:
            await clock.sleep(self.config.ping_interval)
            self._pong = anyio.Event()
            await self.send("2")
            if not await self._answered(self._pong):
                self.sandbox.feed.dropped_for_silence += 1
                return

    async def _answered(self, pong: anyio.Event) -> bool:
        answered = False
        async with anyio.create_task_group() as tg:

            async def timer() -> None:
                await self.sandbox.clock.sleep(self.config.ping_timeout)
                tg.cancel_scope.cancel()

            async def waiter() -> None:
                nonlocal answered
                await pong.wait()
                answered = True
                tg.cancel_scope.cancel()

            tg.start_soon(timer)
            tg.start_soon(waiter)
        return answered

    async def _tick(self) -> None:
        """Play the market up to each of its scheduled changes as the clock reaches it."""
        market, clock = self.sandbox.market, self.sandbox.clock
        while True:
            due = market.next_event_time()
            await clock.sleep_until(due if due is not None else clock.now() + 60.0)
            self.sandbox.advance()

    async def _push(self) -> None:
        log_ = self.sandbox.market.changes
        while True:
            changes, self._cursor, lost = log_.read(self._cursor)
            if lost:
                log.warning("feed: a client fell %d changes behind; dropping it", lost)
                return
            for change in changes:
                if change.listing.game in self.games:
                    await self._send_event(change_frame(change))
            if self._cursor == log_.cursor:
                if self._held is not None:  # nothing came after it: it goes now
                    held, self._held = self._held, None
                    await self.send(held)
                await self.sandbox.feed.wait_change()

    async def _send_event(self, frame: str) -> None:
        """Send one event, shaped by the feed faults that fire for it."""
        hub = self.sandbox.feed
        fired = {fault.kind: fault for fault in self.sandbox.feed_faults.draw(_SEND_FAULTS)}
        for kind in fired:
            hub.faults_fired.append({"kind": kind, "at": self.sandbox.now()})
        if "stall" in fired:
            async with self._lock:  # nothing leaves meanwhile, pings included
                await self.sandbox.clock.sleep(fired["stall"].delay)
        if "disconnect" in fired:
            raise _Dropped
        if "malformed" in fired:
            await self.send(MALFORMED[hub.malformed_sent % len(MALFORMED)])
            hub.malformed_sent += 1
        if "out_of_order" in fired and self._held is None:
            self._held = frame
            return
        await self.send(frame)
        if "duplicate" in fired:
            await self.send(frame)
        if self._held is not None:
            held, self._held = self._held, None
            await self.send(held)
        if "burst" in fired:
            await self._burst(fired["burst"].rate, fired["burst"].delay)

    async def _burst(self, rate: int, seconds: float) -> None:
        """``rate`` events per second for ``seconds``: the subscribed games' listings as
        they are, as ``update`` events, paced on the clock."""
        market, clock = self.sandbox.market, self.sandbox.clock
        listings = [li for li in market.listings.values() if li.game in self.games]
        total = round(rate * seconds)
        if not listings or total <= 0:
            return
        start = clock.now()
        for n in range(total):
            due = start + n / rate
            if clock.now() < due:
                await clock.sleep_until(due)
            listing = listings[n % len(listings)]
            if listing.item_id in market.listings:
                await self.send(event_frame("update", listing_payload(listing, listing.price, due)))


async def serve_feed(sandbox: Sandbox, websocket: WebSocket) -> None:
    """The websocket endpoint: refuse what is not Engine.IO 4 over a websocket, then run
    one connection until either side ends it."""
    query = websocket.query_params
    if query.get("EIO") != "4" or query.get("transport") != "websocket":
        await websocket.close(code=1008, reason="EIO=4&transport=websocket only")
        return
    await websocket.accept()
    hub = sandbox.feed
    hub.connections += 1
    hub.opened += 1
    connection = FeedConnection(sandbox, websocket)
    try:
        await connection.run()
    finally:
        hub.connections -= 1
        # an abrupt end returns without closing: the server then closes with 1011
        if not connection.dropped and websocket.application_state is WebSocketState.CONNECTED:
            with anyio.CancelScope(shield=True):
                with contextlib.suppress(RuntimeError, OSError, WebSocketDisconnect):
                    await websocket.close()


async def feed_polling_refused(request: WebRequest) -> JSONResponse:
    """Plain HTTP on the feed's path: long-polling is not offered (Engine.IO's answer to an
    unknown transport)."""
    return JSONResponse({"code": 0, "message": "Transport unknown"}, status_code=400)
