"""Recording the market: the prices snapshot every 10 seconds, searches of the names that
changed (within the search limit), the best-discount catalogue pages every minute, and
the live listing feed's events as they come (when a :class:`~engine.client.FeedClient`
is given), each written with the time it arrived (:class:`RecordWriter`).

The feed follows ``account.feed`` as the engine does: ``on`` keeps trying, ``auto`` gives
up after :data:`~engine.sniper.AUTO_ATTEMPTS` connection attempts without a handshake
(the recording then holds snapshots alone, like a version 1 one)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import anyio

from .._clock import Clock
from .._errors import APIError, RateLimited
from .._limiter import RateLimiter
from ..client import (
    FeedBatch,
    FeedClient,
    FeedConnected,
    FeedListingEvent,
    FeedRemovalEvent,
    MarketClient,
)
from ..models import Listing
from ..snapshot import aparse_csv_snapshot
from ._feedrecord import event_time
from ._format import RecordWriter, Row

__all__ = ["Recorder", "RecorderSettings", "listing_entry"]


@dataclass(frozen=True)
class RecorderSettings:
    snapshot_every: float = 10.0
    catalogue_every: float = 60.0
    catalogue_pages: int = 2
    """Pages of 100 of the best-discount catalogue listings recorded each time."""
    searches: bool = True
    """Search the names whose listings changed, within the search rate limit."""
    feed: str = "auto"
    """``account.feed`` for the recorder's feed client: ``auto`` or ``on`` (``off``: give
    no client)."""


@dataclass
class RecorderStats:
    snapshots: int = 0
    searches: int = 0
    catalogue_pages: int = 0
    errors: int = 0
    feed_events: int = 0
    """Feed listings and removals received (written once the first snapshot is)."""
    feed_connects: int = 0
    feed_unavailable: bool = False


def listing_entry(listing: Listing) -> dict[str, object]:
    """A listing as the engine received it, back in its wire form (JSON-ready)."""
    return listing.model_dump(mode="json", by_alias=True, exclude_none=True, exclude_defaults=True)


class Recorder:
    """Records what the engine would receive from ``client`` into ``writer``."""

    def __init__(
        self,
        client: MarketClient,
        writer: RecordWriter,
        clock: Clock,
        limiter: RateLimiter,
        *,
        settings: RecorderSettings = RecorderSettings(),
        on_error: Callable[[str], None] | None = None,
        feed: FeedClient | None = None,
    ) -> None:
        self.client = client
        self.feed = feed
        self.writer = writer
        self.clock = clock
        self.limiter = limiter
        self.settings = settings
        self.stats = RecorderStats()
        self._prices: dict[str, int] = {}
        self._pending: dict[str, None] = {}
        self._on_error = on_error or (lambda message: None)
        self._next_catalogue = float("-inf")

    async def run(self, duration: float | None = None) -> RecorderStats:
        """Record until ``duration`` seconds of the clock have passed (or cancelled); the
        feed alongside, when there is one."""
        if self.feed is None:
            return await self._poll(duration)
        async with anyio.create_task_group() as tg:
            tg.start_soon(self.record_feed)
            await self._poll(duration)
            tg.cancel_scope.cancel()
        return self.stats

    async def record_feed(self) -> None:
        """Run the feed client and write every event it yields, until cancelled (or, in
        ``auto``, until the feed is given up: it never answered)."""
        if self.feed is None:
            return
        # in lists, one per socket read: a burst costs a wake-up per list, not per event
        send, receive = anyio.create_memory_object_stream[FeedBatch](64)
        async with anyio.create_task_group() as tg:
            tg.start_soon(self.feed.run_batches, send)
            if self.settings.feed == "auto":
                tg.start_soon(self._give_up_unless_answered, tg.cancel_scope)
            async with receive:
                async for batch in receive:
                    for event in batch:
                        self.writer.feed(event_time(event), event)
                        if isinstance(event, FeedListingEvent | FeedRemovalEvent):
                            self.stats.feed_events += 1
                        elif isinstance(event, FeedConnected):
                            self.stats.feed_connects += 1

    async def _give_up_unless_answered(self, scope: anyio.CancelScope) -> None:
        from ..sniper import AUTO_ATTEMPTS  # the engine's rule for account.feed: auto

        assert self.feed is not None
        while not self.stats.feed_connects:
            if self.feed.health().attempts >= AUTO_ATTEMPTS:
                self.stats.feed_unavailable = True
                self._error(
                    f"the listing feed at {self.feed.url} does not answer (feed: auto): "
                    "recording without it"
                )
                scope.cancel()
                return
            await self.clock.sleep(1.0)

    async def _poll(self, duration: float | None) -> RecorderStats:
        stop = None if duration is None else self.clock.now() + duration
        while stop is None or self.clock.now() < stop:
            started = self.clock.now()
            await self.step()
            due = started + self.settings.snapshot_every
            await self.clock.sleep_until(due if stop is None else min(due, stop))
        return self.stats

    async def step(self) -> None:
        """One snapshot, then the searches the limit allows now, then the catalogue if due."""
        await self.poll_snapshot()
        if self.settings.searches:
            await self.search_changed()
        if self.clock.now() >= self._next_catalogue and self.settings.catalogue_pages:
            await self.catalogue()
            self._next_catalogue = self.clock.now() + self.settings.catalogue_every

    async def poll_snapshot(self) -> None:
        try:
            async with self.client.snapshot_csv(include_hold=self.writer.include_hold) as stream:
                snapshot = await aparse_csv_snapshot(stream)
        except APIError as exc:
            self._error(f"snapshot: {exc}")
            return
        rows: list[Row] = []
        prices = self._prices
        fresh: dict[str, int] = {}
        for listing in snapshot:
            if listing.price is None:
                continue
            rows.append(
                (
                    listing.item_id,
                    listing.name,
                    listing.price,
                    listing.unlock_at,
                    listing.send_until,
                )
            )
            fresh[listing.item_id] = listing.price
            old = prices.get(listing.item_id)
            if prices and (old is None or listing.price < old):
                self._pending[listing.name] = None
        self._prices = fresh
        self.writer.snapshot(self.clock.now(), rows)
        self.stats.snapshots += 1

    async def search_changed(self) -> None:
        while self._pending:
            used, limit = self.limiter.usage("search")
            if limit is not None and used >= limit:
                return
            batch = list(self._pending)[:50]
            try:
                answer = await self.client.search_items_by_name(
                    batch, include_hold=self.writer.include_hold
                )
            except RateLimited:
                return
            except APIError as exc:
                self._error(f"search: {exc}")
                return
            for name in batch:
                self._pending.pop(name, None)
            items = {n: [listing_entry(x) for x in found] for n, found in answer.items.items()}
            self.writer.search(self.clock.now(), batch, None, items)
            self.stats.searches += 1

    async def catalogue(self) -> None:
        cursor: str | None = None
        for _ in range(self.settings.catalogue_pages):
            try:
                page = await self.client.get_items_list(
                    order_by="discount",
                    order="desc",
                    limit=100,
                    cursor=cursor,
                    include_hold=self.writer.include_hold,
                )
            except APIError as exc:
                self._error(f"catalogue: {exc}")
                return
            query = {"order_by": "discount", "order": "desc", "cursor": cursor}
            self.writer.catalogue(self.clock.now(), query, [listing_entry(x) for x in page.items])
            self.stats.catalogue_pages += 1
            if not page.has_more or not page.next_cursor:
                return
            cursor = page.next_cursor

    def _error(self, message: str) -> None:
        self.stats.errors += 1
        self._on_error(message)
