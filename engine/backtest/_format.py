"""The recording format, version 2 (docs/recording-format.md): writer and reader.

Version 2 adds the live listing feed's events (``feed`` records, and the feed's state in
every segment's ``head``); version 1 recordings are still read (version 2 only adds).

A recording is a directory: ``recording.json`` (what it is, which version) and numbered
segments ``seg-000001.jsonl.gz``, each a gzip stream of JSON lines. Every segment starts
with a full snapshot (a key frame), so deleting the oldest segments to bound disk use never
makes the rest unreadable; later snapshots are written as diffs against the previous one.
The segment being written is named ``*.jsonl.gz.open`` and flushed after every record, so a
crash loses at most the line being written: a restarted writer salvages the complete lines
into a closed segment and carries on in a new one.

Nothing is ever silently skipped when reading: a damaged, truncated or out-of-order file
raises :class:`RecordingError` naming the file and the line or byte offset.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import zlib
from bisect import bisect_right
from collections.abc import Callable, Iterator, Mapping, Sequence
from operator import length_hint
from pathlib import Path
from typing import IO, Any, NamedTuple, cast

import msgspec
from zlib_ng import zlib_ng

from .._errors import ConfigError
from ..client import FeedConnected, FeedDisconnected, FeedEvent
from ._feedpeek import Peeked, known_names_peek, misses_before_rebuild, no_peek, peek_any
from ._feedrecord import feed_fields, feed_state

__all__ = [
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "Record",
    "RecordReader",
    "RecordWriter",
    "RecordingError",
    "Row",
    "UnwatchedRun",
    "read_header",
    "read_records",
    "recording_span",
    "segment_paths",
    "write_cut",
]

FORMAT_NAME = "snipe-recording"
FORMAT_VERSION = 2
READABLE_VERSIONS = (1, 2)
FEED_FLUSH_EVERY = 0.1
"""Seconds (of the events' times) between two flushes of feed records: a crash loses at
most the feed events of the last 0.1 s in which some came."""
HEADER_FILE = "recording.json"
_SEGMENT = re.compile(r"^seg-(\d{6})\.jsonl\.gz$")
_OPEN_SUFFIX = ".open"
_READ_SIZE = 1 << 17
"""Compressed bytes read and inflated at a time: ~1 MB of lines, read while they are
still in the CPU's cache (a feed hour's lines read ~0.2 s faster than at 1 MiB)."""
KINDS_V1 = frozenset({"head", "key", "diff", "search", "cat", "resume"})
KINDS = KINDS_V1 | {"feed"}
_KINDS_OF = {1: KINDS_V1, 2: KINDS}

Row = tuple[str, str, int, int | None, int | None]
"""One listing of a snapshot: ``(item_id, name, price, unlock_at, send_until)``."""


class RecordingError(ConfigError):
    """A recording that cannot be read or written as it is; the message names the file and
    the position (``file:line`` or ``file: byte N``)."""


class Record(NamedTuple):
    """One line of a recording: its time ``t`` (epoch seconds, when the answer arrived),
    its kind ``k`` and the rest of its fields in ``body``. A named tuple, not a frozen
    dataclass: made twice as fast, and a feed hour is 1.5 million of them."""

    t: float
    k: str
    body: Mapping[str, Any]
    where: str
    """``file:line``, for error messages."""


class WatchedRecord(Record):
    """A ``feed`` listing or removal of a name the :class:`RecordReader`'s ``watched``
    kept: its reader of it need not ask again."""

    __slots__ = ()


def _segment_name(number: int) -> str:
    return f"seg-{number:06d}.jsonl.gz"


def segment_paths(directory: Path) -> list[Path]:
    """The closed segments of a recording, oldest first."""
    found = []
    for path in directory.iterdir():
        match = _SEGMENT.match(path.name)
        if match:
            found.append((int(match.group(1)), path))
    return [path for _, path in sorted(found)]


def read_header(directory: str | os.PathLike[str]) -> dict[str, Any]:
    """The recording's ``recording.json``, checked for format name and version."""
    path = Path(directory) / HEADER_FILE
    try:
        header = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RecordingError(
            "not a recording: recording.json is missing", location=str(path)
        ) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RecordingError(f"unreadable header: {exc}", location=str(path)) from None
    if not isinstance(header, dict) or header.get("format") != FORMAT_NAME:
        raise RecordingError(f"not a {FORMAT_NAME} header", location=str(path))
    version = header.get("version")
    if version not in READABLE_VERSIONS or isinstance(version, bool):
        readable = " and ".join(str(v) for v in READABLE_VERSIONS)
        raise RecordingError(
            f"format version {version!r} is not supported (this snipe reads {readable})",
            location=str(path),
            field="version",
        )
    return header


# -- writing -----------------------------------------------------------------------------


class RecordWriter:
    """Appends records to a recording directory, rotating and bounding its segments.

    ``segment_bytes``: a segment is closed once it holds about this many compressed bytes
    (checked before each snapshot, so a segment always starts with a key frame).
    ``max_bytes``: after a segment is closed, the oldest segments are deleted while the
    recording is bigger than this (the newest closed segment is always kept).

    Public methods: :meth:`snapshot` (or :meth:`changes`), :meth:`search`,
    :meth:`catalogue`, :meth:`feed`, :meth:`close`; each takes the time the answer or
    event arrived (epoch seconds). Nothing but :meth:`snapshot` / :meth:`changes` opens a
    segment (a segment starts with a key frame): what comes before the first snapshot is
    not written (a feed's connection state is kept and written in the first ``head``).
    A recording resumed from version 1 is upgraded to version 2 (its header only: a
    version 1 segment is a valid version 2 segment).
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        include_hold: bool = False,
        source: str = "",
        segment_bytes: int = 32 << 20,
        max_bytes: int = 2 << 30,
    ) -> None:
        self.directory = Path(directory)
        self.segment_bytes = segment_bytes
        self.max_bytes = max_bytes
        self._raw: IO[bytes] | None = None
        self._gz: gzip.GzipFile | None = None
        self._path: Path | None = None
        self._previous: dict[str, tuple[str, int, int | None, int | None]] | None = None
        self._last_t = float("-inf")
        self._flushed_at = float("-inf")
        self.resumed = False
        self._feed: dict[str, Any] | None = None
        """The feed's connection as the next ``head`` tells it (None: not connected)."""
        self.feed_written = 0
        self.feed_dropped = 0
        """Feed listings and removals that came before the first snapshot (not written)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        header_path = self.directory / HEADER_FILE
        if header_path.exists():
            header = read_header(self.directory)
            self.resumed = True
            self.include_hold = bool(header.get("include_hold"))
            if header.get("version") != FORMAT_VERSION:
                header = {**header, "version": FORMAT_VERSION}
                _write_atomically(header_path, json.dumps(header, indent=2).encode() + b"\n")
            self._salvage_open_segments()
            self._last_t = _last_time(self.directory)
        else:
            self.include_hold = include_hold
            header = {
                "format": FORMAT_NAME,
                "version": FORMAT_VERSION,
                "include_hold": include_hold,
                "source": source,
            }
            _write_atomically(header_path, json.dumps(header, indent=2).encode() + b"\n")
        segments = segment_paths(self.directory)
        self._next_number = 1 + (int(segments[-1].name[4:10]) if segments else 0)

    # -- public --------------------------------------------------------------------------

    def snapshot(self, t: float, rows: Sequence[Row]) -> None:
        """Record the full snapshot received at ``t``: a diff against the previous one, or
        a key frame at the start of a segment."""
        if self._gz is None or self._size() >= self.segment_bytes:
            self._rotate(t)
        current = {r[0]: (r[1], r[2], r[3], r[4]) for r in rows}
        previous = self._previous
        if previous is None:
            self._write(t, "key", {"rows": _columns(rows)})
        else:
            self._write(t, "diff", _diff(previous, current))
        self._previous = current

    def changes(
        self,
        t: float,
        *,
        add: Sequence[Row] = (),
        delete: Sequence[str] = (),
        price: Sequence[tuple[str, int]] = (),
    ) -> None:
        """Record a snapshot given as its changes since the previous one (for sources that
        know them, such as a simulated market); the first one, and the first of each
        segment, is written as a key frame all the same."""
        previous = self._previous if self._previous is not None else {}
        for item_id in delete:
            previous.pop(item_id, None)
        for row in add:
            previous[row[0]] = (row[1], row[2], row[3], row[4])
        for item_id, value in price:
            old = previous.get(item_id)
            if old is not None:
                previous[item_id] = (old[0], value, old[2], old[3])
        if self._gz is None or self._size() >= self.segment_bytes or self._previous is None:
            if self._gz is None or self._size() >= self.segment_bytes:
                self._rotate(t)
            rows = [(i, *v) for i, v in previous.items()]
            self._write(t, "key", {"rows": _columns(rows)})
        else:
            body = {"add": _columns(add), "del": list(delete), "px": _price_columns(price)}
            self._write(t, "diff", body)
        self._previous = previous

    def search(self, t: float, names: Sequence[str], game: str | None, items: Any) -> None:
        """Record a search-by-name answer (its ``items`` object as received)."""
        if self._gz is not None:
            self._write(t, "search", {"names": list(names), "game": game, "items": items})

    def catalogue(self, t: float, query: Mapping[str, Any], items: Any) -> None:
        """Record a catalogue page (its ``items`` array as received)."""
        if self._gz is not None:
            self._write(t, "cat", {"query": dict(query), "items": items})

    def feed(self, t: float, event: FeedEvent) -> None:
        """Record one event of the live listing feed arrived (or, for a connection marker,
        happened) at ``t``: a ``new``/``update`` listing or a removal as the client
        decoded it, a :class:`FeedConnected` or a :class:`FeedDisconnected`. Usually
        ``t`` is the event's own ``received_at`` / ``at`` (see
        :func:`~engine.backtest.event_time`)."""
        if isinstance(event, FeedConnected):
            self._feed = feed_state(event)
        elif isinstance(event, FeedDisconnected):
            self._feed = None
        elif self._gz is None:
            self.feed_dropped += 1
            return
        if self._gz is not None:
            self._write_fields(t, "feed", feed_fields(event))
            self.feed_written += 1

    def close(self) -> None:
        """Close the open segment (it becomes a closed ``.jsonl.gz``) and bound disk use."""
        if self._gz is None or self._raw is None or self._path is None:
            return
        self._gz.close()
        self._raw.close()
        closed = self._path.with_name(self._path.name[: -len(_OPEN_SUFFIX)])
        os.replace(self._path, closed)
        self._gz = self._raw = self._path = None
        self._previous = None
        self._bound_disk()

    def __enter__(self) -> RecordWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals -----------------------------------------------------------------------

    def _size(self) -> int:
        return self._raw.tell() if self._raw is not None else 0

    def _rotate(self, t: float) -> None:
        resumed = self.resumed and self._gz is None
        self.close()
        self._path = self.directory / (_segment_name(self._next_number) + _OPEN_SUFFIX)
        self._raw = self._path.open("wb")
        self._gz = gzip.GzipFile(fileobj=self._raw, mode="wb", compresslevel=6, mtime=0)
        head = {"v": FORMAT_VERSION, "seg": self._next_number, "feed": self._feed}
        self._write(t, "head", head)
        if resumed:
            self._write(t, "resume", {"after": self._last_t})
            self.resumed = False
        self._next_number += 1

    def _write(self, t: float, kind: str, body: Mapping[str, Any]) -> None:
        assert self._gz is not None
        if t < self._last_t:
            t = self._last_t  # a clock step back must not break the order readers check
        self._last_t = t
        line = json.dumps({"t": t, "k": kind, **body}, ensure_ascii=False, separators=(",", ":"))
        self._gz.write(line.encode("utf-8") + b"\n")
        self._gz.flush()  # Z_SYNC_FLUSH: a crash loses at most the line being written
        self._flushed_at = t

    def _write_fields(self, t: float, kind: str, fields: str) -> None:
        """:meth:`_write` with the body already as JSON members (``"a":1,"b":2``): the
        feed's hot path (bursts of thousands a second), the same bytes."""
        assert self._gz is not None
        if t < self._last_t:
            t = self._last_t
        self._last_t = t
        line = f'{{"t":{float(t)!r},"k":"{kind}",{fields}}}'  # a float's repr is its JSON
        self._gz.write(line.encode("utf-8") + b"\n")
        # A sync flush per event would cost a third of the time in the feed's bursts: at
        # most one per FEED_FLUSH_EVERY of the events' time (every other record flushes).
        if t >= self._flushed_at + FEED_FLUSH_EVERY:
            self._gz.flush()
            self._flushed_at = t

    def _bound_disk(self) -> None:
        segments = segment_paths(self.directory)
        sizes = {p: p.stat().st_size for p in segments}
        total = sum(sizes.values())
        for path in segments[:-1]:
            if total <= self.max_bytes:
                break
            total -= sizes[path]
            path.unlink()

    def _salvage_open_segments(self) -> None:
        for path in sorted(self.directory.glob("seg-*.jsonl.gz" + _OPEN_SUFFIX)):
            lines = _complete_lines(path.read_bytes())
            has_key = any(b'"k":"key"' in line[:40] for line in lines)
            if has_key:
                closed = path.with_name(path.name[: -len(_OPEN_SUFFIX)])
                _write_atomically(closed, gzip.compress(b"".join(lines), mtime=0))
            path.unlink()


def _diff(
    previous: Mapping[str, tuple[str, int, int | None, int | None]],
    current: Mapping[str, tuple[str, int, int | None, int | None]],
) -> dict[str, Any]:
    add: list[Row] = []
    price: list[tuple[str, int]] = []
    for item_id, row in current.items():
        old = previous.get(item_id)
        if old is None or old[0] != row[0] or old[2:] != row[2:]:
            add.append((item_id, *row))
        elif old[1] != row[1]:
            price.append((item_id, row[1]))
    gone = [item_id for item_id in previous if item_id not in current]
    return {"add": _columns(add), "del": gone, "px": _price_columns(price)}


def _columns(rows: Sequence[Row]) -> dict[str, list[Any]]:
    """Rows as columns: a list per field decodes several times faster than a list per
    row, which is most of a replay's reading time."""
    return {
        "id": [r[0] for r in rows],
        "name": [r[1] for r in rows],
        "price": [r[2] for r in rows],
        "unlock": [r[3] for r in rows],
        "send": [r[4] for r in rows],
    }


def _price_columns(prices: Sequence[tuple[str, int]]) -> dict[str, list[Any]]:
    return {"id": [p[0] for p in prices], "price": [p[1] for p in prices]}


def _complete_lines(data: bytes) -> list[bytes]:
    """The complete lines of a possibly truncated or damaged gzip stream (a crashed
    writer's): everything that inflates before the damage, cut at the last line end."""
    inflater = zlib.decompressobj(wbits=31)
    parts = []
    for start in range(0, len(data), 4096):
        chunk = data[start : start + 4096]
        saved = inflater.copy()
        try:
            parts.append(inflater.decompress(chunk))
        except zlib.error:
            # Byte by byte through the damaged chunk, to keep all that precedes the damage.
            for position in range(len(chunk)):
                try:
                    parts.append(saved.decompress(chunk[position : position + 1]))
                except zlib.error:
                    break
            break
    lines = b"".join(parts).split(b"\n")
    return [line + b"\n" for line in lines[:-1]]


def _last_time(directory: Path) -> float:
    segments = segment_paths(directory)
    if not segments:
        return float("-inf")
    last = float("-inf")
    for record in _read_segment(segments[-1]):
        last = record.t
    return last


def _write_atomically(path: Path, data: bytes) -> None:
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_bytes(data)
    os.replace(temporary, path)


# -- reading -----------------------------------------------------------------------------


def read_records(directory: str | os.PathLike[str]) -> RecordReader:
    """Every record of a recording, in time order, checked as it is read (a
    :class:`RecordReader`).

    Raises :class:`RecordingError` (naming file and line or byte offset) for a missing or
    foreign header, a segment still open (being written, or left by a crash: restarting
    ``snipe record`` repairs it), a damaged or truncated gzip stream, a line that is not a
    record, or time running backwards.
    """
    return RecordReader(directory)


class UnwatchedRun(list[float]):
    """The (empty) body of a record a :class:`RecordReader` told the watched names yields
    after every :data:`RUN_MAX` consecutive feed events of other names, at the time of the
    last: their times are in :attr:`RecordReader.skipped`. It bounds how far a look-ahead
    for the next record reads."""

    __slots__ = ()


RUN_MAX = 1024
"""At most this many events of unwatched names read without a record (see
:class:`UnwatchedRun`)."""


_decode_json = msgspec.json.Decoder().decode
_INFLATE_ERROR = cast(type[Exception], zlib_ng.error)  # (its stub types it as an instance)


class RecordReader(Iterator[Record]):
    """:func:`read_records`' iterator.

    ``watched``: when set (a replay market sets it to the names it keeps), ``feed``
    listings and removals of names it refuses are not yielded: their times are appended
    to :attr:`skipped` (taken with :meth:`take_skipped`), each line checked as every line
    is (JSON syntax, UTF-8, ``t`` and its order, ``k``, the event, the item's name) but not
    built; after :data:`RUN_MAX` of them in a row, an :class:`UnwatchedRun` record. Most
    of a feed's events are of names no rule watches, which a replay only counts: building
    them was half of its reading, and a record per run of them (three events on average)
    much of the rest. A line the quick look cannot vouch for goes the usual way, which
    gives the error it always gave.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.watched: Callable[[str], bool] | None = None
        self._watched: dict[str, bool] = {}
        self.skipped: list[float] = []
        """The times of the feed events of unwatched names read and not yet taken, in
        order (every one before the records yielded so far is in it)."""
        self._taken = 0
        self._records = self._read(Path(directory))

    @property
    def untaken(self) -> int:
        """How many skipped events are not yet taken."""
        return len(self.skipped) - self._taken

    def take_skipped(self, until: float) -> tuple[int, float]:
        """Take the skipped events at or before ``until``: how many, and the time of the
        last (``-inf`` with none)."""
        skipped, taken = self.skipped, self._taken
        upto = bisect_right(skipped, until, taken)
        if upto == taken:
            return 0, float("-inf")
        count, last = upto - taken, skipped[upto - 1]
        if upto > 4096 and upto * 2 > len(skipped):  # now and then, not at every take
            del skipped[:upto]
            upto = 0
        self._taken = upto
        return count, last

    def __iter__(self) -> Iterator[Record]:
        return self._records  # the generator itself: no call of ours per record

    def __next__(self) -> Record:
        return next(self._records)

    def _read(self, root: Path) -> Iterator[Record]:
        kinds = _KINDS_OF[read_header(root)["version"]]
        still_open = sorted(root.glob("seg-*.jsonl.gz" + _OPEN_SUFFIX))
        if still_open:
            raise RecordingError(
                "this segment is still open: the recorder is running or stopped without"
                " closing it (run `snipe record` on the same --out again to salvage it)",
                location=str(still_open[0]),
            )
        segments = segment_paths(root)
        if not segments:
            raise RecordingError("the recording has no segments", location=str(root))
        last = float("-inf")
        peekable, known = "feed" in kinds, self._watched
        peek_line: Callable[[bytes], Peeked] = no_peek
        peeked: Peeked | None
        skipped, made, misses, left = self.skipped, Record, 0, RUN_MAX
        rebuild_after = misses_before_rebuild(0)
        for path in segments:
            # _read_segment's loop, inlined: one generator fewer per record (a feed hour is
            # 1.5 million of them)
            name, first, line_number = str(path), True, 0
            # No line is skipped before the segment's first record (its head) is read: the
            # time of the one before is put back then (one check fewer per skipped line)
            before, last = last, float("inf")
            for lines in _chunks(path):
                peek = peekable and self.watched is not None
                # Hot: 1.5 million lines an hour, most of them feed events of names not
                # watched; per such line one msgspec look and the checks, nothing more
                # (a line's number is worked out only for a record: from what is left)
                unread, after = iter(lines), line_number + len(lines)
                for line in unread:
                    if peek:
                        # (no look for "feed" first: a record's "k" comes second, so any
                        # other record fails at once, and the search cost a fifth as much
                        # as the look itself on each of the feed's lines)
                        try:
                            peeked = peek_line(line)
                        except (ValueError, RecursionError):  # (UnicodeDecodeError too)
                            peeked = peek_any(line)  # a name not in peek_line's, or no look
                            if peeked is not None:
                                if peeked.item.name not in known:
                                    self._watch(peeked.item.name)
                                misses += 1
                                if misses == rebuild_after:
                                    misses, peek_line = 0, known_names_peek(known)
                                    rebuild_after = misses_before_rebuild(len(known))
                        if peeked is not None:
                            t = peeked.t
                            if known[peeked.item.name]:  # a listing or removal of a name kept
                                made = WatchedRecord
                            elif t >= last:
                                # UTF-8, as json.loads wants it (msgspec skips a string
                                # without looking into it); decoded here, not in a call: a
                                # third of the feed's lines have a ™ or a ★
                                try:
                                    line.isascii() or line.decode("utf-8", "surrogatepass")
                                except UnicodeDecodeError:
                                    pass  # the usual way says why
                                else:
                                    last = t
                                    skipped.append(t)
                                    left -= 1
                                    if not left:
                                        left = RUN_MAX
                                        where = f"{name}:{after - length_hint(unread)}"
                                        yield Record(t, "feed", _RUN, where)
                                    continue
                    where = f"{name}:{after - length_hint(unread)}"
                    record = _parse_line(line, where, kinds, made)
                    made = Record
                    if first:
                        if record.k != "head":
                            raise RecordingError(
                                "a segment must start with a head record", location=where
                            )
                        first, last = False, before
                    if record.t < last:
                        raise RecordingError(
                            f"time runs backwards ({record.t} after {last})", location=where
                        )
                    last = record.t
                    left = RUN_MAX
                    yield record
                line_number += len(lines)
            if first:
                raise RecordingError("empty segment", location=name)

    def _watch(self, name: str) -> bool:
        """Whether ``name`` is watched (asked once per name)."""
        assert self.watched is not None
        watched = self._watched[name] = self.watched(name)
        return watched


_RUN = cast(Mapping[str, Any], UnwatchedRun())


def _read_segment(path: Path, kinds: frozenset[str] = KINDS) -> Iterator[Record]:
    first = True
    name = str(path)  # once, not once per line: a feed hour is 1.5 million lines
    for line_number, line in enumerate(_lines(path), start=1):
        record = _parse_line(line, f"{name}:{line_number}", kinds)
        if first and record.k != "head":
            raise RecordingError("a segment must start with a head record", location=record.where)
        first = False
        yield record
    if first:
        raise RecordingError("empty segment", location=str(path))


def _lines(path: Path) -> Iterator[bytes]:
    for lines in _chunks(path):
        yield from lines


def _chunks(path: Path) -> Iterator[list[bytes]]:
    """The complete lines of each chunk of ``path`` read and inflated."""
    # zlib-ng's inflate: the same streams as zlib's, ~3.4x as fast (a feed hour's
    # recording is 470 MB of text, whose stdlib inflate was a sixth of its replay)
    inflater = zlib_ng.decompressobj(wbits=31)
    pending = b""
    consumed = 0
    while True:
        chunk = _read_chunk(path, consumed)
        if not chunk:
            break
        try:
            data = inflater.decompress(chunk)
        except _INFLATE_ERROR as exc:
            raise RecordingError(
                f"damaged gzip data near compressed byte {consumed}: {exc}",
                location=str(path),
            ) from None
        consumed += len(chunk)
        if inflater.eof and inflater.unused_data.strip(b"\0"):
            raise RecordingError(
                f"unexpected data after the gzip stream at compressed byte "
                f"{consumed - len(inflater.unused_data)}",
                location=str(path),
            )
        complete = data.split(b"\n")  # (pending joined to its first line only: no copy
        if pending:  # of the whole chunk, 470 MB of text a feed hour)
            complete[0] = pending + complete[0]
        pending = complete.pop()  # (not a starred assignment: that copies the list)
        yield complete
    if not inflater.eof:
        raise RecordingError(
            f"truncated: the gzip stream ends without its trailer after {consumed} bytes",
            location=str(path),
        )
    if pending:
        raise RecordingError("truncated: the last line has no end", location=str(path))


def _read_chunk(path: Path, offset: int) -> bytes:
    # the file is open only while a chunk is read: a reader dropped between two records
    # (a cut run stops early, a sweep's worker is stopped) holds no file, which the cyclic
    # GC could otherwise finalise before the generator (a ResourceWarning, an fd held)
    try:
        with path.open("rb") as handle:
            handle.seek(offset)
            return handle.read(_READ_SIZE)
    except OSError as exc:
        raise RecordingError(f"cannot read ({exc.strerror})", location=str(path)) from None


def _parse_line(
    line: bytes, where: str, kinds: frozenset[str], made: type[Record] = Record
) -> Record:
    try:
        # msgspec's parser: ~5x faster than json.loads on a feed record's line and 1.5x
        # pydantic-core's (a backtest of the feed reads ~430 a second of market); where it
        # parses, it gives what json.loads gives (tests/backtest/test_recording_format.py)
        value = _decode_json(line)
    except (ValueError, RecursionError):  # (msgspec's errors and UnicodeDecodeError)
        value = _json_loads(line, where)  # json.loads' value or error, as ever
    if not isinstance(value, dict):
        raise RecordingError("a record must be a JSON object", location=where)
    t = value.pop("t", None)
    kind = value.pop("k", None)
    # (a float's the usual time: one type check; `int | float` would be made per line)
    if type(t) is not float and (not isinstance(t, _NUMBER) or isinstance(t, bool)):
        raise RecordingError("missing or non-numeric time", location=where, field="t")
    if kind not in kinds:
        raise RecordingError(
            f"unknown record kind {kind!r}"
            + (" (feed records are format version 2)" if kind == "feed" else ""),
            location=where,
            field="k",
        )
    # (tuple's own constructor: a named tuple's __new__ is a Python frame, ~1,000
    # instructions of the ~20,000 a feed line's parse costs)
    return _new_tuple(made, (float(t), kind, value, where))


_NUMBER = (int, float)
_new_tuple = tuple.__new__


def _json_loads(line: bytes, where: str) -> Any:
    """``json.loads``: what a line msgspec refuses is (lone surrogates, a byte order mark,
    NaN and numbers beyond a float's range are JSON to Python's parser), or the error
    naming its column."""
    try:
        return json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        column = getattr(exc, "colno", None)
        at = f"{where}:{column}" if column else where
        raise RecordingError(f"not a JSON record: {exc}", location=at) from None


def write_cut(directory: str | os.PathLike[str], out: str | os.PathLike[str], until: float) -> Path:
    """A copy of the recording in ``out`` (a new directory) without the records after
    ``until``: the segments wholly before it linked (copied where links are not
    possible), the one holding ``until`` rewritten up to it, the later ones left out."""
    root, target = Path(directory), Path(out)
    kinds = _KINDS_OF[read_header(root)["version"]]
    target.mkdir(parents=True)
    shutil.copyfile(root / HEADER_FILE, target / HEADER_FILE)
    for path in segment_paths(root):
        lines = list(_lines(path))
        kept = [line for line in lines if _parse_line(line, str(path), kinds).t <= until]
        if not kept:
            break
        if len(kept) == len(lines):
            try:
                os.link(path, target / path.name)
            except OSError:
                shutil.copyfile(path, target / path.name)
            continue
        with gzip.open(target / path.name, "wb", compresslevel=1) as cut:
            cut.writelines(line + b"\n" for line in kept)
        break
    return target


def recording_span(directory: str | os.PathLike[str]) -> tuple[float, float]:
    """The times of the first and last records (reads the first and last segments)."""
    root = Path(directory)
    read_header(root)
    segments = segment_paths(root)
    if not segments:
        raise RecordingError("the recording has no segments", location=str(root))
    first = next(_read_segment(segments[0])).t
    return first, _last_time(root)
