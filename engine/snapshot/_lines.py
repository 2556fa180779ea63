"""Telling which rows of a CSV snapshot changed without parsing the rows that did not.

Between two polls of the whole market about 98% of the rows are the very same bytes. So
instead of parsing every row, each record of the new body is hashed with Python's built-in
``hash`` of ``bytes``, and the sequence of hashes is lined up against the previous
snapshot's, kept in row order. Each inflated piece is read where it lies (the line it ends
in is carried to the next piece), never joined into bigger blocks: copies of the whole
body cost as much as the splitting. With the C helpers of ``_rows.c`` (an optional build)
each line is hashed in place, with the same hash, and no bytes object is made for a row
unless it changed; without them the piece is split (``bytes.split``) and each record
hashed through ``map``: the same hashes, ~0.4 s more per 1.3 million rows.
A market dump keeps its rows in the same order from one poll to the next (the speed
assumes it; nothing else does), so long runs match and are found by comparing slices of two
``array('q')`` (a ``memcmp``), galloping: Python code runs once per run of equal rows and
once per changed row, not once per row. Only the records whose hash did not line up are
parsed, with the ordinary parser.

Correctness does not depend on the order: a record that does not line up is looked up
among the previous rows that did not line up either (a row that moved), and otherwise
parsed and judged by its item id like any changed row. Order only decides the speed.

``hash(bytes)`` is randomised per process and stable within one, which is all this needs:
hashes never leave the process. A changed record with the same 64-bit hash as the old one
it is compared with would look unchanged (no event for it until it changes again). Even
bounding that by any two of ~1.3 million rows colliding (n**2 / 2**65), it is below 1 in
10**7 per poll; the real comparisons are far fewer than all pairs.
"""

from __future__ import annotations

import os
from array import array
from contextlib import suppress
from itertools import compress, repeat
from types import ModuleType
from typing import NoReturn

from ._csv import _MAX_RECORD, CsvSnapshotParser, _record_end
from ._origin import Origin
from ._store import Snapshot

__all__ = ["LineState", "TrackingParser", "parse_changed_records", "split_records"]

_WINDOW = 64
"""How far ahead a record is looked for among the previous rows before it counts as
changed: enough for the rows removed between two records in a row."""

_FAR = 8
"""After this many changed records in a row, also look much further ahead (the previous
snapshot lost a long run of rows); the look grows with the run, so a long run of really
new rows costs a few scans, not one per row."""

_GIVE_UP = 4096
"""Once more than this many rows, and more than a quarter of the rows so far, did not
line up, the order is not the previous one: stop lining up and match every further row by
hash against all previous rows not matched yet (a dict of them, built then: C-level dict
operations instead of Python code per row, for ~100 MB more memory in that case)."""

_NO_SLOT = -1


def _load_c() -> ModuleType | None:
    try:
        from . import _rows
    except ImportError:  # built without a compiler: the pure-Python way, same results
        return None
    return _rows


_C = _load_c()
"""The C helpers (``_rows.c``): each line of a piece hashed where it lies, and runs of
equal hashes compared, without a bytes object per row (~0.4 s less per 1.3M rows)."""


class LineState:
    """What the tracker keeps of the last CSV snapshot for the next one: its header line,
    the hash of each row (row order) and the tracker slot that holds each row's id and
    price. Only kept while every row has its own item id (one slot per row)."""

    __slots__ = ("hashes", "header", "slots", "unpriced")

    def __init__(self, header: bytes, hashes: array[int], slots: array[int], unpriced: int):
        self.header = header
        self.hashes = hashes
        self.slots = slots
        self.unpriced = unpriced
        """How many rows had no price."""


def split_records(text: bytes, *, final: bool) -> tuple[list[bytes], bytes]:
    """The CSV records of the whole lines of ``text``, numbered as the parser numbers rows,
    and what follows them.

    Each line is a record (a blank line is an empty one), except that a record whose
    quoted cell holds a line break is kept whole. What follows is the text after the last
    line break, or from the start of a record that goes on past it (as
    :meth:`CsvSnapshotParser._parse_block` leaves it), to be read with what comes next.
    With ``final``, ``text`` must end with a line break.
    """
    records = text.split(b"\n")
    tail = records.pop()  # after the last line break
    limit = len(text) - len(tail)
    if text.find(b'"', 0, limit) < 0:
        return records, tail
    # Only a record with a quote can hold a line break. A quoted line is checked where it
    # is; lines are counted (a pass over the text) only up to a record that spans lines,
    # which real snapshots do not have.
    line = 0  # the number of line breaks before `counted`
    counted = pos = 0
    joined = 0  # lines removed from `records` by joining
    while (quote := text.find(b'"', pos, limit)) >= 0:
        start = text.rfind(b"\n", pos, quote) + 1 or pos
        end = _record_end(text, start, final=final)
        if end >= 0 and text.find(b"\n", start) == end:
            pos = end + 1  # a record of one line: nothing to join
            continue
        line += text.count(b"\n", counted, start)
        counted = start
        at = line - joined
        if end < 0:
            del records[at:]
            return records, text[start:]
        span = text.count(b"\n", start, end)
        records[at : at + span + 1] = [text[start:end]]
        joined += span
        line += span + 1
        counted = pos = end + 1
    return records, tail


class _RowMap(Origin):
    """An origin for parsing a body made of chosen records: row ``2 + i`` of that body
    (after its header) is row ``rows[i]`` of the snapshot."""

    __slots__ = ("rows",)

    def __init__(self, origin: Origin, rows: list[int]):
        super().__init__(origin.path, endpoint=origin.endpoint)
        self.rows = rows

    def _map(self, row: int | None) -> int | None:
        if row is None or not 2 <= row < len(self.rows) + 2:
            return row
        return self.rows[row - 2]

    def malformed(
        self, message: str, *, row: int | None = None, field: str | None = None
    ) -> NoReturn:
        super().malformed(message, row=self._map(row), field=field)

    def truncated(self, message: str, *, row: int | None = None) -> NoReturn:
        super().truncated(message, row=self._map(row))


def parse_changed_records(
    origin: Origin, header: bytes, records: list[bytes], rows: list[int]
) -> Snapshot:
    """Parse the records that changed (with the snapshot's header) into a small snapshot,
    one row per record; an error names the record's row in the whole snapshot."""
    parser = CsvSnapshotParser()
    parser._origin = _RowMap(origin, rows)
    parser.feed(header)
    if records:
        parser.feed(b"\n".join(records) + b"\n")
    partial = parser.close()
    if len(partial) != len(records):  # a bare carriage return read as a line break
        parser._origin.malformed("the row holds a bare carriage return", row=2)
    return partial


class TrackingParser(CsvSnapshotParser):
    """The CSV parser of :meth:`SnapshotTracker.update_csv`.

    With the previous snapshot's :class:`LineState` and the same header, it parses only
    the records that changed (``delta`` mode): the result is :attr:`hashes` and
    :attr:`slots` per row (``-1`` for a row to parse), the :attr:`missed` records and the
    previous rows that nothing lined up with (:attr:`unmatched`). Otherwise (``full``
    mode) it parses every row as :class:`CsvSnapshotParser` does and also hashes each
    row, so that the next snapshot can take the fast way.
    """

    def __init__(
        self,
        previous: LineState | None,
        *,
        source: str | os.PathLike[str] | None = None,
        timestamp: int | None = None,
        block_size: int | None = None,
    ):
        if block_size is None:
            super().__init__(source=source, timestamp=timestamp)
        else:
            super().__init__(source=source, timestamp=timestamp, block_size=block_size)
        self.previous = previous
        self.delta = False
        self.header = b""
        self.hashes: array[int] = array("q")
        self.slots: array[int] = array("i")  # tracker slots fit an int32
        self.missed: list[tuple[int, bytes, int]] = []
        """The rows that did not line up: (position in the snapshot, record, row number)."""
        self.unmatched: list[int] = []  # positions in the previous snapshot
        self._at = 0  # the next row of the previous snapshot to line up
        self._misses_in_a_row = 0
        self._by_hash: dict[int, int] | None = None  # hash -> previous row, once given up
        self._slot_of: array[int] = array("i")
        self._carry = b""  # delta mode: the start of a record not ended yet

    @property
    def origin(self) -> Origin:
        return self._origin

    def finish(self) -> Snapshot | None:
        """Close the body; the whole snapshot in ``full`` mode, ``None`` in ``delta``."""
        snapshot = self.close()
        if not self.delta:
            return snapshot
        previous = self.previous
        assert previous is not None
        if self._by_hash is not None:
            self.unmatched = list(self._by_hash.values())
        else:
            self.unmatched.extend(range(self._at, len(previous.hashes)))
        return None

    def _read_header(self, record: bytes) -> None:
        super()._read_header(record)
        self.header = record
        self.delta = self.previous is not None and record == self.previous.header

    def _consume(self, *, final: bool) -> None:
        if not self.delta:  # the header is read here too, which may start delta mode
            super()._consume(final=final)
            return
        # Each inflated piece is split where it lies: no joining of pieces into a block
        # and no slicing at its last line break, two copies of the whole body that cost
        # ~0.3 s per 241 MB on a loaded machine (issue 20).
        pieces, self._pieces = self._pieces, []
        self._pending = 0
        for piece in pieces:
            self._take_piece(piece)
        if final and self._carry:
            text, self._carry = self._carry, b""
            if not text.endswith(b"\n"):
                text += b"\n"
            if b"\r" in text:
                text = text.replace(b"\r\n", b"\n")
            records, _ = split_records(text, final=True)
            self._take(records)
        if len(self._carry) > _MAX_RECORD:
            self._origin.malformed(
                f"no end of row within {_MAX_RECORD} bytes: not a CSV snapshot, or a quote "
                "is never closed",
                row=self._row + 1,
            )

    def _take_piece(self, text: bytes) -> None:
        """Split one inflated piece into records; the line it ends in waits in the carry."""
        carry = self._carry
        if carry:
            newline = text.find(b"\n")
            if newline < 0:
                self._carry = carry + text
                return
            # The carry is glued to the piece's first line after the split, unless either
            # could change how the piece is read: a quote (which may open a cell that holds
            # a line break) or a carriage return (a CRLF cut in two). Then join them first.
            if b'"' in carry or b"\r" in carry or text.find(b'"', 0, newline) >= 0:
                text, carry = carry + text, b""
        if b"\r" in text:
            text = text.replace(b"\r\n", b"\n")
        if _C is not None and not _spans_lines(text):
            hashes, ends, blanks = _C.line_hashes(text)
            if not blanks:  # blank lines are not rows: numbered by the way below
                self._take_lines(text, hashes, ends, carry)
                return
        records, self._carry = split_records(text, final=False)
        if carry:
            records[0] = carry + records[0]
        self._take(records)

    def _take_lines(self, text: bytes, packed: bytes, packed_ends: bytes, carry: bytes) -> None:
        """Line up the lines of ``text`` hashed by the C helper; ``carry`` goes before the
        first one."""
        ends = array("q")
        ends.frombytes(packed_ends)
        if not ends:
            self._carry = text
            return
        self._carry = text[ends[-1] + 1 :]
        hashes = array("q")
        hashes.frombytes(packed)
        first = text[: ends[0]]
        if carry:
            first = carry + first
            hashes[0] = hash(first)
        first_row = self._row + 1
        self._row += len(hashes)
        self._line_up(hashes, _Lines(text, ends, first), None, first_row)

    def _parse_block(self, block: bytes, *, final: bool) -> bytes:
        records, leftover = split_records(block, final=final)
        if not self.delta:
            self.hashes.extend(map(hash, filter(None, records)))
            return super()._parse_block(block, final=final)
        self._take(records)
        return leftover

    def _take(self, records: list[bytes]) -> None:
        """Line up the next records of the body (delta mode)."""
        if not records:
            return
        first_row = self._row + 1
        self._row += len(records)
        rows: list[int] | None = None
        # Blank lines are not rows. ``all`` tests the records' lengths in C: 0.02 s per
        # 241 MB, where searching the block for b"\n\n" took 0.25 s (a two-byte pattern
        # whose first byte ends every row), 15% of a whole update (issue 20).
        if not all(records):
            rows = list(compress(range(first_row, first_row + len(records)), records))
            records = list(filter(None, records))
        # Through a list: array() from a list is ~0.1 s per 241 MB cheaper than from a map.
        self._line_up(array("q", list(map(hash, records))), records, rows, first_row)

    def _line_up(
        self, hashes: array[int], records: _Records, rows: list[int] | None, first_row: int
    ) -> None:
        """Match ``hashes`` (this block's rows) with the previous rows, in order."""
        previous = self.previous
        assert previous is not None
        common_run = _common_run if _C is None else _C.common_run
        old, old_slots = previous.hashes, previous.slots
        slots, unmatched, missed = self.slots, self.unmatched, self.missed
        base = len(self.hashes)
        self.hashes.extend(hashes)
        at, count, end = self._at, len(hashes), len(old)
        if self._by_hash is None and len(missed) > _GIVE_UP and len(missed) * 4 > base:
            positions = [*unmatched, *range(at, end)]
            self._by_hash = dict(zip(map(old.__getitem__, positions), positions, strict=True))
            self._slot_of = old_slots + array("i", [_NO_SLOT])  # [-1] is "no slot"
            unmatched.clear()
            self._at = end
        if self._by_hash is not None:
            where = list(map(self._by_hash.pop, hashes, repeat(-1)))
            slots.extend(map(self._slot_of.__getitem__, where))
            j = -1
            with suppress(ValueError):
                while True:
                    j = where.index(-1, j + 1)
                    missed.append((base + j, records[j], rows[j] if rows else first_row + j))
            return
        j = 0
        while j < count:
            run = common_run(old, at, hashes, j)
            if run:
                slots.extend(old_slots[at : at + run])
                at += run
                j += run
                self._misses_in_a_row = 0
                if j == count:
                    break
            if at + 1 < end and j + 1 < count:  # the usual cases, told apart cheaply
                in_place = old[at + 1] == hashes[j + 1]  # one row changed
                if in_place or old[at] == hashes[j + 1]:  # or one row inserted
                    if in_place:
                        unmatched.append(at)
                        at += 1
                    missed.append((base + j, records[j], rows[j] if rows else first_row + j))
                    slots.append(_NO_SLOT)
                    j += 1
                    continue
                if old[at + 1] == hashes[j]:  # one row removed
                    unmatched.append(at)
                    at += 1
                    continue
            found = _find(old, hashes[j], at, min(end, at + _WINDOW))
            if found < 0 and self._misses_in_a_row >= _FAR:
                streak = self._misses_in_a_row
                if streak & (streak - 1) == 0:  # 8, 16, 32...: look further each time
                    found = _find(old, hashes[j], at, min(end, at + _WINDOW * streak * 8))
            if found >= 0:
                unmatched.extend(range(at, found))
                at = found
                continue
            missed.append((base + j, records[j], rows[j] if rows else first_row + j))
            slots.append(_NO_SLOT)
            self._misses_in_a_row += 1
            j += 1
        self._at = at


class _Lines:
    """The records of a piece hashed in C, each made only when asked for (a changed row)."""

    __slots__ = ("ends", "first", "text")

    def __init__(self, text: bytes, ends: array[int], first: bytes):
        self.text = text
        self.ends = ends
        self.first = first  # with the carry before it

    def __getitem__(self, j: int) -> bytes:
        if j == 0:
            return self.first
        return self.text[self.ends[j - 1] + 1 : self.ends[j]]


_Records = list[bytes] | _Lines


def _spans_lines(text: bytes) -> bool:
    """Whether a record with a quote in the whole lines of ``text`` takes more than one line
    (or goes on past them): then each line is not a record."""
    limit = text.rfind(b"\n") + 1
    pos = 0
    while (quote := text.find(b'"', pos, limit)) >= 0:
        start = text.rfind(b"\n", pos, quote) + 1 or pos
        end = _record_end(text, start, final=False)
        if end < 0 or text.find(b"\n", start) != end:
            return True
        pos = end + 1
    return False


def _find(values: array[int], value: int, start: int, stop: int) -> int:
    try:
        return values.index(value, start, stop)
    except ValueError:
        return -1


def _common_run(old: array[int], at: int, new: array[int], j: int) -> int:
    """How many rows from ``old[at]`` and ``new[j]`` on are equal: slices are compared
    (``memcmp``) in growing steps, then the step that differed is halved down to a few
    rows, which are compared one by one."""
    limit = min(len(old) - at, len(new) - j)
    if limit <= 0 or old[at] != new[j]:
        return 0
    same, step = 1, 16
    while True:
        upto = min(same + step, limit)
        if old[at + same : at + upto] != new[j + same : j + upto]:
            break
        if upto == limit:
            return limit
        same = upto
        step *= 2
    while upto - same > 8:  # rows [0, same) are equal; one in [same, upto) differs
        middle = (same + upto) // 2
        if old[at + same : at + middle] == new[j + same : j + middle]:
            same = middle
        else:
            upto = middle
    at, j = at + same, j + same
    while old[at] == new[j]:
        same += 1
        at += 1
        j += 1
    return same


def reconcile_moved(parser: TrackingParser) -> list[tuple[int, bytes, int]]:
    """Give each missed row that is a previous row moved elsewhere that row's slot (and
    take that row out of ``unmatched``); return the missed rows that really changed."""
    previous = parser.previous
    assert previous is not None
    if not parser.missed:
        return []
    old, old_slots, slots, hashes = previous.hashes, previous.slots, parser.slots, parser.hashes
    unmatched = parser.unmatched
    by_hash = dict(zip(map(old.__getitem__, unmatched), unmatched, strict=True))
    found = list(map(by_hash.pop, (hashes[miss[0]] for miss in parser.missed), repeat(-1)))
    changed = []
    for miss, position in zip(parser.missed, found, strict=True):
        if position < 0:
            changed.append(miss)
        else:
            slots[miss[0]] = old_slots[position]
    if len(changed) != len(found):
        parser.unmatched = list(by_hash.values())
    return changed
