"""What changed between two snapshots: new listings and price drops, as events.

The engine polls the whole-market snapshot and wants, each time, the few thousand listings
that are worth a look: ids it has not seen (or whose price was unknown) and ids whose price
fell. Raises, removals and unchanged rows are only counted.

The comparison touches every row, so it is done with C-level passes (``map`` over the
arrays and the previous snapshot's id index); Python code runs only for the rows that
changed, a few percent of the market.
"""

from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from itertools import compress, count, repeat
from operator import le, sub

from .._money import Money
from ._store import UNKNOWN_PRICE, Snapshot

__all__ = [
    "NameSummary",
    "NewListing",
    "PriceDrop",
    "SnapshotDiff",
    "SnapshotEvent",
    "diff_snapshots",
]

_ABSENT = -(2**62)
"""The previous price of a row whose id the previous snapshot did not have. Far below any
price, so ``price - _ABSENT`` is never 0 and such rows always show up as changed."""


@dataclass(frozen=True, slots=True)
class NewListing:
    """A listing with a known price that the previous snapshot did not have (or had without
    a price). ``unlock_at``/``send_until`` are set on a trade-locked listing."""

    item_id: str
    name: str
    price: Money
    unlock_at: int | None = None
    send_until: int | None = None


@dataclass(frozen=True, slots=True)
class PriceDrop:
    """A listing whose price fell from ``old_price`` to ``price`` since the previous
    snapshot."""

    item_id: str
    name: str
    old_price: Money
    price: Money
    unlock_at: int | None = None
    send_until: int | None = None


SnapshotEvent = NewListing | PriceDrop


@dataclass(frozen=True, slots=True)
class NameSummary:
    """For one item name: how many new listings and price drops it has, and the cheapest
    price among them. The engine searches the names with the cheapest candidates first."""

    name: str
    new: int
    drops: int
    cheapest: Money


class SnapshotDiff:
    """The changes from one snapshot to the next.

    Iterate it for the :data:`SnapshotEvent` s, in row order of the current snapshot
    (made lazily, one at a time). The counts are of rows: ``new`` and ``dropped`` (each has
    an event), ``raised``, ``unchanged``, ``removed`` (ids of the previous snapshot that are
    gone), and ``unpriced`` (rows of the current snapshot without a price, never an event).
    """

    __slots__ = (
        "_by_name",
        "_current",
        "_old",
        "_rows",
        "dropped",
        "first",
        "new",
        "raised",
        "removed",
        "unchanged",
        "unpriced",
    )

    def __init__(
        self,
        current: Snapshot,
        rows: array[int],
        old: array[int],
        *,
        first: bool,
        new: int,
        dropped: int,
        raised: int,
        removed: int,
        unchanged: int,
        unpriced: int,
    ):
        self._current = current
        self._rows = rows
        self._old = old
        self._by_name: dict[str, NameSummary] | None = None
        self.first = first
        self.new = new
        self.dropped = dropped
        self.raised = raised
        self.removed = removed
        self.unchanged = unchanged
        self.unpriced = unpriced

    def __repr__(self) -> str:
        return (
            f"<SnapshotDiff new={self.new} dropped={self.dropped} raised={self.raised} "
            f"removed={self.removed} unchanged={self.unchanged} unpriced={self.unpriced} "
            f"events={len(self)}>"
        )

    def __len__(self) -> int:
        """The number of events."""
        return len(self._rows)

    def __iter__(self) -> Iterator[SnapshotEvent]:
        current = self._current
        for row, old in zip(self._rows, self._old, strict=True):
            item_id, name, price, unlock_at, send_until = current[row]
            assert price is not None  # rows without a price never become events
            if old == _ABSENT:
                yield NewListing(item_id, name, price, unlock_at, send_until)
            else:
                yield PriceDrop(item_id, name, old, price, unlock_at, send_until)

    @property
    def by_name(self) -> Mapping[str, NameSummary]:
        """Per item name with at least one event: counts and the cheapest price."""
        if self._by_name is None:
            self._by_name = self._summarise()
        return self._by_name

    def names_cheapest_first(self) -> list[NameSummary]:
        """:attr:`by_name` ordered by cheapest candidate price, then name."""
        return sorted(self.by_name.values(), key=lambda s: (s.cheapest, s.name))

    def _summarise(self) -> dict[str, NameSummary]:
        current = self._current
        prices, name_ix = current._prices, current._name_ix
        tally: dict[int, list[int]] = {}  # name index -> [new, drops, cheapest]
        for row, old in zip(self._rows, self._old, strict=True):
            price = prices[row]
            entry = tally.get(name_ix[row])
            if entry is None:
                entry = tally[name_ix[row]] = [0, 0, price]
            entry[0 if old == _ABSENT else 1] += 1
            if price < entry[2]:
                entry[2] = price
        names = current._names
        return {
            names[ix]: NameSummary(names[ix], new, drops, cheapest)
            for ix, (new, drops, cheapest) in tally.items()
        }


def diff_snapshots(
    previous: Snapshot | None, current: Snapshot, *, report_all: bool = False
) -> SnapshotDiff:
    """Compare ``current`` with ``previous``.

    Without a previous snapshot (the first fetch) every priced listing counts as new, but
    no event is made unless ``report_all`` is true: on start-up the whole market is not news.
    Duplicate item ids are tolerated: the last row of an id in ``previous`` is the one
    compared against, and each row of ``current`` is judged on its own.
    """
    prices = current._prices
    unpriced = prices.count(UNKNOWN_PRICE)
    if previous is None:
        rows = array("I")
        if report_all:
            rows.extend(compress(count(), map(le, repeat(0), prices)))
        return SnapshotDiff(
            current,
            rows,
            array("q", [_ABSENT]) * len(rows),
            first=True,
            new=len(prices) - unpriced,
            dropped=0,
            raised=0,
            removed=0,
            unchanged=0,
            unpriced=unpriced,
        )

    if previous.numeric_ids == current.numeric_ids:
        index = previous._index()
        keys: Iterator[int | str] = iter(current._ids)
    else:
        index, keys = previous._str_index(), map(str, current._ids)
    missing = len(previous)
    # For each current row, the previous snapshot's row of the same id (or `missing`).
    prev_rows: list[int] = list(map(index.get, keys, repeat(missing)))
    old_prices = previous._prices + array("q", [_ABSENT])
    seen = bytearray(missing + 1)
    deque(map(seen.__setitem__, prev_rows, repeat(1)), maxlen=0)
    for row in previous._shadowed:
        seen[row] = 1
    removed = seen.count(0, 0, missing)

    rows, olds = array("I"), array("q")
    changed = new = dropped = raised = unpriced_changed = 0
    deltas = map(sub, prices, map(old_prices.__getitem__, prev_rows))
    for row in compress(count(), deltas):
        changed += 1
        price, old = prices[row], old_prices[prev_rows[row]]
        if price == UNKNOWN_PRICE:
            unpriced_changed += 1
        elif old < 0:  # absent before, or listed without a price
            new += 1
            rows.append(row)
            olds.append(_ABSENT)
        elif price < old:
            dropped += 1
            rows.append(row)
            olds.append(old)
        else:
            raised += 1
    # Rows with a zero delta are unchanged, except unpriced rows that were unpriced before.
    unchanged = len(prices) - changed - (unpriced - unpriced_changed)
    return SnapshotDiff(
        current,
        rows,
        olds,
        first=False,
        new=new,
        dropped=dropped,
        raised=raised,
        removed=removed,
        unchanged=unchanged,
        unpriced=unpriced,
    )
