"""Sending notices without ever slowing buying.

:meth:`Delivery.offer` never waits: it puts the notice on each interested channel's
bounded queue, and when a queue is full (its receiver is down or slow) the notice is
dropped for that channel and counted. One background task per channel sends, retrying
failures (connection errors, 5xx, 429) with exponential backoff on the injected clock; a
notice that still fails after ``retries`` is counted as failed.

Secrets (a Discord webhook address, a Telegram token in the URL path, a signing key) are
kept out of logs by sending through the transport directly (httpx's client logs every
URL) and by reporting failures by their type and HTTP status only.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

import anyio
import httpx
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from .._clock import Clock
from .._notifiers import Channel
from ._events import Notice

__all__ = ["ChannelStats", "Delivery", "DeliverySettings"]

log = logging.getLogger("snipe.notify")


@dataclass(frozen=True)
class DeliverySettings:
    queue_size: int = 100
    """Notices waiting per channel; more are dropped (and counted)."""
    retries: int = 5
    """Attempts after the first one, for failures that may pass."""
    backoff: float = 2.0
    """Seconds before the first retry; doubled each time up to ``max_backoff``."""
    max_backoff: float = 300.0
    timeout: float = 10.0
    """Seconds for one attempt (real time: it bounds network I/O)."""


@dataclass
class ChannelStats:
    """What happened to the notices offered to one channel."""

    sent: int = 0
    failed: int = 0
    """Given up on after the retries, or refused by the receiver (4xx but 429)."""
    dropped: int = 0
    """Never sent because the channel's queue was full."""
    retries: int = 0
    last_error: str | None = None


class _Failure(Exception):
    def __init__(self, description: str, *, retry: bool, wait: float | None = None) -> None:
        super().__init__(description)
        self.description = description
        self.retry = retry
        self.wait = wait


@dataclass
class _Lane:
    channel: Channel
    send: MemoryObjectSendStream[Notice]
    receive: MemoryObjectReceiveStream[Notice]
    stats: ChannelStats = field(default_factory=ChannelStats)
    dropping: bool = False
    """Drops are logged once per outage (until a notice gets through), not one by one."""


class Delivery:
    """The channels' queues and senders. Run :meth:`run` in a task group; call
    :meth:`offer` from anywhere in the same event loop."""

    def __init__(
        self,
        channels: Sequence[Channel],
        *,
        clock: Clock,
        settings: DeliverySettings = DeliverySettings(),
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._clock = clock
        self.settings = settings
        self._transport = transport
        self._lanes: list[_Lane] = []
        self._pending = 0
        self._idle = anyio.Event()
        self._idle.set()
        for channel in channels:
            send, receive = anyio.create_memory_object_stream[Notice](settings.queue_size)
            self._lanes.append(_Lane(channel, send, receive))

    @property
    def stats(self) -> dict[str, ChannelStats]:
        """Per channel name."""
        return {lane.channel.name: lane.stats for lane in self._lanes}

    @property
    def channels(self) -> list[Channel]:
        return [lane.channel for lane in self._lanes]

    def offer(self, notice: Notice) -> None:
        """Queue ``notice`` for every channel that wants its kind; never waits."""
        for lane in self._lanes:
            if notice.kind not in lane.channel.events:
                continue
            try:
                lane.send.send_nowait(notice)
                self._pending += 1
                if self._idle.is_set():
                    self._idle = anyio.Event()
            except anyio.WouldBlock:
                lane.stats.dropped += 1
                if not lane.dropping:
                    lane.dropping = True
                    log.warning(
                        "notifications to %s are being dropped: %d waiting (receiver down or"
                        " slow); the count is in the metrics and `snipe status`",
                        lane.channel.name,
                        self.settings.queue_size,
                    )
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                lane.stats.dropped += 1

    async def run(self) -> None:
        """Send until cancelled (one task per channel)."""
        transport = self._transport or httpx.AsyncHTTPTransport(retries=0)
        try:
            async with anyio.create_task_group() as tg:
                for lane in self._lanes:
                    tg.start_soon(self._drain, lane, transport)
        finally:
            self.close()
            if self._transport is None:
                with anyio.CancelScope(shield=True):
                    await transport.aclose()

    def close(self) -> None:
        """Close the queues: later offers are dropped (:meth:`run` does it on the way out;
        call it for a delivery that never ran)."""
        for lane in self._lanes:
            lane.send.close()
            lane.receive.close()

    async def _drain(self, lane: _Lane, transport: httpx.AsyncBaseTransport) -> None:
        async for notice in lane.receive:
            try:
                await self._deliver(lane, notice, transport)
            finally:
                self._pending -= 1
                if self._pending == 0:
                    self._idle.set()

    async def flush(self) -> None:
        """Wait until every queued notice is sent or given up on (bound it with a
        timeout: a receiver that is down keeps its notices retrying)."""
        while not self._idle.is_set():
            await self._idle.wait()

    async def _deliver(
        self, lane: _Lane, notice: Notice, transport: httpx.AsyncBaseTransport
    ) -> None:
        settings = self.settings
        delay = settings.backoff
        for attempt in range(settings.retries + 1):
            try:
                await self._attempt(lane.channel, notice, transport)
            except _Failure as failure:
                lane.stats.last_error = failure.description
                if not failure.retry or attempt == settings.retries:
                    lane.stats.failed += 1
                    log.warning(
                        "notification to %s failed: %s (%s)",
                        lane.channel.name,
                        failure.description,
                        "given up" if failure.retry else "not retried",
                    )
                    return
                lane.stats.retries += 1
                wait = min(max(delay, failure.wait or 0.0), settings.max_backoff)
                await self._clock.sleep(wait)
                delay = min(delay * 2, settings.max_backoff)
            else:
                lane.stats.sent += 1
                lane.dropping = False
                return

    async def _attempt(
        self, channel: Channel, notice: Notice, transport: httpx.AsyncBaseTransport
    ) -> None:
        try:
            request = channel.request(notice, self._clock.now())
        except Exception as exc:  # a plugin's channel with a bug: this notice cannot go
            why = f"could not build the request ({type(exc).__name__})"
            raise _Failure(why, retry=False) from None
        request.extensions["timeout"] = httpx.Timeout(self.settings.timeout).as_dict()
        status: int | None = None
        retry_after: str | None = None
        error: str | None = None
        with anyio.move_on_after(self.settings.timeout * 2):
            try:
                response = await transport.handle_async_request(request)
                try:
                    await response.aread()
                finally:
                    await response.aclose()
                status = response.status_code
                retry_after = response.headers.get("retry-after")
            except Exception as exc:  # whatever the network or a transport does
                # the type only: an httpx error's text or request may carry the URL
                error = type(exc).__name__
        if status is None:
            raise _Failure(error or "timed out", retry=True)
        if 200 <= status < 300:
            return
        if status == 429 or status >= 500:
            raise _Failure(f"HTTP {status}", retry=True, wait=_seconds(retry_after))
        raise _Failure(f"HTTP {status}", retry=False)


def _seconds(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None
