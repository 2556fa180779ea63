"""What changed between two snapshots: new listings and price drops, as events.

The engine polls the whole-market snapshot and wants, each time, the few thousand listings
that are worth a look: ids it has not seen (or whose price was unknown) and ids whose price
fell. Raises, removals and unchanged rows are only counted.

The comparison touches every row, so it is done with C-level passes (``map`` over the
arrays and the tracker's id index); Python code runs only for the rows that changed, a few
percent of the market.
"""

from __future__ import annotations

import os
from array import array
from collections import deque
from collections.abc import AsyncIterable, Generator, Iterable, Iterator, Mapping
from dataclasses import dataclass
from itertools import compress, count, islice, repeat
from operator import le, sub

import anyio.lowlevel

from .._money import Money
from ._changes import SnapshotChanges
from ._lines import LineState, TrackingParser, parse_changed_records, reconcile_moved
from ._origin import Origin
from ._store import NO_INSTANT, UNKNOWN_PRICE, IdColumn, Snapshot, _is_canonical_number

__all__ = [
    "NameSummary",
    "NewListing",
    "PriceDrop",
    "SnapshotDiff",
    "SnapshotEvent",
    "SnapshotTracker",
    "diff_snapshots",
]

_SLICE = 1 << 16
"""Rows per step of an update: a few milliseconds of work between two chances for other
tasks to run (see :meth:`SnapshotTracker.aupdate`)."""

_CSV_BLOCK_SIZE: int | None = None
"""Inflated bytes per block for :meth:`SnapshotTracker.update_csv` (``None``: the
parser's default); tests make it small."""

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
    ``first`` is true for the diff of the first snapshot, which has no previous one (every
    priced row counts as new; events only when asked for).
    """

    __slots__ = (
        "_by_name",
        "_current",
        "_old",
        "_rows",
        "_whole",
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
        whole: bool = True,
    ):
        self._current = current
        self._whole = whole
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
        ids, prices, names, name_ix = (
            current._ids,
            current._prices,
            current._names,
            current._name_ix,
        )
        unlock, send = current._unlock_at, current._send_until
        for row, old in zip(self._rows, self._old, strict=True):
            # Read the arrays directly (what Snapshot[row] does, without a listing object).
            item_id, name, price = str(ids[row]), names[name_ix[row]], prices[row]
            unlock_at = None if unlock is None or unlock[row] == NO_INSTANT else unlock[row]
            send_until = None if send is None or send[row] == NO_INSTANT else send[row]
            if old == _ABSENT:
                yield NewListing(item_id, name, price, unlock_at, send_until)
            else:
                yield PriceDrop(item_id, name, old, price, unlock_at, send_until)

    @property
    def snapshot(self) -> Snapshot | None:
        """The snapshot compared, when it was parsed whole: always for the first one and
        for :meth:`SnapshotTracker.update`; ``None`` when
        :meth:`SnapshotTracker.update_csv` parsed only the rows that changed."""
        return self._current if self._whole else None

    @property
    def by_name(self) -> Mapping[str, NameSummary]:
        """Per item name with at least one event: counts and the cheapest price."""
        if self._by_name is None:
            self._by_name = self._summarise()
        return self._by_name

    def columns(self) -> tuple[list[int | str], array[int], list[str]]:
        """The events as three columns: item ids (as the snapshot holds them: ``int`` for
        numeric ids), prices and names, in the order of iteration. Made with C-level
        passes: for consumers that handle every event (the ``market`` reference)."""
        current, rows = self._current, self._rows
        ids: list[int | str] = list(map(current._ids.__getitem__, rows))
        prices = array("q", map(current._prices.__getitem__, rows))
        names = list(map(current._names.__getitem__, map(current._name_ix.__getitem__, rows)))
        return ids, prices, names

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


class _Changes:
    """The rows whose known price differs from their id's previous price: new (absent
    before, or listed without a price), dropped (each an event), or raised (counted)."""

    __slots__ = ("dropped", "events", "new", "olds", "raised")

    def __init__(self) -> None:
        self.events: array[int] = array("I")
        self.olds: array[int] = array("q")
        self.new = self.dropped = self.raised = 0

    def judge(self, row: int, price: int, old: int) -> None:
        if old < 0:
            self.new += 1
            self.events.append(row)
            self.olds.append(_ABSENT)
        elif price < old:
            self.dropped += 1
            self.events.append(row)
            self.olds.append(old)
        else:
            self.raised += 1


class SnapshotTracker:
    """Remembers the market as of the last snapshot, to tell what the next one changed.

    Feed it each snapshot in turn with :meth:`update`, or each CSV body with
    :meth:`update_csv` (the fast way: after the first, only the rows whose bytes changed
    are parsed); each call returns the :class:`SnapshotDiff` against the one before. The
    first call only learns the market (no events unless ``report_all``).

    Why a tracker rather than comparing two snapshots: matching 1.3 million ids needs an
    id -> row index (a dict), and building one costs more than the lookups themselves. The
    tracker keeps its index from one snapshot to the next and patches it with the few
    percent of rows that changed, so each update does one lookup per row and no rebuild.
    Ids that disappear leave holes in its arrays; when holes pass a quarter of the rows it
    starts afresh from the current snapshot.
    """

    def __init__(self) -> None:
        self._index: dict[int | str, int] = {}  # item id -> state row
        self._ids: IdColumn = array("q")  # state row -> item id
        self._prices: array[int] = array("q")  # state row -> price (_ABSENT for a hole)
        self._holes = bytearray()  # 1 for a state row whose id is gone
        self._hole_count = 0
        self._unpriced_slots: int | None = None  # slots priced UNKNOWN_PRICE, when kept
        self._started = False
        self._busy = False
        self._lines: LineState | None = None  # the last CSV snapshot's rows, as hashes
        self._token: object | None = None  # the SnapshotChanges token of the last answer
        self._header: bytes | None = None  # the last CSV answer's header
        self.timestamp: int | None = None
        """The timestamp of the last snapshot seen."""

    def __len__(self) -> int:
        """How many distinct ids the last snapshot had."""
        return len(self._index)

    def current_prices(self, ids: Iterable[int | str]) -> list[int]:
        """The price each id has in the last snapshot, -1 when it is not listed (or listed
        without a price). Ids as :meth:`SnapshotDiff.columns` gives them."""
        get, prices = self._index.get, self._prices
        if not isinstance(self._ids, array):  # text ids: look numbers up as text
            ids = map(str, ids)
        return [prices[slot] if (slot := get(key, -1)) >= 0 else -1 for key in ids]

    def update(self, snapshot: Snapshot, *, report_all: bool = False) -> SnapshotDiff:
        """Compare ``snapshot`` with the previous one and remember it as the market now.

        On the first call every priced listing counts as new, but no event is made unless
        ``report_all`` is true: on start-up the whole market is not news. A duplicate id in
        ``snapshot`` is judged row by row against the market before it.
        """
        self._token = self._header = None
        steps = self._steps(snapshot, report_all=report_all)
        try:
            while True:
                next(steps)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        finally:
            steps.close()

    async def aupdate(self, snapshot: Snapshot, *, report_all: bool = False) -> SnapshotDiff:
        """:meth:`update`, letting other tasks run between slices of rows.

        On a full market an update is about half a second of CPU spent in long C-level
        loops; done in one go it would stall the event loop (and every purchase waiting on
        it) for that long. If cancelled, the tracker is left as it was before the call.
        """
        steps = self._steps(snapshot, report_all=report_all)
        try:
            while True:
                try:
                    next(steps)
                except StopIteration as done:
                    self._token = self._header = None
                    return done.value  # type: ignore[no-any-return]
                await anyio.lowlevel.checkpoint()
        finally:
            steps.close()  # abandoned (cancelled): nothing was changed yet

    def update_csv(
        self,
        chunks: Iterable[bytes],
        *,
        source: str | os.PathLike[str] | None = None,
        timestamp: int | None = None,
        report_all: bool = False,
    ) -> SnapshotDiff:
        """Parse a CSV snapshot body (gzip or plain, in pieces) and compare it with the
        previous snapshot, in one go: :func:`parse_csv_snapshot` then :meth:`update`,
        much faster.

        When the previous update was a CSV body with the same header, only the rows whose
        bytes changed are parsed (see :mod:`._lines`); the diff's
        :attr:`~SnapshotDiff.snapshot` is then ``None``. Otherwise (the first snapshot, a
        new header, an item id on two rows) every row is parsed and the diff carries the
        whole snapshot. Errors are those of :class:`CsvSnapshotParser`; after one the
        tracker is left as it was.
        """
        parser = self._begin_csv(source, timestamp)
        try:
            for chunk in chunks:
                parser.feed(chunk)
            steps = self._finish_csv(parser, report_all=report_all)
            while True:
                next(steps)
        except StopIteration as done:
            self._token, self._header = None, parser.header
            return done.value  # type: ignore[no-any-return]
        finally:
            self._busy = False

    async def aupdate_csv(
        self,
        chunks: AsyncIterable[bytes],
        *,
        source: str | os.PathLike[str] | None = None,
        timestamp: int | None = None,
        report_all: bool = False,
        changes: SnapshotChanges | None = None,
    ) -> SnapshotDiff:
        """:meth:`update_csv` while the body streams in, letting other tasks run between
        pieces. If cancelled, the tracker is left as it was before the call.

        ``changes``: the answer told as changes (:mod:`._changes`, a backtest's replay):
        taken instead of the body, with the same diff, when they start from the answer
        the tracker holds; the body is not read then."""
        if changes is not None:
            diff = self._take_changes(changes, source, timestamp)
            if diff is not None:
                return diff
        parser = self._begin_csv(source, timestamp)
        try:
            async for chunk in chunks:
                parser.feed(chunk)
                await anyio.lowlevel.checkpoint()
            steps = self._finish_csv(parser, report_all=report_all)
            while True:
                try:
                    next(steps)
                except StopIteration as done:
                    self._header = parser.header
                    self._token = changes.token if changes is not None else None
                    return done.value  # type: ignore[no-any-return]
                await anyio.lowlevel.checkpoint()
        finally:
            self._busy = False

    def _take_changes(
        self,
        changes: SnapshotChanges,
        source: str | os.PathLike[str] | None,
        timestamp: int | None,
    ) -> SnapshotDiff | None:
        """The diff of an answer told as ``changes``, judged as :meth:`_delta_steps`
        judges the rows of a body that changed; ``None`` (nothing changed) when they do
        not start from the answer the tracker holds."""
        if (
            changes.base is None
            or changes.base is not self._token
            or changes.header != self._header
            or not self._started
        ):
            return None
        self._claim()
        try:
            return self._changes_diff(changes, source, timestamp)
        finally:
            self._busy = False

    def _changes_diff(
        self,
        changes: SnapshotChanges,
        source: str | os.PathLike[str] | None,
        timestamp: int | None,
    ) -> SnapshotDiff | None:
        index, prices = self._index, self._prices
        numeric = isinstance(self._ids, array)
        removed = [
            index.get(int(i) if _is_canonical_number(i) else -1, -1)
            if numeric
            else index.get(i, -1)
            for i in changes.removed
        ]
        if -1 in removed:
            return None  # not the rows the tracker holds after all: read the body
        positions = list(range(2, len(changes.records) + 2))
        partial = parse_changed_records(Origin(source), changes.header, changes.records, positions)
        partial.timestamp = timestamp
        keys = list(self._keys_for(partial))
        index = self._index  # (text ids now, if a changed row's id is not a number)
        slots = list(map(index.get, keys, repeat(-1)))
        if len(set(keys)) != len(keys) or not set(removed).isdisjoint(slots):
            return None  # an item id on two rows, or removed and listed: read the body
        # As the body would be lined up: the previous rows of the removed ids and of the
        # changed rows did not line up with anything (those of changed rows are found
        # again by id); the unpriced among them are no longer unpriced-and-unchanged.
        unpriced_gone = sum(
            1 for slot in (*removed, *slots) if slot >= 0 and prices[slot] == UNKNOWN_PRICE
        )
        if self._unpriced_slots is None:  # counted once; then kept by _apply_changed_rows
            self._unpriced_slots = prices.count(UNKNOWN_PRICE)
        unpriced_unchanged = self._unpriced_slots - unpriced_gone
        new_prices = partial._prices
        judged = _Changes()
        same = 0
        kept = bytearray(len(keys))
        for row, (slot, price) in enumerate(zip(slots, new_prices, strict=True)):
            old = prices[slot] if slot >= 0 else _ABSENT
            if price == old:
                same += price != UNKNOWN_PRICE
                kept[row] = 1
            elif price != UNKNOWN_PRICE:
                judged.judge(row, price, old)
        diff = SnapshotDiff(
            partial,
            judged.events,
            judged.olds,
            first=False,
            new=judged.new,
            dropped=judged.dropped,
            raised=judged.raised,
            removed=len(removed),
            unchanged=changes.rows - len(keys) - unpriced_unchanged + same,
            unpriced=unpriced_unchanged + new_prices.count(UNKNOWN_PRICE),
            whole=False,
        )
        scratch = array("i", bytes(4 * len(keys)))
        self._apply_changed_rows(removed, keys, new_prices, kept, list(range(len(keys))), scratch)
        self.timestamp = timestamp
        self._lines = None  # no hashes of these rows: a body is parsed whole next time
        self._token = changes.token
        return diff

    def _begin_csv(
        self, source: str | os.PathLike[str] | None, timestamp: int | None
    ) -> TrackingParser:
        self._claim()
        return TrackingParser(
            self._lines if self._started else None,
            source=source,
            timestamp=timestamp,
            block_size=_CSV_BLOCK_SIZE,
        )

    def _finish_csv(
        self, parser: TrackingParser, *, report_all: bool
    ) -> Generator[None, None, SnapshotDiff]:
        snapshot = parser.finish()
        if snapshot is None:
            return (yield from self._delta_steps(parser))
        diff = yield from self._snapshot_steps(snapshot, report_all=report_all)
        # From here on nothing pauses. With one row per id, number the slots by row (the
        # prices stay as they are) so that rows map to slots.
        unique = len(self._index) == len(snapshot) == len(parser.hashes)
        if unique and not diff.first:
            deque(self._reset(snapshot), maxlen=0)
        if unique and self._hole_count == 0:
            rows = array("i", range(len(snapshot)))
            self._lines = LineState(parser.header, parser.hashes, rows, diff.unpriced)
        return diff

    def _claim(self) -> None:
        if self._busy:
            raise RuntimeError("SnapshotTracker.update() called while another is running")
        self._busy = True

    def _steps(
        self, snapshot: Snapshot, *, report_all: bool
    ) -> Generator[None, None, SnapshotDiff]:
        """The update, as a generator that pauses after each slice of rows. The state is
        changed only after the last pause that can be abandoned."""
        self._claim()
        try:
            return (yield from self._snapshot_steps(snapshot, report_all=report_all))
        finally:
            self._busy = False

    def _snapshot_steps(
        self, snapshot: Snapshot, *, report_all: bool
    ) -> Generator[None, None, SnapshotDiff]:
        if not self._started:
            yield from self._reset(snapshot)
            diff = _first_diff(snapshot, report_all=report_all)
        else:
            diff = yield from self._compare(snapshot)
        self._lines = None  # rows seen without their bytes: the next CSV is parsed whole
        return diff

    def _delta_steps(self, parser: TrackingParser) -> Generator[None, None, SnapshotDiff]:
        """Finish a CSV update in which only the changed rows were parsed: judge them by
        item id against the tracker's state, as :meth:`_compare` judges every row, and
        make the state equal to the new snapshot. Pauses once, before the state changes."""
        previous = parser.previous
        assert previous is not None
        changed = reconcile_moved(parser)
        rows = [position for position, _, _ in changed]
        partial = parse_changed_records(
            parser.origin,
            parser.header,
            [record for _, record, _ in changed],
            [row for _, _, row in changed],
        )
        partial.timestamp = parser._timestamp
        yield  # the last pause: from here on the state changes
        keys = list(self._keys_for(partial))
        index, prices = self._index, self._prices
        # The slots of previous rows that nothing unchanged lined up with: gone, unless a
        # changed row has their id.
        gone = dict.fromkeys(map(previous.slots.__getitem__, parser.unmatched))
        unpriced_gone = sum(1 for slot in gone if prices[slot] == UNKNOWN_PRICE)
        unpriced_unchanged = previous.unpriced - unpriced_gone
        new_prices = partial._prices
        changes = _Changes()
        same = 0
        twice = len(set(keys)) != len(keys)  # an item id on two rows
        kept = bytearray(len(keys))  # 1 for a row whose price is the one its id had
        for row, (key, price) in enumerate(zip(keys, new_prices, strict=True)):
            slot = index.get(key, -1)
            old = _ABSENT
            if slot >= 0:
                old = prices[slot]
                if slot in gone:
                    del gone[slot]
                else:
                    twice = True  # its other row is unchanged
            if price == old:
                same += price != UNKNOWN_PRICE
                kept[row] = 1
            elif price != UNKNOWN_PRICE:
                changes.judge(row, price, old)
        unpriced = unpriced_unchanged + new_prices.count(UNKNOWN_PRICE)
        diff = SnapshotDiff(
            partial,
            changes.events,
            changes.olds,
            first=False,
            new=changes.new,
            dropped=changes.dropped,
            raised=changes.raised,
            removed=len(gone),
            unchanged=len(parser.hashes) - len(rows) - unpriced_unchanged + same,
            unpriced=unpriced,
            whole=False,
        )
        self._apply_changed_rows(list(gone), keys, new_prices, kept, rows, parser.slots)
        self.timestamp = parser._timestamp
        self._lines = (
            None if twice else LineState(parser.header, parser.hashes, parser.slots, unpriced)
        )
        return diff

    def _apply_changed_rows(
        self,
        gone: list[int],
        keys: list[int | str],
        new_prices: array[int],
        kept: bytearray,
        rows: list[int],
        row_slots: array[int],
    ) -> None:
        """Remove the gone slots, then give each changed row its id's slot (a freed one
        for a new id) and its price, unless ``kept`` (as :meth:`_apply` does: with an id on
        two rows, the last one whose price changed counts); ``row_slots`` (slot per row)
        is filled in."""
        index, ids, prices, holes = self._index, self._ids, self._prices, self._holes
        unpriced = 0  # the change in slots priced UNKNOWN_PRICE
        for slot in gone:
            del index[ids[slot]]
            unpriced -= prices[slot] == UNKNOWN_PRICE
            prices[slot] = _ABSENT
            holes[slot] = 1
        self._hole_count += len(gone)
        # Holes reused from the last one down, each found as a new id needs it (no pass).
        below = len(holes) if self._hole_count else 0
        for key, price, same, row in zip(keys, new_prices, kept, rows, strict=True):
            slot = index.get(key, -1)
            if slot < 0:
                slot = holes.rfind(1, 0, below)
                below = max(slot, 0)  # none left below: none looked for again
                if slot >= 0:
                    ids[slot] = key  # type: ignore[assignment]
                    holes[slot] = 0
                    self._hole_count -= 1
                else:
                    slot = len(prices)
                    ids.append(key)  # type: ignore[arg-type]
                    prices.append(_ABSENT)
                    holes.append(0)
                index[key] = slot
            if not same:
                unpriced += (price == UNKNOWN_PRICE) - (prices[slot] == UNKNOWN_PRICE)
                prices[slot] = price
            row_slots[row] = slot
        if self._unpriced_slots is not None:
            self._unpriced_slots += unpriced

    def _compare(self, snapshot: Snapshot) -> Generator[None, None, SnapshotDiff]:
        keys = self._keys_for(snapshot)
        missing = len(self._prices)
        index, size = self._index, len(snapshot)
        olds = self._prices + array("q", [_ABSENT])  # `missing` points at the _ABSENT
        seen = bytearray(self._holes)  # holes are gone already; do not count them again
        seen.append(1)
        # For each row of the snapshot, the state row of the same id (or `missing`).
        rows: list[int] = []
        for _ in range(0, size, _SLICE):
            part = list(map(index.get, islice(keys, _SLICE), repeat(missing)))
            deque(map(seen.__setitem__, part, repeat(1)), maxlen=0)
            rows += part
            yield

        prices = snapshot._prices
        changes = _Changes()
        changed_rows: list[int] = []
        unpriced_changed = 0
        for start in range(0, size, _SLICE):
            end = start + _SLICE
            deltas = map(sub, prices[start:end], map(olds.__getitem__, rows[start:end]))
            for row in compress(count(start), deltas):
                changed_rows.append(row)
                price, old = prices[row], olds[rows[row]]
                if price == UNKNOWN_PRICE:
                    unpriced_changed += 1
                else:
                    changes.judge(row, price, old)
            yield
        gone = _positions_of_zero(seen)
        unpriced = prices.count(UNKNOWN_PRICE)
        diff = SnapshotDiff(
            snapshot,
            changes.events,
            changes.olds,
            first=False,
            new=changes.new,
            dropped=changes.dropped,
            raised=changes.raised,
            removed=len(gone),
            # A zero delta is unchanged, except for a row unpriced now and before.
            unchanged=size - len(changed_rows) - (unpriced - unpriced_changed),
            unpriced=unpriced,
        )
        # From here on nothing pauses: the state and the returned diff must not part ways.
        self._apply(snapshot, rows, changed_rows, gone)
        self.timestamp = snapshot.timestamp
        if self._hole_count * 4 > len(self._prices):
            deque(self._reset(snapshot), maxlen=0)
        return diff

    def _keys_for(self, snapshot: Snapshot) -> Iterator[int | str]:
        """The snapshot's ids in the form the index holds (ints, or text if any id is not
        a plain number)."""
        state_numeric = isinstance(self._ids, array)
        if state_numeric == snapshot.numeric_ids:
            return iter(snapshot._ids)
        if state_numeric:  # the market now has an id that is not a number: switch to text
            self._ids = list(map(str, self._ids))
            self._index = {str(key): row for key, row in self._index.items()}
        return map(str, snapshot._ids)

    def _apply(
        self, snapshot: Snapshot, rows: list[int], changed_rows: list[int], gone: list[int]
    ) -> None:
        """Make the state equal to ``snapshot``: only changed, new and gone ids are touched."""
        index, ids, prices, holes = self._index, self._ids, self._prices, self._holes
        self._unpriced_slots = None
        for row in gone:
            del index[ids[row]]
            prices[row] = _ABSENT
            holes[row] = 1
        self._hole_count += len(gone)
        missing = len(prices)
        as_text = not isinstance(ids, array) and snapshot.numeric_ids
        new_prices = snapshot._prices
        for row in changed_rows:
            state_row = rows[row]
            if state_row != missing:
                prices[state_row] = new_prices[row]
                continue
            key: int | str = snapshot._ids[row]
            if as_text:
                key = str(key)
            if key in index:  # a duplicate id within this snapshot
                prices[index[key]] = new_prices[row]
                continue
            index[key] = len(prices)
            ids.append(key)  # type: ignore[arg-type]
            prices.append(new_prices[row])
            holes.append(0)

    def _reset(self, snapshot: Snapshot) -> Generator[None, None, None]:
        """Start afresh from ``snapshot``; the state is replaced only once it is built."""
        source = snapshot._ids
        ids: IdColumn = array("q", source) if isinstance(source, array) else list(source)
        prices = array("q", snapshot._prices)
        index: dict[int | str, int] = {}
        for start in range(0, len(ids), _SLICE):
            index.update(zip(ids[start : start + _SLICE], count(start)))
            yield
        holes = bytearray(len(ids))
        hole_count = 0
        if len(index) != len(ids):  # duplicate ids: the last row of each counts
            for row, key in enumerate(ids):
                if index[key] != row:  # type: ignore[index]
                    holes[row] = 1
                    prices[row] = _ABSENT
                    hole_count += 1
        self._ids, self._prices, self._index = ids, prices, index
        self._holes, self._hole_count = holes, hole_count
        self._unpriced_slots = None
        self._started = True
        self.timestamp = snapshot.timestamp


def _positions_of_zero(flags: bytearray) -> list[int]:
    positions = []
    at = flags.find(0)
    while at >= 0:
        positions.append(at)
        at = flags.find(0, at + 1)
    return positions


def _first_diff(snapshot: Snapshot, *, report_all: bool) -> SnapshotDiff:
    prices = snapshot._prices
    unpriced = prices.count(UNKNOWN_PRICE)
    rows = array("I")
    if report_all:
        rows.extend(compress(count(), map(le, repeat(0), prices)))
    return SnapshotDiff(
        snapshot,
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


def diff_snapshots(
    previous: Snapshot | None, current: Snapshot, *, report_all: bool = False
) -> SnapshotDiff:
    """Compare two snapshots (see :meth:`SnapshotTracker.update`). With ``previous`` as
    ``None`` this is the first-snapshot diff. To follow the market poll after poll, keep a
    :class:`SnapshotTracker`: it does not rebuild the id index each time."""
    tracker = SnapshotTracker()
    if previous is None:
        return tracker.update(current, report_all=report_all)
    tracker.update(previous)
    return tracker.update(current)
