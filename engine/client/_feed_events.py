"""What :class:`~engine.client.FeedClient` yields, how it backs off, and how it reports
its health: plain values, no I/O."""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass, field
from typing import Literal

from ..models import FeedListing, FeedRemoval

__all__ = [
    "Backoff",
    "FeedConnected",
    "FeedDisconnected",
    "FeedEvent",
    "FeedHealth",
    "FeedListingEvent",
    "FeedRemovalEvent",
]


@dataclass(frozen=True, slots=True)
class FeedListingEvent:
    """A ``new`` or ``update`` event: ``listing`` is a candidate for the rules.
    ``received_at`` is the client's clock when the frame arrived; ``generation`` the
    connection it came on (see :class:`FeedConnected`)."""

    kind: Literal["new", "update"]
    listing: FeedListing
    received_at: float
    generation: int


@dataclass(frozen=True, slots=True)
class FeedRemovalEvent:
    """A ``removed`` event: the listing left the market. Never a sale."""

    removal: FeedRemoval
    received_at: float
    generation: int


@dataclass(frozen=True, slots=True)
class FeedConnected:
    """The feed is (again) connected, the namespace joined and every game subscribed.

    ``generation`` counts the connections (1 for the first); everything between the end
    of generation ``n - 1`` and this event was never sent (the feed has no replay), so a
    consumer heals that gap (snapshot diff or searches) before trusting the feed again.
    """

    generation: int
    at: float
    sid: str
    games: tuple[str, ...]
    ping_interval: float
    ping_timeout: float


@dataclass(frozen=True, slots=True)
class FeedDisconnected:
    """Connection ``generation`` ended; ``reason`` is one of ``stall`` (no frame for
    pingInterval + pingTimeout), ``closed`` (the server closed it), ``network``,
    ``refused`` (the server refused the namespace), ``error`` (an error nobody planned
    for: the client's :meth:`~FeedClient.run` raised it, and its caller, the engine's
    ``FeedWatch``, tells this event itself and runs the client again after
    :meth:`~FeedClient.retry_delay`); ``detail`` says more, for a log."""

    generation: int
    at: float
    reason: str
    detail: str


FeedEvent = FeedListingEvent | FeedRemovalEvent | FeedConnected | FeedDisconnected


@dataclass(frozen=True, slots=True)
class Backoff:
    """Capped exponential backoff with jitter between connection attempts.

    Attempt ``n`` (0 for the first retry) waits between half and all of
    ``min(cap, initial * factor ** n)`` seconds ("equal jitter": never a burst of clients
    reconnecting at once, never a zero wait). A connection that stayed up for
    ``stable_after`` seconds starts the count again.
    """

    initial: float = 0.5
    factor: float = 2.0
    cap: float = 30.0
    stable_after: float = 30.0

    def __post_init__(self) -> None:
        if not (0 < self.initial <= self.cap) or self.factor < 1 or self.stable_after < 0:
            raise ValueError(f"a backoff needs 0 < initial <= cap and factor >= 1: {self}")

    def delay(self, attempt: int, rng: random.Random) -> float:
        """Seconds to wait before retry number ``attempt`` (0-based)."""
        # The exponent is bounded so that a long outage cannot overflow the float.
        base = min(self.cap, self.initial * self.factor ** min(attempt, 64))
        return base / 2 + rng.random() * base / 2


@dataclass(frozen=True, slots=True)
class FeedHealth:
    """The feed client's state for ``snipe status``, ``/healthz`` and the metrics.

    ``events`` counts decoded events per name (``new``, ``update``, ``removed``);
    ``set_aside`` counts what could not be read, per field label; ``disconnects`` counts
    ended connections per reason (see :class:`FeedDisconnected`). Times are the client's
    clock; ``bytes_received`` is the websocket messages' payload (UTF-8), without framing;
    ``wire_bytes_received`` is what the socket carried after the upgrade (frames as sent,
    compressed when ``compressed``: the connection under way, or the last one, runs with
    permessage-deflate; ``None`` before any connection);
    ``attempts`` counts the connections that ended or failed (each followed by a backoff).
    """

    connected: bool
    generation: int
    reconnects: int
    connected_since: float | None
    subscribed: tuple[str, ...]
    events: dict[str, int]
    set_aside: dict[str, int]
    disconnects: dict[str, int]
    frames_received: int
    bytes_received: int
    last_event_at: float | None
    last_frame_at: float | None
    events_per_second: float
    attempts: int
    compressed: bool | None = None
    wire_bytes_received: int = 0

    @property
    def events_received(self) -> int:
        return sum(self.events.values())

    def seconds_since_last_event(self, now: float) -> float | None:
        return None if self.last_event_at is None else max(0.0, now - self.last_event_at)


@dataclass(slots=True)
class EventRate:
    """Events per second over the last ``window`` whole seconds of the clock: one integer
    compare per event, a bucket per second."""

    window: int = 10
    _second: int | None = None
    _count: int = 0
    _past: deque[tuple[int, int]] = field(default_factory=deque)

    def add(self, now: float) -> None:
        second = int(now)
        if second == self._second:
            self._count += 1
            return
        if self._second is not None:
            self._past.append((self._second, self._count))
        self._second, self._count = second, 1
        while self._past and self._past[0][0] <= second - self.window:
            self._past.popleft()

    def per_second(self, now: float) -> float:
        """The mean over the last ``window`` seconds (the current one included)."""
        oldest = int(now) - self.window
        total = sum(count for second, count in self._past if second > oldest)
        if self._second is not None and self._second > oldest:
            total += self._count
        return total / self.window
