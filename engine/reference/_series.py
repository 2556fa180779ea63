"""One key's time buckets, packed into a single ``array('I')``.

Why packed: 30,000 names x 28 buckets as Python dicts cost over half a gigabyte; one flat
array per key costs a few bytes per bin (``bench/bench_reference.py``). Layout, buckets in
ascending order, each a record::

    [bucket, low, last, n, bin_0 << 20 | count_0, ..., bin_n-1 << 20 | count_n-1]

``low`` is the exact lowest price (USD x 1000, below 2**32), ``last`` the latest listing
time (epoch seconds), the packed bins sorted (so by bin), a count saturating at 2**20 - 1.
New observations land almost always in the last bucket, whose offset is kept, and a bin is
found with ``bisect`` (C).
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Iterator

from ._sketch import MAX_BINS

__all__ = ["COUNT_MAX", "NEVER", "PRICE_MAX", "Series", "pack", "unpack"]

_SHIFT = 20
COUNT_MAX = (1 << _SHIFT) - 1
PRICE_MAX = (1 << 32) - 1
_HEAD = 4
NEVER = 2**62


class Series:
    __slots__ = ("data", "dirty", "tail")

    def __init__(self) -> None:
        self.data: array[int] = array("I")
        self.tail = -1  # offset of the last record
        self.dirty = NEVER  # the oldest bucket changed since the book's take_dirty()

    def add(self, bucket: int, bin_: int, price: int, at: int) -> None:
        """Count one price (in ``bin_``) listed at ``at`` in ``bucket``."""
        data = self.data
        start = self.tail
        if start < 0 or data[start] < bucket:
            self.tail = len(data)
            data.extend((bucket, price, at, 1, bin_ << _SHIFT | 1))
            return
        if data[start] != bucket:
            start = self._find_or_make(bucket, price, at)
        if price < data[start + 1]:
            data[start + 1] = price
        if at > data[start + 2]:
            data[start + 2] = at
        lo = start + _HEAD
        hi = lo + data[start + 3]
        key = bin_ << _SHIFT
        at_bin = bisect_left(data, key, lo, hi)
        if at_bin < hi and data[at_bin] >> _SHIFT == bin_:
            if data[at_bin] & COUNT_MAX != COUNT_MAX:
                data[at_bin] += 1
            return
        data.insert(at_bin, key | 1)
        data[start + 3] += 1
        self._moved(start, 1)
        if data[start + 3] > MAX_BINS:  # merge the two highest bins
            top = hi  # the record's last packed value (one was inserted)
            below = top - 1
            merged = min(COUNT_MAX, (data[below] & COUNT_MAX) + (data[top] & COUNT_MAX))
            data[below] = (data[below] >> _SHIFT) << _SHIFT | merged
            del data[top]
            data[start + 3] -= 1
            self._moved(start, -1)

    def _moved(self, start: int, by: int) -> None:
        if self.tail > start:
            self.tail += by

    def _find_or_make(self, bucket: int, price: int, at: int) -> int:
        """The offset of ``bucket``'s record (an older one than the last), made empty
        (low ``price``, last ``at``) in its place when missing."""
        data = self.data
        offset = 0
        while offset < len(data) and data[offset] < bucket:
            offset += _HEAD + data[offset + 3]
        if offset < len(data) and data[offset] == bucket:
            return offset
        data[offset:offset] = array("I", (bucket, price, at, 0))
        if self.tail >= offset:
            self.tail += _HEAD
        return offset

    def records(self) -> Iterator[tuple[int, int, int, array[int]]]:
        """(bucket, low, last, packed bins) of every bucket, oldest first."""
        data = self.data
        offset = 0
        while offset < len(data):
            n = data[offset + 3]
            start = offset + _HEAD
            yield data[offset], data[offset + 1], data[offset + 2], data[start : start + n]
            offset = start + n

    def get(self, bucket: int) -> tuple[dict[int, int], int, int] | None:
        for found, low, last, packed in self.records():
            if found == bucket:
                return unpack(packed), low, last
        return None

    def put(self, bucket: int, bins: dict[int, int], low: int, last: int) -> None:
        """Set ``bucket``'s record (a restore)."""
        kept = [r for r in self.records() if r[0] != bucket]
        packed = pack(bins)
        kept.append((bucket, low, last, packed))
        self._rebuild(sorted(kept, key=lambda r: r[0]))

    def drop_before(self, first: int) -> list[int]:
        """Remove the buckets older than ``first``; returns them."""
        records = list(self.records())
        gone = [r[0] for r in records if r[0] < first]
        if gone:
            self._rebuild([r for r in records if r[0] >= first])
        return gone

    def _rebuild(self, records: list[tuple[int, int, int, array[int]]]) -> None:
        data: array[int] = array("I")
        tail = -1
        for bucket, low, last, packed in records:
            tail = len(data)
            data.extend((bucket, low, last, len(packed)))
            data.extend(packed)
        self.data, self.tail = data, tail

    def __len__(self) -> int:
        """Buckets held."""
        return sum(1 for _ in self.records())

    def bins(self) -> int:
        return sum(len(r[3]) for r in self.records())


def unpack(packed: array[int]) -> dict[int, int]:
    """Packed bins -> {bin: count}."""
    return {value >> _SHIFT: value & COUNT_MAX for value in packed}


def pack(bins: dict[int, int]) -> array[int]:
    """{bin: count} -> packed bins, sorted."""
    return array("I", sorted(b << _SHIFT | min(c, COUNT_MAX) for b, c in bins.items()))
