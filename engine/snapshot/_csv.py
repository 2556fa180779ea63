"""A sans-I/O, incremental parser of the CSV prices snapshot (wire-notes.md).

Bytes go in as they arrive (:meth:`CsvSnapshotParser.feed`), a :class:`Snapshot` comes out
(:meth:`CsvSnapshotParser.close`); no I/O happens here. The body is gzip (detected by its
magic bytes; a body that an HTTP layer already un-gzipped is read as it is), inflated piece
by piece, cut into blocks of whole records, and each block is parsed a column at a time.

Why the speed matters and how it is had: a full market is ~1.3 million rows and 270 MB of
text, and the target is to parse it in at most about three times what inflating it costs.
Python code run once per row would take several times that, so a block without quotes is
parsed with a handful of C-level calls over the whole block: every newline becomes a comma,
one ``split`` yields all cells, and each wanted column is a strided slice of that list. That
is only right when every row of the block has exactly the header's number of cells, which
is proved first by deleting every byte except commas and newlines (``bytes.translate``)
and comparing what is left with the expected pattern. Records that contain a quote (a name
with a comma in it), and any block that fails the proof, go through the :mod:`csv` module
instead, which applies the full quoting rules; that path is slower and rarely needed.
"""

from __future__ import annotations

import csv
import io
import os
import zlib
from collections.abc import AsyncIterable, Iterable
from typing import Literal

from ._origin import Origin
from ._store import Snapshot, _Builder

__all__ = [
    "REQUIRED_COLUMNS",
    "CsvSnapshotParser",
    "aparse_csv_snapshot",
    "parse_csv_snapshot",
]

REQUIRED_COLUMNS = ("item_id", "name", "price")
_HOLD_COLUMNS = ("unlock_at", "send_until")
_GZIP_MAGIC = b"\x1f\x8b"
_GZIP_WBITS = 16 + zlib.MAX_WBITS
_NOT_SEPARATORS = bytes(c for c in range(256) if c not in b",\n")
_BLOCK_SIZE = 1 << 20  # inflated bytes per block: big enough to amortise per-block calls


class _Layout:
    """Where the wanted columns are, read from the header row."""

    __slots__ = ("id_col", "name_col", "ncols", "price_col", "send_col", "skeleton", "unlock_col")

    def __init__(self, header: list[str], origin: Origin):
        names = [cell.strip().lstrip("\ufeff").strip().lower() for cell in header]
        missing = [col for col in REQUIRED_COLUMNS if col not in names]
        if missing:
            origin.malformed(
                f"the header has no {', '.join(missing)} column (it has: {', '.join(names)})",
                row=1,
                field=missing[0],
            )
        self.ncols = len(names)
        self.id_col = names.index("item_id")
        self.name_col = names.index("name")
        self.price_col = names.index("price")
        self.unlock_col = names.index("unlock_at") if "unlock_at" in names else None
        self.send_col = names.index("send_until") if "send_until" in names else None
        self.skeleton = b"," * (self.ncols - 1) + b"\n"

    @property
    def has_hold(self) -> bool:
        return self.unlock_col is not None or self.send_col is not None

    @property
    def needed(self) -> int:
        """How many cells a row must have at least: up to the last required column."""
        return max(self.id_col, self.name_col, self.price_col) + 1


class CsvSnapshotParser:
    """Parses a CSV prices snapshot fed to it in pieces of any size.

    ``source`` is the recorded file the bytes come from, or ``None`` when they come from the
    service; it decides the error raised for broken data (see :mod:`._origin`): a
    :class:`~engine.MalformedResponse` or :class:`~engine.Unavailable` from the service, a
    :class:`~engine.ConfigError` naming ``file:row`` for a file. Never a partial snapshot.
    """

    def __init__(
        self,
        *,
        source: str | os.PathLike[str] | None = None,
        timestamp: int | None = None,
        block_size: int = _BLOCK_SIZE,
    ):
        self._origin = Origin(source)
        self._timestamp = timestamp
        self._block_size = block_size
        self._mode: Literal["start", "gzip", "plain"] = "start"
        self._head = b""
        self._inflater = zlib.decompressobj(_GZIP_WBITS)
        self._pieces: list[bytes] = []
        self._pending = 0
        self._layout: _Layout | None = None
        self._builder: _Builder | None = None
        self._row = 0  # number of the last record consumed; the header is row 1
        self._received = 0
        self._done = False

    def feed(self, data: bytes) -> None:
        """Take the next piece of the body, as it arrived."""
        if self._done:
            raise RuntimeError("feed() after close()")
        if not data:
            return
        self._received += len(data)
        if self._mode == "start":
            self._head += data
            if len(self._head) < len(_GZIP_MAGIC):
                return
            data, self._head = self._head, b""
            self._mode = "gzip" if data.startswith(_GZIP_MAGIC) else "plain"
        text = self._inflate(data) if self._mode == "gzip" else data
        if text:
            self._pieces.append(text)
            self._pending += len(text)
            if self._pending >= self._block_size:
                self._consume(final=False)

    def close(self) -> Snapshot:
        """The body has ended: parse what is left and return the snapshot."""
        if self._done:
            raise RuntimeError("close() called twice")
        self._done = True
        if self._mode == "start" and self._head:
            self._mode = "plain"
            self._pieces.append(self._head)
        if self._mode == "gzip":
            tail = self._inflater.flush()
            if tail:
                self._pieces.append(tail)
            if not self._inflater.eof:
                self._origin.truncated(
                    f"the gzip stream stopped after {self._received} bytes, before its end",
                    row=self._row or None,
                )
        self._consume(final=True)
        if self._builder is None:
            self._origin.malformed("the snapshot is empty: no header row")
        return self._builder.build(self._timestamp)

    # -- inflating --------------------------------------------------------------------

    def _inflate(self, data: bytes) -> bytes:
        out = []
        while data:
            if self._inflater.eof:  # a gzip file may hold several members, one after another
                self._inflater = zlib.decompressobj(_GZIP_WBITS)
            try:
                out.append(self._inflater.decompress(data))
            except zlib.error as exc:
                self._origin.malformed(
                    f"the body is not valid gzip data ({exc})", row=self._row or None
                )
            data = self._inflater.unused_data if self._inflater.eof else b""
        return b"".join(out)

    # -- cutting into records ------------------------------------------------------------

    def _consume(self, *, final: bool) -> None:
        buf = b"".join(self._pieces)
        self._pieces.clear()
        if final:
            block, rest = buf, b""
            if block and not block.endswith(b"\n"):
                block += b"\n"
        else:
            cut = _last_record_end(buf)
            block, rest = buf[: cut + 1], buf[cut + 1 :]
        if rest:
            self._pieces.append(rest)
        self._pending = len(rest)
        if b"\r" in block:
            block = block.replace(b"\r\n", b"\n")
        if self._layout is None and block:
            block = self._read_header(block)
        if block:
            self._parse_block(block)

    def _read_header(self, block: bytes) -> bytes:
        end = _first_record_end(block)
        header = self._csv_records(block[: end + 1], first_row=1)
        self._row = 1
        cells = next((record for _, record in header), [])
        self._layout = _Layout(cells, self._origin)
        self._builder = _Builder(self._origin, hold=self._layout.has_hold)
        return block[end + 1 :]

    # -- parsing blocks of whole records ---------------------------------------------------

    def _parse_block(self, block: bytes) -> None:
        if b'"' not in block:
            self._parse_plain(block)
            return
        # Parse the quoted records with the csv module, and the runs between them fast.
        pos = 0
        while (quote := block.find(b'"', pos)) >= 0:
            start = block.rfind(b"\n", pos, quote) + 1 or pos
            end = _record_end(block, start, quote)
            if start > pos:
                self._parse_plain(block[pos:start])
            self._parse_quoted(block[start : end + 1])
            pos = end + 1
        if pos < len(block):
            self._parse_plain(block[pos:])

    def _parse_plain(self, block: bytes) -> None:
        layout, builder = self._layout, self._builder
        assert layout is not None
        assert builder is not None
        skeleton = block.translate(None, _NOT_SEPARATORS)
        rows = len(skeleton) // len(layout.skeleton)
        if skeleton != layout.skeleton * rows:
            self._parse_quoted(block)  # blank lines or rows of another width: the slow path
            return
        cells = block.replace(b"\n", b",").split(b",")
        width, end = layout.ncols, rows * layout.ncols
        builder.add(
            cells[layout.id_col : end : width],
            cells[layout.name_col : end : width],
            cells[layout.price_col : end : width],
            None if layout.unlock_col is None else cells[layout.unlock_col : end : width],
            None if layout.send_col is None else cells[layout.send_col : end : width],
            first_row=self._row + 1,
        )
        self._row += rows

    def _parse_quoted(self, block: bytes) -> None:
        layout, builder = self._layout, self._builder
        assert layout is not None
        assert builder is not None
        ids: list[bytes] = []
        names: list[bytes] = []
        prices: list[bytes] = []
        unlock: list[bytes] = []
        send: list[bytes] = []
        rows: list[int] = []
        needed, width = layout.needed, layout.ncols
        row = self._row
        for row, record in self._csv_records(block, first_row=self._row + 1):
            if not record:
                continue  # a blank line
            if len(record) < needed:
                self._origin.malformed(
                    f"the row has {len(record)} cells; the header has {width}", row=row
                )
            ids.append(record[layout.id_col].encode())
            names.append(record[layout.name_col].encode())
            prices.append(record[layout.price_col].encode())
            unlock.append(_cell(record, layout.unlock_col))
            send.append(_cell(record, layout.send_col))
            rows.append(row)
        self._row = row
        if rows:
            builder.add(ids, names, prices, unlock, send, first_row=rows[0], row_numbers=rows)

    def _csv_records(self, block: bytes, *, first_row: int) -> list[tuple[int, list[str]]]:
        try:
            text = block.decode()
        except UnicodeDecodeError as exc:
            self._origin.malformed(
                "the row is not UTF-8 text", row=first_row + block.count(b"\n", 0, exc.start)
            )
        reader = csv.reader(io.StringIO(text, newline=""), strict=True)
        records: list[tuple[int, list[str]]] = []
        try:
            for number, record in enumerate(reader, start=first_row):
                records.append((number, record))
        except csv.Error as exc:
            self._origin.malformed(
                f"the row is not valid CSV ({exc})", row=first_row + len(records)
            )
        return records


def _cell(record: list[str], col: int | None) -> bytes:
    return record[col].encode() if col is not None and col < len(record) else b""


def _last_record_end(buf: bytes) -> int:
    """Index of the last newline that ends a record (not one inside a quoted cell), or -1."""
    cut = buf.rfind(b"\n")
    if b'"' in buf:
        while cut >= 0 and buf.count(b'"', 0, cut) % 2:
            cut = buf.rfind(b"\n", 0, cut)
    return cut


def _first_record_end(block: bytes) -> int:
    """Index of the newline that ends the first record (the block ends with one)."""
    return _record_end(block, 0, 0)


def _record_end(block: bytes, start: int, after: int) -> int:
    """Index of the newline ending the record that starts at ``start``, searching from
    ``after``: the first newline with an even number of quotes before it in the record."""
    end = block.find(b"\n", after)
    while end >= 0 and block.count(b'"', start, end) % 2:
        end = block.find(b"\n", end + 1)
    return end if end >= 0 else len(block) - 1


def parse_csv_snapshot(
    chunks: Iterable[bytes],
    *,
    source: str | os.PathLike[str] | None = None,
    timestamp: int | None = None,
) -> Snapshot:
    """Parse a CSV snapshot from pieces of its body (gzip or plain), e.g. a file read in
    chunks. See :class:`CsvSnapshotParser` for the errors."""
    parser = CsvSnapshotParser(source=source, timestamp=timestamp)
    for chunk in chunks:
        parser.feed(chunk)
    return parser.close()


async def aparse_csv_snapshot(
    chunks: AsyncIterable[bytes],
    *,
    source: str | os.PathLike[str] | None = None,
    timestamp: int | None = None,
) -> Snapshot:
    """Parse a CSV snapshot while it streams in, e.g. from ``response.aiter_raw()``.

    Each piece is parsed as it arrives, so the body is never held whole; other tasks run
    between pieces."""
    parser = CsvSnapshotParser(source=source, timestamp=timestamp)
    async for chunk in chunks:
        parser.feed(chunk)
    return parser.close()
