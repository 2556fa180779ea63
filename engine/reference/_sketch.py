"""A bounded histogram of prices: log-scale bins 1% wide, quantiles by nearest rank.

Why bins and not the prices themselves: the whole market lists about a billion prices a
week; keeping them would not fit. A bin is 1% wide, so a quantile read from the bins is the
bin of the exact (nearest-rank) quantile, returned as the bin's middle: within half a
percent of the exact value, which is finer than any discount a rule asks for. Pure
functions over plain ``dict[int, int]`` (bin -> count); tested against a sort of the raw
prices (tests/reference/test_sketch.py).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

__all__ = [
    "MAX_BINS",
    "RATIO",
    "add",
    "bin_of",
    "merge_into",
    "quantile",
    "value_of",
]

RATIO = 1.01
"""Width of a bin: its upper edge is 1% above its lower edge."""

MAX_BINS = 96
"""Bins kept per histogram; beyond that the two highest are merged (the low quantiles and
the median, which references read, keep their precision while the top of a wide range
loses it). 96 bins of 1% span a factor of 2.6."""

_LOG = math.log(RATIO)


def bin_of(price: int) -> int:
    """The bin of a positive ``price`` (USD x 1000): ``RATIO ** bin <= price``."""
    return math.floor(math.log(price) / _LOG + 1e-9)


def value_of(bin_: int) -> int:
    """The price shown for a bin: its geometric middle, rounded (its own bin, always)."""
    return max(1, round(float(RATIO ** (bin_ + 0.5))))


def add(hist: dict[int, int], bin_: int, count: int = 1) -> None:
    """Count ``count`` prices in ``bin_``, keeping at most :data:`MAX_BINS` bins."""
    hist[bin_] = hist.get(bin_, 0) + count
    if len(hist) > MAX_BINS:
        top, below = sorted(hist)[-2:][::-1]
        hist[below] += hist.pop(top)


def merge_into(total: dict[int, int], hist: Mapping[int, int]) -> None:
    """Add every count of ``hist`` into ``total`` (no bin limit: a temporary merge)."""
    for bin_, count in hist.items():
        total[bin_] = total.get(bin_, 0) + count


def quantile(hist: Mapping[int, int], qs: Iterable[float]) -> list[int | None]:
    """The nearest-rank quantiles ``qs`` (each in (0, 1]) of the prices counted in
    ``hist``, as bin values; ``None`` each when ``hist`` is empty.

    Nearest rank: with ``n`` prices sorted, quantile ``q`` is the ``ceil(q * n)``-th.
    """
    wanted = list(qs)
    n = sum(hist.values())
    if n == 0:
        return [None] * len(wanted)
    ranks = [max(1, math.ceil(q * n - 1e-9)) for q in wanted]
    out: list[int | None] = [None] * len(wanted)
    order = sorted(range(len(wanted)), key=ranks.__getitem__)
    seen = 0
    at = 0
    for bin_ in sorted(hist):
        seen += hist[bin_]
        while at < len(order) and ranks[order[at]] <= seen:
            out[order[at]] = value_of(bin_)
            at += 1
        if at == len(order):
            break
    return out
