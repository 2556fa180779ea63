"""The engine's reference prices: one :class:`ReferenceHub` per engine.

It owns the ``market`` book (fed from each snapshot diff and each search answer), the
price lists (``service.*`` from ``GET /v1/prices``, ``file.*`` from paths or URLs) and the
last answers of the plugins' price sources (:meth:`PriceSource.fetch`, every
``PriceSource.every`` seconds), each with the time it was fetched, and the reference file
on disk. Only the sources the rules name are fetched, and never on the buying path:
decisions read what is held (:meth:`ReferenceHub.held_prices`), with its age.
:meth:`ReferenceHub.quotes` gives the :class:`~engine.rules.Quote` tables of an
evaluation batch; :meth:`ReferenceHub.step` (the engine's ``references`` step, when
:meth:`ReferenceHub.next_due` says) refreshes the lists and sources on their periods and
writes the learned prices to the file (``prices.flush_every``).
A failing fetch is logged and counted, and the old list stays, its age growing: a rule's
``max_age`` is the guard against it.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

import anyio
import httpx

from .._clock import Clock
from .._errors import APIError, ConfigError
from ..models import Listing
from ..rules import ListSettings, NameView, PriceSource, PricesSettings, Quote
from ._book import BUCKETS, STATISTICS, MarketBook, MarketKey, MarketStats
from ._lists import parse_price_list, service_tables
from ._store import PriceList, PriceStore, store_path_for

if TYPE_CHECKING:
    from ..client import MarketClient
    from ..snapshot import SnapshotDiff


class PriceLookup(Protocol):
    """What answers the market's prices now (:meth:`SnapshotTracker.current_prices`)."""

    def current_prices(self, ids: Iterable[int | str]) -> list[int]: ...


__all__ = ["ReferenceHub", "SourceReading", "StoreMode"]

StoreMode = Literal["read-write", "read-only", "none"]
"""How a hub uses its reference file (see :meth:`ReferenceHub.open`)."""

log = logging.getLogger("snipe.reference")

SERVICE_SOURCES = ("service.platform_price", "service.min")


@dataclass(frozen=True, slots=True)
class SourceReading:
    """One source's reference for one (name, phase), as ``snipe prices`` shows it."""

    source: str
    price: int | None
    observations: int | None
    as_of: float | None
    note: str = ""


class ReferenceHub:
    """See the module docstring. Build with :meth:`open` (a file) or directly (memory)."""

    def __init__(
        self,
        settings: PricesSettings | None = None,
        *,
        clock: Clock,
        wanted: Iterable[str] | None = None,
        store: PriceStore | None = None,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        self.settings = settings or PricesSettings()
        self.clock = clock
        market = self.settings.market
        self.book = MarketBook(window=market.window, hold=market.hold)
        self.store = store
        self.lists: dict[str, PriceList] = {}
        self._http = http
        self.wanted = None if wanted is None else frozenset(wanted)
        """The sources the rules name (``None``: all, for ``snipe prices``): only these
        are quoted per batch, and the service list is fetched only when one is named."""
        self.fetch_service = any(n.startswith("service.") for n in self.wanted or ())
        self._market_quoted = wanted is None or any(n.startswith("market.") for n in wanted)
        """Whether :meth:`quotes` gives the ``market.*`` tables (a rule names one)."""
        self._held: tuple[dict[str, dict[str, int]], dict[str, float]] | None = None
        """:meth:`held_prices` as last made (made again when a source's answer comes)."""
        self._due: dict[str, float] = {}
        self._next_flush: float | None = None
        self.sources: dict[str, PriceSource] = {}
        """The plugins' price sources the rules name (see :meth:`use_sources`)."""
        self.fetched: dict[str, tuple[float, dict[str, int]]] = {}
        """Plugin source -> (when its last good answer came, {name: price})."""
        self.errors: dict[str, str] = {}
        """Source -> the last fetch error (cleared by a good fetch)."""
        self.set_aside: dict[str, int] = {}
        """Source -> rows set aside in its last list."""
        self.list_observer: Callable[[str, str, float, bytes], None] | None = None
        """Told ``(source, origin, time, bytes)`` of every price list read (``snipe run
        --record`` keeps each version, so a replay reads the list as it was)."""
        self.list_reader: Callable[[str, float], bytes | None] | None = None
        """Reads a price list as it was at a time instead of as it is now (a backtest of a
        recording that kept its lists' versions); ``None`` from it: read it now."""

    @classmethod
    @asynccontextmanager
    async def open(
        cls,
        settings: PricesSettings | None,
        *,
        clock: Clock,
        ledger: str | os.PathLike[str] | None,
        wanted: Iterable[str] | None = None,
        http: httpx.AsyncClient | None = None,
        store_mode: StoreMode = "read-write",
    ) -> AsyncIterator[ReferenceHub]:
        """A hub with its file (``prices.store``, else beside ``ledger``; none for an
        in-memory ledger) opened and restored; written and closed on exit.

        ``store_mode``: ``read-only`` restores an existing file and never writes it (a dry
        run); ``none`` neither reads nor writes it (a backtest: references learned later,
        or live, must not reach earlier decisions, and a replay must not change the
        trader's file)."""
        settings = settings or PricesSettings()
        path = settings.store or (store_path_for(ledger) if ledger is not None else None)
        if store_mode == "none" or (
            store_mode == "read-only" and (path is None or not await anyio.Path(path).exists())
        ):
            path = None
        store = None
        if path is not None:
            store = await PriceStore.open(path, bucket_seconds=settings.market.window / BUCKETS)
        hub = cls(settings, clock=clock, wanted=wanted, store=store, http=http)
        try:
            if store is not None:
                await hub.restore()
                if store_mode == "read-only":
                    hub.store = None
                    await store.aclose()
                    store = None
            yield hub
        finally:
            with anyio.CancelScope(shield=True):
                try:
                    if store is not None:
                        await hub.flush()
                finally:
                    await hub.aclose()
                    if store is not None:
                        await store.aclose()

    async def restore(self) -> None:
        assert self.store is not None
        buckets = self.book.restore(await self.store.load_market())
        self.book.expire(self.clock.now())
        for price_list in await self.store.load_lists():
            self.lists[price_list.source] = price_list
        if self.store.dropped_on_open:
            log.warning(
                "reference file %s: %d learned buckets were written with another "
                "prices.market.window and were dropped",
                self.store.path,
                self.store.dropped_on_open,
            )
        log.info(
            "reference prices restored from %s: %d buckets, %d names, %d lists",
            self.store.path,
            buckets,
            len(self.book),
            len(self.lists),
        )

    # -- learning ---------------------------------------------------------------------------

    def observe_diff(self, diff: SnapshotDiff, tracker: PriceLookup, now: float) -> None:
        """Feed one snapshot diff (new listings and drops wait for their hold), and count
        the waiting events that have held by ``now`` (``tracker`` answers the market's
        prices now: a :class:`~engine.snapshot.SnapshotTracker`, or several games' at once)."""
        if not diff.first and len(diff):
            ids, prices, names = diff.columns()
            self.book.observe(ids, prices, names, now)
        if self.book.due(now):
            self.book.mature(now, tracker.current_prices)

    def learn_phases(self, listings: Iterable[Listing]) -> None:
        self.book.learn_phases((x.item_id, x.phase) for x in listings if x.phase)

    # -- reading ----------------------------------------------------------------------------

    def quotes(
        self, listings: Iterable[Listing], view: Callable[[str], NameView], now: float
    ) -> dict[str, dict[MarketKey, Quote]]:
        """The quote tables of the hub's sources (those the rules name) for the keys of
        ``listings``."""
        market = self._market_quoted
        if not market and not self.lists:  # per feed event: nothing to quote, said soon
            return {}
        wanted = self.wanted
        lists = [s for s in self.lists if wanted is None or s in wanted]
        if not market and not lists:
            return {}
        keys: set[MarketKey] = set()
        for listing in listings:
            v = view(listing.name)
            keys.add((v.base_name, listing.phase or v.phase))
        tables: dict[str, dict[MarketKey, Quote]] = {}
        if market:
            tables.update((f"market.{s}", {}) for s in STATISTICS)
        for source in lists:
            tables[source] = {}
        for key in keys:
            stats = self.book.stats(key[0], key[1], now) if market else None
            if stats is not None:
                for statistic in STATISTICS:
                    tables[f"market.{statistic}"][key] = Quote(
                        stats.value(statistic), stats.observations, stats.as_of
                    )
            for source in lists:
                price_list = self.lists[source]
                price = price_list.prices.get(key)
                if price:
                    tables[source][key] = Quote(price, None, price_list.fetched_at)
        return tables

    def readings(self, name: str, phase: str | None, now: float) -> list[SourceReading]:
        """Every source's reference for ``(name, phase)`` (``snipe prices``)."""
        out = []
        stats: MarketStats | None = self.book.stats(name, phase, now)
        for statistic in STATISTICS:
            if stats is None:
                out.append(SourceReading(f"market.{statistic}", None, 0, None, "no observations"))
            else:
                out.append(
                    SourceReading(
                        f"market.{statistic}",
                        stats.value(statistic),
                        stats.observations,
                        stats.as_of,
                    )
                )
        for source in sorted({*SERVICE_SOURCES, *self._list_sources(), *self.lists}):
            price_list = self.lists.get(source)
            if price_list is None:
                out.append(SourceReading(source, None, None, None, "never fetched"))
                continue
            price = price_list.prices.get((name, phase))
            note = "" if price else "not in the list"
            out.append(SourceReading(source, price, None, price_list.fetched_at, note))
        return out

    def _list_sources(self) -> list[str]:
        return [f"file.{name}" for name in self.settings.lists]

    # -- fetching ---------------------------------------------------------------------------

    def use_sources(self, sources: Mapping[str, PriceSource]) -> None:
        """Fetch, on their own periods, those of the registered price ``sources`` that the
        rules name and that have something to fetch (``every`` set)."""
        self.sources = {
            name: source
            for name, source in sources.items()
            if source.every is not None and (self.wanted is None or name in self.wanted)
        }

    def held_prices(self) -> tuple[dict[str, dict[str, int]], dict[str, float]]:
        """What decisions read of the plugin sources: ``{source: {name: price}}`` as last
        fetched, and ``{source: when}``. Never fetches: the buying path does not wait.
        Made once per answer (every decision batch, every feed event, reads them): the
        same mappings until the next, never to be changed by the reader."""
        held = self._held
        if held is None:
            prices = {name: table for name, (_, table) in self.fetched.items()}
            held = self._held = prices, {name: at for name, (at, _) in self.fetched.items()}
        return held

    def next_due(self) -> float:
        """When :meth:`step` next has something to do: the earliest list (or plugin
        source) whose period has passed, or the next write of the learned prices."""
        due = self._next_flush
        if due is None:
            return -math.inf  # never stepped: at once
        # asked once per feed event by a backtest's driver (Engine.next_due): no list made
        # (comparisons, not min: a builtin min call costs about a thousand instructions)
        if self.fetch_service:
            at = self._due_of("service")
            if at < due:
                due = at
        for name in self.settings.lists:
            at = self._due_of(f"file.{name}")
            if at < due:
                due = at
        for name in self.sources:
            at = self._due.get(name, -math.inf)
            if at < due:
                due = at
        return due

    async def step(
        self,
        client: MarketClient | None,
        now: float,
        *,
        names: Callable[[], Sequence[str]] = lambda: (),
    ) -> None:
        """Refresh what is due and write the learned prices when their time has come: one
        step of the engine's ``references`` kind (live and backtest alike). ``names``
        gives the names the rules watch now."""
        if self._next_flush is None:
            self._next_flush = now + self.settings.flush_every
        await self.refresh_due(client, now)
        for name, source in self.sources.items():
            if now >= self._due.get(name, -math.inf):
                await self._refresh_source(name, source, names())
        if now >= self._next_flush:
            self._next_flush = now + self.settings.flush_every
            try:
                await self.flush()
            except Exception as exc:  # a cache: never a reason to stop buying
                self.errors["store"] = f"{type(exc).__name__}: {exc}"
                log.exception("writing the reference file failed; kept in memory")

    async def refresh_due(self, client: MarketClient | None, now: float) -> None:
        """Fetch every list whose period has passed (a list restored from the file is due
        once its age reaches its period)."""
        if self.fetch_service and client is not None and self._is_due("service", now):
            await self._refresh("service", self.settings.service.every, self._fetch_service(client))
        for name, settings in self.settings.lists.items():
            source = f"file.{name}"
            if self._is_due(source, now):
                await self._refresh(source, settings.every, self._fetch_list(source, settings))

    def _is_due(self, source: str, now: float) -> bool:
        return now >= self._due_of(source)

    def _due_of(self, source: str) -> float:
        due = self._due.get(source)
        if due is None:
            fetched = self.lists.get(SERVICE_SOURCES[0] if source == "service" else source, None)
            every = (
                self.settings.service.every
                if source == "service"
                else self.settings.lists[source[5:]].every
            )
            due = fetched.fetched_at + every if fetched is not None else -math.inf
            self._due[source] = due
        return due

    async def _refresh(self, source: str, every: float, fetch: Any) -> None:
        now = self.clock.now()
        self._due[source] = now + every
        try:
            lists: list[PriceList] = await fetch
        except Exception as exc:  # a reference list is never a reason to stop the engine
            self.errors[source] = str(exc)
            if isinstance(exc, APIError | ConfigError | OSError | httpx.HTTPError):
                log.warning("price source %s: fetch failed, keeping the last list: %s", source, exc)
            else:
                log.exception("price source %s: fetch failed, keeping the last list", source)
            # a failed fetch is retried sooner than a whole period, never more than once a minute
            self._due[source] = now + min(every, max(60.0, every / 10))
            return
        self.errors.pop(source, None)
        for price_list in lists:
            self.lists[price_list.source] = price_list
            self.set_aside[price_list.source] = price_list.set_aside
            if self.store is not None:
                try:
                    await self.store.save_list(price_list)
                except Exception as exc:  # a cache: the list in memory is what counts
                    self.errors["store"] = f"{type(exc).__name__}: {exc}"
                    log.exception("writing %s to the reference file failed", source)

    async def _refresh_source(self, name: str, source: PriceSource, names: Sequence[str]) -> None:
        """One plugin source's fetch; a failure keeps the last answer (its age grows)."""
        every = source.every or 60.0
        self._due[name] = self.clock.now() + every
        try:
            answer = await source.fetch(names)
            table = {str(k): int(v) for k, v in answer.items()}
        except Exception as exc:  # a plugin's failure must never stop buying
            self.errors[name] = f"{type(exc).__name__}: {exc}"
            log.warning("price source %s: fetch failed, keeping the last answer: %r", name, exc)
            return
        self.errors.pop(name, None)
        self.fetched[name] = (self.clock.now(), table)
        self._held = None

    async def _fetch_service(self, client: MarketClient) -> list[PriceList]:
        items = []
        async with client.prices(game=self.settings.service.game) as stream:
            async for item in stream:
                items.append(item)
        if stream.set_aside:  # the client logged each kind once and counted every row
            log.debug(
                "GET /v1/prices: %d row(s) set aside, first: %s",
                len(stream.set_aside),
                stream.set_aside[0],
            )
        now = self.clock.now()
        return [
            PriceList(source, table, now, "GET /v1/prices", len(stream.set_aside))
            for source, table in service_tables(items).items()
        ]

    async def _read_list(self, settings: ListSettings) -> bytes:
        if settings.path is not None:
            return await anyio.Path(settings.path).read_bytes()
        assert settings.url is not None
        if self._http is None:
            self._http = httpx.AsyncClient(timeout=30.0, follow_redirects=False)
        # errors name the address without its query (httpx's would show it whole)
        try:
            response = await self._http.get(settings.url)
        except httpx.HTTPError as exc:
            raise ConfigError(
                f"cannot fetch the price list ({type(exc).__name__})", location=settings.origin
            ) from None
        if response.status_code != 200:
            raise ConfigError(
                f"the price list answered HTTP {response.status_code}", location=settings.origin
            )
        return response.content

    async def _fetch_list(self, source: str, settings: ListSettings) -> list[PriceList]:
        data = None
        if self.list_reader is not None:
            data = self.list_reader(source, self.clock.now())
        if data is None:
            data = await self._read_list(settings)
        if self.list_observer is not None:
            self.list_observer(source, settings.origin, self.clock.now(), data)
        rows = parse_price_list(
            data, origin=settings.origin, fmt=settings.format, unit=settings.unit
        )
        if rows.set_aside:
            log.warning(
                "price list %s: %d row(s) set aside, first: %s",
                source,
                len(rows.set_aside),
                rows.set_aside[0],
            )
        now = self.clock.now()
        return [PriceList(source, rows.prices, now, settings.origin, len(rows.set_aside))]

    async def flush(self) -> None:
        """Write the learned buckets that changed, and delete those that left the window."""
        gone = self.book.expire(self.clock.now())
        changed = self.book.take_dirty()
        if self.store is not None and (changed or gone):
            await self.store.save_market(changed, gone)

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()

    def describe(self) -> Mapping[str, Any]:
        """Counters for the status line and tests."""
        buckets, bins = self.book.size()
        return {
            "names": len(self.book),
            "buckets": buckets,
            "bins": bins,
            "pending": self.book.pending,
            "observations": self.book.observations,
            "lists": {k: len(v.prices) for k, v in self.lists.items()},
        }
