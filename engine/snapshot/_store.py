"""The compact in-memory form of a whole-market snapshot.

A full market is about 1.3 million listings. Holding each as a Python object would cost
several hundred megabytes, so a :class:`Snapshot` keeps parallel typed arrays instead, one
slot per row: the item id (an ``int64`` when every id is a plain decimal number, which is
what the service sends; a list of strings otherwise), the price, an index into a table of
distinct names, and, when the snapshot carries trade-lock columns, the two instants.
:class:`SnapshotListing` objects are made on demand, one at a time.

:class:`_Builder` receives columns of raw cells (``bytes``) a block of rows at a time, checks
them with whole-column operations (one C-level pass per column rather than Python code per
row), and appends them to the arrays. Only a block that fails a check is walked row by row,
to name the row in the error.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from itertools import count, islice, repeat
from typing import NamedTuple, TypeAlias

from .._money import Money
from ._origin import Origin

__all__ = ["Snapshot", "SnapshotListing"]

UNKNOWN_PRICE = -1
"""Stored for an empty price cell: the listing exists, its price is not known."""

NO_INSTANT = 0
"""Stored for an empty ``unlock_at``/``send_until`` cell (epoch 0 is never a real one)."""

_MAX_NUMERIC_ID_DIGITS = 18  # always fits an int64
_DIGITS_AND_COMMA = b"0123456789,"

IdColumn: TypeAlias = "array[int] | list[str]"
RowOf = Callable[[int], int]
"""Maps a row's position in a block to its row number in the source."""


class SnapshotListing(NamedTuple):
    """One row of a snapshot. ``price`` is ``None`` when the snapshot left it empty;
    ``unlock_at``/``send_until`` are epoch seconds, ``None`` on a listing that is not
    trade-locked (or when the snapshot has no such columns)."""

    item_id: str
    name: str
    price: Money | None
    unlock_at: int | None = None
    send_until: int | None = None


class Snapshot:
    """Every listing of the market at one moment, held in compact arrays.

    Rows keep the order of the source. Look a listing up by row (``snapshot[i]``) or by item
    id (:meth:`get`); iterate to get every :class:`SnapshotListing` lazily. ``timestamp`` is
    the epoch second the service stamped on it, when known.
    """

    __slots__ = (
        "_ids",
        "_index_cache",
        "_name_ix",
        "_names",
        "_prices",
        "_send_until",
        "_unlock_at",
        "timestamp",
    )

    def __init__(
        self,
        *,
        ids: IdColumn,
        prices: array[int],
        name_ix: array[int],
        names: dict[int, str],
        unlock_at: array[int] | None = None,
        send_until: array[int] | None = None,
        timestamp: int | None = None,
    ):
        self._ids = ids
        self._prices = prices
        self._name_ix = name_ix
        self._names = names
        self._unlock_at = unlock_at
        self._send_until = send_until
        self._index_cache: dict[int | str, int] | None = None
        self.timestamp = timestamp

    @classmethod
    def empty(cls, *, timestamp: int | None = None) -> Snapshot:
        """A snapshot with no listings."""
        return cls(
            ids=array("q"), prices=array("q"), name_ix=array("I"), names={}, timestamp=timestamp
        )

    def __len__(self) -> int:
        return len(self._prices)

    def __repr__(self) -> str:
        return (
            f"<Snapshot {len(self)} listings, {len(self._names)} names"
            f"{', with hold columns' if self.has_hold else ''}, timestamp={self.timestamp}>"
        )

    @property
    def has_hold(self) -> bool:
        """Whether the snapshot carried the ``unlock_at``/``send_until`` columns."""
        return self._unlock_at is not None

    @property
    def names(self) -> Sequence[str]:
        """The distinct item names, each once."""
        return tuple(self._names.values())

    @property
    def nbytes(self) -> int:
        """Approximate bytes held by the row arrays (not counting the lookup index)."""
        total = sum(
            col.itemsize * len(col)
            for col in (self._prices, self._name_ix, self._unlock_at, self._send_until)
            if col is not None
        )
        if isinstance(self._ids, array):
            return total + self._ids.itemsize * len(self._ids)
        return total + sum(map(len, self._ids)) + 57 * len(self._ids)

    def __getitem__(self, row: int) -> SnapshotListing:
        price = self._prices[row]
        return SnapshotListing(
            item_id=str(self._ids[row]),
            name=self._names[self._name_ix[row]],
            price=None if price == UNKNOWN_PRICE else price,
            unlock_at=_instant(self._unlock_at, row),
            send_until=_instant(self._send_until, row),
        )

    def __iter__(self) -> Iterator[SnapshotListing]:
        for row in range(len(self)):
            yield self[row]

    def __contains__(self, item_id: object) -> bool:
        return isinstance(item_id, str) and self._row_of(item_id) is not None

    def get(self, item_id: str) -> SnapshotListing | None:
        """The listing with this item id, or ``None``. The first call builds an id index
        (about 100 MB for a full market), kept until the snapshot goes."""
        row = self._row_of(item_id)
        return None if row is None else self[row]

    def _row_of(self, item_id: str) -> int | None:
        key: int | str = item_id
        if self.numeric_ids:
            if not _is_canonical_number(item_id):
                return None
            key = int(item_id)
        return self._index().get(key)

    @property
    def numeric_ids(self) -> bool:
        """Whether ids are held as integers (every id was a plain decimal number)."""
        return isinstance(self._ids, array)

    def _index(self) -> dict[int | str, int]:
        """Item id -> row, built on first use. With duplicate ids the last row wins."""
        if self._index_cache is None:
            ids = self._ids
            self._index_cache = dict(zip(ids, range(len(ids)), strict=True))
        return self._index_cache


def _instant(column: array[int] | None, row: int) -> int | None:
    if column is None:
        return None
    value = column[row]
    return None if value == NO_INSTANT else value


def _is_canonical_number(text: str) -> bool:
    return (
        text.isascii()
        and text.isdigit()
        and len(text) <= _MAX_NUMERIC_ID_DIGITS
        and (text == "0" or not text.startswith("0"))
    )


class _Builder:
    """Accumulates columns of raw cells into a :class:`Snapshot`, checking each block."""

    def __init__(self, origin: Origin, *, hold: bool):
        self.origin = origin
        self.ids: IdColumn = array("q")
        self.prices: array[int] = array("q")
        self.name_ix: array[int] = array("I")
        self.names: dict[int, str] = {}  # name code -> name
        self.name_ids: dict[bytes, int] = {}  # name as sent -> name code
        self.next_code = 0
        self.unlock_at: array[int] | None = array("q") if hold else None
        self.send_until: array[int] | None = array("q") if hold else None
        self.instants: dict[bytes, int] = {b"": NO_INSTANT}

    def add(
        self,
        ids: list[bytes],
        names: list[bytes],
        prices: list[bytes],
        unlock_at: list[bytes] | None,
        send_until: list[bytes] | None,
        *,
        first_row: int,
        row_numbers: Sequence[int] | None = None,
    ) -> None:
        """Append one block of rows. ``first_row`` is the row number of the block's first
        row; ``row_numbers`` gives each row's number when they are not consecutive."""

        def row_of(i: int) -> int:
            return row_numbers[i] if row_numbers is not None else first_row + i

        self._add_ids(ids, row_of)
        self._add_prices(prices, row_of)
        self._add_names(names, row_of)
        if self.unlock_at is not None and self.send_until is not None:
            self.unlock_at.extend(
                self._instants(unlock_at or [b""] * len(ids), "unlock_at", row_of)
            )
            self.send_until.extend(
                self._instants(send_until or [b""] * len(ids), "send_until", row_of)
            )

    def build(self, timestamp: int | None) -> Snapshot:
        self.instants = {}
        self.name_ids = {}
        return Snapshot(
            ids=self.ids,
            prices=self.prices,
            name_ix=self.name_ix,
            names=self.names,
            unlock_at=self.unlock_at,
            send_until=self.send_until,
            timestamp=timestamp,
        )

    def _add_ids(self, ids: list[bytes], row_of: RowOf) -> None:
        if b"" in ids:
            self.origin.malformed("empty item_id", row=row_of(ids.index(b"")), field="item_id")
        if isinstance(self.ids, array):
            joined = b",".join(ids)
            if (
                not joined.translate(None, _DIGITS_AND_COMMA)
                and not joined.startswith(b"0")
                and b",0" not in joined
            ):
                done = len(self.ids)
                try:
                    self.ids.extend(map(int, ids))
                    return
                except OverflowError:  # more digits than an int64 holds: keep ids as text
                    del self.ids[done:]
            # Ids are not all plain numbers: hold every id of the snapshot as text.
            self.ids = list(map(str, self.ids))
        try:
            self.ids.extend(map(bytes.decode, ids))
        except UnicodeDecodeError:
            row = next(i for i, raw in enumerate(ids) if not _utf8(raw))
            self.origin.malformed("item_id is not UTF-8 text", row=row_of(row), field="item_id")

    def _add_prices(self, prices: list[bytes], row_of: RowOf) -> None:
        digits = b"".join(prices)
        if digits and not (digits.isdigit() and digits.isascii()):
            row = next(i for i, raw in enumerate(prices) if raw and not raw.isdigit())
            self.origin.malformed(
                f"price {prices[row][:40]!r} is not a whole number of USD x 1000",
                row=row_of(row),
                field="price",
            )
        values = [int(p) if p else UNKNOWN_PRICE for p in prices] if b"" in prices else prices
        try:
            self.prices.extend(map(int, values))
        except OverflowError:
            row = next(i for i, raw in enumerate(prices) if raw and int(raw) >= 2**63)
            self.origin.malformed(
                f"price {prices[row][:40]!r} is too large", row=row_of(row), field="price"
            )

    def _add_names(self, names: list[bytes], row_of: RowOf) -> None:
        # One C-level pass: a name seen before gets its code back; a new one gets the next
        # number of a counter that runs once per row (so codes are unique, not dense), and
        # lands at the end of the dict, where the loop below finds it to decode it.
        known = self.name_ids
        before = len(known)
        self.name_ix.extend(map(known.setdefault, names, count(self.next_code)))
        self.next_code += len(names)
        for raw, code in islice(reversed(known.items()), len(known) - before):
            try:
                self.names[code] = raw.decode()
            except UnicodeDecodeError:
                self.origin.malformed(
                    "name is not UTF-8 text", row=row_of(names.index(raw)), field="name"
                )

    def _instants(self, cells: list[bytes], field: str, row_of: RowOf) -> list[int]:
        cache = self.instants
        values = list(map(cache.get, cells, repeat(-1)))
        if -1 in values:
            for i, value in enumerate(values):
                if value == -1:
                    raw = cells[i]
                    parsed = _parse_instant(raw)
                    if parsed is None:
                        self.origin.malformed(
                            f"{raw[:40]!r} is neither epoch seconds nor an RFC 3339 time",
                            row=row_of(i),
                            field=field,
                        )
                    values[i] = cache[raw] = parsed
        return values


def _utf8(raw: bytes) -> bool:
    try:
        raw.decode()
    except UnicodeDecodeError:
        return False
    return True


def _parse_instant(raw: bytes) -> int | None:
    """Epoch seconds (``1735689600``, ``"1735689600.0"``) or an RFC 3339 time."""
    text = raw.decode("ascii", "replace").strip()
    if text.replace(".", "", 1).isdigit():
        return int(float(text)) if "." in text else int(text)
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        return None
    return int(parsed.timestamp())
