"""Recording the market: the prices snapshot every 10 seconds, searches of the names that
changed (within the search limit), and the best-discount catalogue pages every minute,
each written with the time it arrived (:class:`RecordWriter`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .._clock import Clock
from .._errors import APIError, RateLimited
from .._limiter import RateLimiter
from ..client import MarketClient
from ..models import Listing
from ..snapshot import aparse_csv_snapshot
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


@dataclass
class RecorderStats:
    snapshots: int = 0
    searches: int = 0
    catalogue_pages: int = 0
    errors: int = 0


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
    ) -> None:
        self.client = client
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
        """Record until ``duration`` seconds of the clock have passed (or cancelled)."""
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
