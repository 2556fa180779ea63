"""The ``market`` reference: rolling price statistics learned from what snipe already sees.

Sans-I/O and synchronous, like the rest of the deciding code: the engine feeds it the
events of each snapshot diff (:meth:`MarketBook.observe`), the phases of searched listings
(:meth:`MarketBook.learn_phases`), and asks it for :class:`MarketStats`.

**What counts as an observation.** A price at which a listing *stayed listed* for
``hold`` seconds (default 10 minutes): each new listing and each price drop of a snapshot
diff waits in a queue; when it is ``hold`` old, the listing is looked up in the snapshot
tracker's current state, and only if it is still listed at that same price does its price
count. A bait listing (put up cheap and pulled within minutes) therefore never enters any
statistic, however many there are; a listing bought within minutes does not either, which
makes the references a little conservative (they describe asks that held, the prices a
reseller competes with). The queue costs a few bytes per event and nothing per unchanged
row, so the 1.3-million-row diff is never walked again (``bench/bench_reference.py``).

**What is kept.** Per key (base name, phase or ``None``), per time bucket (``window / 28``,
6 h for the default 7 days): a histogram of 1% log bins (:mod:`._sketch`) and the exact
lowest price. A listing whose phase is known (written into its name, or learnt from a
search answer for its item id) counts both for its phase and for the name as a whole.
Statistics read the buckets of the last ``window``, so a bucket leaves the window whole:
the window is exact to within one bucket. Memory is bounded by keys x buckets x bins.

**No look-ahead.** An observation enters only once it is ``hold`` old *by the clock it is
fed*; in a backtest that clock is the replay's, and the snapshot state consulted is the
replay's as of that moment.
"""

from __future__ import annotations

import math
from array import array
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import cast

from .._money import Money
from ..rules import split_name
from ._series import NEVER, PRICE_MAX, Series, unpack
from ._sketch import RATIO, merge_into, quantile

__all__ = ["BUCKETS", "MarketBook", "MarketKey", "MarketStats", "StoredBucket"]

BUCKETS = 28
"""Time buckets per window."""

MarketKey = tuple[str, str | None]
"""(base name, Doppler phase or ``None`` for the name over every phase)."""

CurrentPrices = Callable[[Sequence[int | str]], Sequence[int]]
"""Item ids -> their price in the market now (-1: no longer listed, or without a price)."""

_LOG = math.log(RATIO)

_PENDING_LIMIT = 4_000_000
"""Events waiting for their hold at most; beyond, the oldest batches are dropped (and
counted): a market that re-lists everything at once must not exhaust memory."""


@dataclass(frozen=True, slots=True)
class MarketStats:
    """The ``market`` reference of one key over the window. Prices in USD x 1000.

    ``floor`` is the lowest price that stayed listed ``hold`` seconds (exact); ``p10``,
    ``p25`` and ``median`` are nearest-rank quantiles of those prices (within 0.5%, and
    never under ``floor``);
    ``observations`` how many there were; ``as_of`` when the latest of them was listed.
    """

    p10: Money
    p25: Money
    median: Money
    floor: Money
    observations: int
    as_of: float

    def value(self, statistic: str) -> Money:
        return int(getattr(self, statistic))


STATISTICS = ("p10", "p25", "median", "floor")


@dataclass(slots=True)
class StoredBucket:
    """One key's bucket as stored: its histogram, lowest price and latest listing time."""

    key: MarketKey
    bucket: int
    bins: dict[int, int]
    low: Money
    last: float


class _Batch:
    __slots__ = ("at", "entries", "ids", "prices")

    def __init__(self, at: float, ids: list[int | str], prices: array[int], entries: array[int]):
        self.at = at
        self.ids = ids
        self.prices = prices
        self.entries = entries


class MarketBook:
    """Rolling statistics per (name, phase); see the module docstring."""

    def __init__(
        self, *, window: float = 7 * 86400.0, hold: float = 600.0, phase_memory: int = 200_000
    ) -> None:
        if window <= 0 or hold < 0:
            raise ValueError("window must be positive and hold not negative")
        self.window = float(window)
        self.hold = float(hold)
        self.bucket_seconds = self.window / BUCKETS
        self._phase_memory = phase_memory
        self._series: dict[MarketKey, Series] = {}
        # market name -> index into _entries: (base key, phase key or None, ask phase)
        self._entry_of: dict[str, int] = {}
        self._entries: list[tuple[MarketKey, MarketKey | None, bool]] = []
        self._pending: deque[_Batch] = deque()
        self._pending_count = 0
        self._phase_of: dict[str, str] = {}
        self._expired_below = -(2**62)
        self._dirty_keys: set[MarketKey] = set()
        """Keys changed since :meth:`take_dirty`; each series knows its oldest changed
        bucket (a store writes that bucket and the later ones)."""
        self.dropped = 0
        """Events dropped unheld because the queue was full."""
        self.observations = 0
        """Observations counted since this book was made (restored ones not included)."""

    # -- feeding ---------------------------------------------------------------------------

    def observe(
        self, ids: Sequence[int | str], prices: Sequence[int], names: Sequence[str], at: float
    ) -> None:
        """New listings and price drops seen at ``at``: ``ids[i]`` listed at ``prices[i]``
        under the market name ``names[i]``. They count once they have held (:meth:`mature`)."""
        if not ids:
            return
        found: list[int | None] = list(map(self._entry_of.get, names))
        if None in found:  # names not seen before (the phase is read from each once)
            for i, ix in enumerate(found):
                if ix is None:
                    known = self._entry_of.get(names[i])
                    found[i] = self._entry(names[i]) if known is None else known
        entries = array("I", cast("list[int]", found))
        self._pending.append(_Batch(at, list(ids), array("q", prices), entries))
        self._pending_count += len(ids)
        while self._pending_count > _PENDING_LIMIT and len(self._pending) > 1:
            old = self._pending.popleft()
            self._pending_count -= len(old.ids)
            self.dropped += len(old.ids)

    def learn_phases(self, pairs: Iterable[tuple[str, str | None]]) -> None:
        """(item id, phase) of searched listings: the snapshot's names often lack the
        phase, a search answer has it."""
        phase_of = self._phase_of
        for item_id, phase in pairs:
            if phase:
                phase_of[item_id] = phase
        if len(phase_of) > self._phase_memory:
            for key in list(islice(phase_of, len(phase_of) - self._phase_memory // 2)):
                del phase_of[key]

    def due(self, now: float) -> bool:
        """Whether a batch of events has held long enough to be judged at ``now``."""
        return bool(self._pending) and self._pending[0].at + self.hold <= now

    def mature(self, now: float, current: CurrentPrices) -> int:
        """Count every waiting event that is ``hold`` old at ``now`` and still listed at
        its price (``current`` answers the market's prices now). Returns how many held."""
        held = 0
        pending = self._pending
        while pending and pending[0].at + self.hold <= now:
            batch = pending.popleft()
            self._pending_count -= len(batch.ids)
            held += self._count_held(batch, current(batch.ids))
        return held

    def _count_held(self, batch: _Batch, now_prices: Sequence[int]) -> int:
        # The hot part of a poll: one pass over a batch, the work of record() inlined.
        held = 0
        entries, phase_of, all_series = self._entries, self._phase_of, self._series
        at = batch.at
        bucket = math.floor(at / self.bucket_seconds)
        second = math.floor(at)
        log, floor = math.log, math.floor
        for item_id, price, entry, now_price in zip(
            batch.ids, batch.prices, batch.entries, now_prices, strict=True
        ):
            if now_price != price or not 0 < price <= PRICE_MAX:
                continue
            base, phased, ask = entries[entry]
            if phased is None and ask:
                phase = phase_of.get(str(item_id))
                if phase is not None:
                    phased = (base[0], phase)
            bin_ = floor(log(price) / _LOG + 1e-9)
            for key in (base,) if phased is None else (base, phased):
                series = all_series.get(key)
                if series is None:
                    series = all_series[key] = Series()
                series.add(bucket, bin_, price, second)
                if bucket < series.dirty:
                    series.dirty = bucket
                    self._dirty_keys.add(key)
            held += 1
        self.observations += held
        return held

    def record(self, key: MarketKey, price: Money, at: float) -> None:
        """Count one observation of ``price`` for ``key`` listed at ``at`` (tests and the
        brute-force comparison feed it directly)."""
        if not 0 < price <= PRICE_MAX:
            return
        bucket = math.floor(at / self.bucket_seconds)
        series = self._series.get(key)
        if series is None:
            series = self._series[key] = Series()
        series.add(bucket, math.floor(math.log(price) / _LOG + 1e-9), price, math.floor(at))
        if bucket < series.dirty:
            series.dirty = bucket
            self._dirty_keys.add(key)

    def _entry(self, name: str) -> int:
        parts = split_name(name)
        base: MarketKey = (parts.base_name, None)
        phased: MarketKey | None = (parts.base_name, parts.phase) if parts.phase else None
        ask = parts.phase is None and "Doppler" in name
        self._entries.append((base, phased, ask))
        ix = self._entry_of[name] = len(self._entries) - 1
        return ix

    # -- reading ---------------------------------------------------------------------------

    def first_bucket(self, now: float) -> int:
        """The oldest bucket inside the window at ``now``."""
        return math.floor((now - self.window) / self.bucket_seconds) + 1

    def stats(self, name: str, phase: str | None, now: float) -> MarketStats | None:
        """The statistics of ``(name, phase)`` over the window ending at ``now`` (only
        buckets that began by ``now``), or ``None`` without observations."""
        series = self._series.get((name, phase))
        if series is None:
            return None
        first, last = self.first_bucket(now), math.floor(now / self.bucket_seconds)
        total: dict[int, int] = {}
        low: int | None = None
        latest = -1
        for bucket, bucket_low, bucket_last, packed in series.records():
            if first <= bucket <= last:
                merge_into(total, unpack(packed))
                low = bucket_low if low is None or bucket_low < low else low
                latest = max(latest, bucket_last)
        if low is None:
            return None
        p10, p25, median = quantile(total, (0.10, 0.25, 0.50))
        assert p10 is not None
        assert p25 is not None
        assert median is not None
        # a bin's middle may lie under the lowest price seen in it: never show less
        p10, p25, median = max(p10, low), max(p25, low), max(median, low)
        return MarketStats(p10, p25, median, low, sum(total.values()), float(latest))

    def keys(self) -> Iterator[MarketKey]:
        return iter(self._series)

    def __len__(self) -> int:
        """Keys with at least one bucket."""
        return len(self._series)

    @property
    def pending(self) -> int:
        """Events waiting for their hold."""
        return self._pending_count

    def size(self) -> tuple[int, int]:
        """(buckets, bins) held: what memory grows with."""
        buckets = bins = 0
        for series in self._series.values():
            buckets += len(series)
            bins += series.bins()
        return buckets, bins

    # -- expiry and storage ----------------------------------------------------------------

    def expire(self, now: float) -> list[tuple[MarketKey, int]]:
        """Forget buckets that left the window; returns them (a store deletes them)."""
        first = self.first_bucket(now)
        if first <= self._expired_below:
            return []
        self._expired_below = first
        gone: list[tuple[MarketKey, int]] = []
        for key in list(self._series):
            series = self._series[key]
            gone.extend((key, bucket) for bucket in series.drop_before(first))
            if not len(series.data):
                del self._series[key]
                self._dirty_keys.discard(key)
        return gone

    def take_dirty(self) -> list[StoredBucket]:
        """The buckets changed since the last call, as they are now."""
        out = []
        for key in self._dirty_keys:
            series = self._series.get(key)
            if series is None:
                continue
            for bucket, low, last, packed in series.records():
                if bucket >= series.dirty:
                    out.append(StoredBucket(key, bucket, unpack(packed), low, float(last)))
            series.dirty = NEVER
        self._dirty_keys = set()
        return out

    def restore(self, stored: Iterable[StoredBucket]) -> int:
        """Put back buckets read from a store (a restart); returns how many."""
        n = 0
        for item in stored:
            series = self._series.get(item.key)
            if series is None:
                series = self._series[item.key] = Series()
            series.put(item.bucket, item.bins, item.low, math.floor(item.last))
            n += 1
        return n
