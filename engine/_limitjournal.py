"""The rate limiter's journal: the calls of the last window, kept across restarts.

The service counts calls per account, not per process, so a ``snipe run`` killed and
started again must not begin with an empty window. :class:`LimitJournal` is a small text
file beside the ledger (``<ledger>.limits``) the limiter appends to: one ``sent`` line when
a slot is given to a call, one ``done`` line when its answer arrived::

    sent search 3f2a.7 1763903112.25
    done search 3f2a.7 1763903112.61

Plain appends, no fsync: a SIGKILL keeps the page cache, and losing the file to a power cut
costs at worst one 429, never money. At start-up :func:`restore` turns the lines into the
window each bucket's calls still occupy: a finished call from its ``done`` time, a call
killed in flight from ``min(now, sent + request timeout)`` (the service may have counted it
any time until then). Bad lines are skipped with a warning; the good ones are kept. The
file is rewritten compactly at start and whenever it grows past :data:`COMPACT_AFTER`
lines, so it stays a window's worth of calls.
"""

from __future__ import annotations

import logging
import math
import os
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

__all__ = ["COMPACT_AFTER", "JOURNAL_SUFFIX", "JournalLine", "LimitJournal", "parse", "restore"]

log = logging.getLogger("snipe.limiter")

JOURNAL_SUFFIX = ".limits"
COMPACT_AFTER = 2000
"""Lines appended since the last rewrite after which the file is rewritten compactly."""


@dataclass(frozen=True)
class JournalLine:
    """One line of the journal: a call in ``bucket`` ``sent`` or ``done`` at ``at``."""

    kind: str
    bucket: str
    call: str
    at: float

    def text(self) -> str:
        return f"{self.kind} {self.bucket} {self.call} {self.at!r}\n"


def parse(lines: Iterable[str], *, source: str = "journal") -> list[JournalLine]:
    """The good lines of a journal; each bad one is skipped with a warning naming it."""
    good: list[JournalLine] = []
    for number, raw in enumerate(lines, start=1):
        line = _parse_line(raw)
        if line is None:
            if raw.strip():
                log.warning("%s:%d: unreadable rate-limit journal line skipped", source, number)
            continue
        good.append(line)
    return good


def _parse_line(raw: str) -> JournalLine | None:
    fields = raw.split()
    if len(fields) != 4 or fields[0] not in ("sent", "done"):
        return None
    try:
        at = float(fields[3])
    except ValueError:
        return None
    if not math.isfinite(at):
        return None
    return JournalLine(fields[0], fields[1], fields[2], at)


def restore(
    lines: Iterable[JournalLine], *, now: float, periods: Mapping[str, float], timeout: float
) -> dict[str, list[float]]:
    """Per bucket in ``periods``, when each call still in its window started, oldest first.

    A finished call starts at its ``done`` time; a call never answered (the process died
    with it in flight) at ``min(now, sent + timeout)``. No start lies after ``now``, so a
    clock that went back cannot stretch a window without bound. Calls whose window has
    passed, and buckets not in ``periods``, are dropped.
    """
    sent: dict[tuple[str, str], float] = {}
    done: dict[tuple[str, str], float] = {}
    for line in lines:
        target = sent if line.kind == "sent" else done
        target[(line.bucket, line.call)] = line.at
    starts: dict[str, list[float]] = {bucket: [] for bucket in periods}
    for key in sent.keys() | done.keys():
        bucket = key[0]
        if bucket not in periods:
            continue
        start = done[key] if key in done else sent[key] + timeout
        start = min(start, now)
        if start + periods[bucket] > now:
            starts[bucket].append(start)
    for calls in starts.values():
        calls.sort()
    return starts


class LimitJournal:
    """The append-only journal file of one ledger's rate limiter."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._file: TextIO | None = None
        self._prefix = secrets.token_hex(4)  # call ids unique across the lives of the file
        self._counter = 0
        self._appended = 0

    @classmethod
    def for_ledger(cls, ledger: str | os.PathLike[str]) -> LimitJournal:
        """The journal beside the ledger file ``ledger``."""
        return cls(f"{os.fspath(ledger)}{JOURNAL_SUFFIX}")

    def read(self) -> list[JournalLine]:
        """The good lines of the file (none if it does not exist yet)."""
        try:
            with self.path.open(encoding="utf-8", errors="replace") as file:
                return parse(file, source=str(self.path))
        except FileNotFoundError:
            return []

    def rewrite(self, lines: Iterable[JournalLine]) -> None:
        """Replace the file by ``lines`` (written beside it, then moved over it), and
        append from there on."""
        self.close()
        temporary = self.path.with_name(self.path.name + ".tmp")
        with temporary.open("w", encoding="utf-8") as file:
            file.writelines(line.text() for line in lines)
        os.replace(temporary, self.path)
        self._appended = 0

    def new_call(self) -> str:
        self._counter += 1
        return f"{self._prefix}.{self._counter}"

    def append(self, line: JournalLine) -> None:
        if self._file is None:
            self._file = self.path.open("a", encoding="utf-8")
        self._file.write(line.text())
        self._file.flush()  # to the page cache, which outlives a SIGKILL
        self._appended += 1

    @property
    def needs_compaction(self) -> bool:
        return self._appended >= COMPACT_AFTER

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
