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
_MAX_RECORD = 1 << 24  # a row (or a quoted cell with line breaks) longer than this is junk


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
            block = buf if not buf or buf.endswith(b"\n") else buf + b"\n"
            rest = b""
        else:
            cut = buf.rfind(b"\n")
            block, rest = buf[: cut + 1], buf[cut + 1 :]
        if b"\r" in block:
            block = block.replace(b"\r\n", b"\n")
        leftover = b""
        if self._layout is None and block:
            end = _record_end(block, 0, final=final)
            if end < 0:
                leftover, block = block, b""
            else:
                self._read_header(block[: end + 1])
                block = block[end + 1 :]
        if block:
            leftover = self._parse_block(block, final=final)
        self._pieces.extend(piece for piece in (leftover, rest) if piece)
        self._pending = len(leftover) + len(rest)
        if self._pending > _MAX_RECORD:
            self._origin.malformed(
                f"no end of row within {_MAX_RECORD} bytes: not a CSV snapshot, or a quote "
                "is never closed",
                row=self._row + 1,
            )

    def _read_header(self, record: bytes) -> None:
        header = self._csv_records(record, first_row=1)
        self._row = 1
        cells = next((cells for _, cells in header), [])
        self._layout = _Layout(cells, self._origin)
        self._builder = _Builder(self._origin, hold=self._layout.has_hold)

    # -- parsing blocks of whole lines -----------------------------------------------------

    def _parse_block(self, block: bytes, *, final: bool) -> bytes:
        """Parse the records of ``block``; return the start of a record that goes on past
        its end (a quoted cell with a line break in it), to be parsed with what follows."""
        if b'"' not in block:
            self._parse_plain(block)
            return b""
        # Parse the records with a quote with the csv module, and the runs between them fast.
        pos = 0
        while (quote := block.find(b'"', pos)) >= 0:
            start = block.rfind(b"\n", pos, quote) + 1 or pos
            end = _record_end(block, start, final=final)
            if start > pos:
                self._parse_plain(block[pos:start])
            if end < 0:
                return block[start:]
            self._parse_quoted(block[start : end + 1])
            pos = end + 1
        if pos < len(block):
            self._parse_plain(block[pos:])
        return b""

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


def _record_end(block: bytes, start: int, *, final: bool) -> int:
    """Index of the newline that ends the record starting at ``start``, or -1 when the
    record goes on past the end of ``block`` (which ends with a newline).

    A record is one line unless the csv module finds a quoted cell still open at its end;
    then it takes lines until the quotes balance and the csv module agrees. (A quote inside
    an unquoted cell, ``5" blade``, is literal text for the csv module, hence the check.)
    """
    end = block.find(b"\n", start)
    if block.find(b'"', start, end) < 0 or _csv_complete(block[start : end + 1]):
        return end
    quotes = block.count(b'"', start, end)
    while True:
        following = block.find(b"\n", end + 1)
        if following < 0:
            return len(block) - 1 if final else -1  # at the end, csv names the error
        quotes += block.count(b'"', end, following)
        end = following
        if quotes % 2 == 0 and _csv_complete(block[start : end + 1]):
            return end


def _csv_complete(record: bytes) -> bool:
    """Whether ``record`` does not end inside a quoted cell."""
    try:
        text = record.decode()
    except UnicodeDecodeError:
        return True  # the parse that follows names the row
    try:
        for _ in csv.reader(io.StringIO(text, newline=""), strict=True):
            pass
    except csv.Error as exc:
        return "unexpected end of data" not in str(exc)
    return True


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
