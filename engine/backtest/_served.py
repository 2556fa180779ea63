"""The snapshot a replay transport last served, kept up to date from the market's journal.

The live service sends the whole market every 10 s and the engine finds the few rows that
changed (``engine/snapshot/_lines.py``). Replayed that way, a backtest built the CSV of
every listing and the engine inflated and hashed it again, for every snapshot: work that
grew with the market, not with its changes, when the recording itself holds the changes.
:class:`ServedSnapshot` holds the rows of the last answer and, from the item ids the
:class:`~._market.ReplayMarket` notes as changed (its journal), tells the next answer as
:class:`~engine.snapshot.SnapshotChanges`: the CSV records of the rows that changed, in the
body's row order, and the ids that went. The engine's tracker judges them as it would
judge the changed rows of the body (the same parser, the same diff); the body itself is
built only if it is read (a tracker that does not hold the previous answer).

Without ``include_hold`` a trade-locked listing is left out until its lock ends: listings
held back are kept in a heap by their ``unlock_at`` and looked at again once it passes.
"""

from __future__ import annotations

import csv
import gzip
import heapq
import io
from collections.abc import AsyncIterator

import httpx

from ..snapshot import SnapshotChanges
from ._market import Held, ReplayMarket

__all__ = ["SNAPSHOT_HEADERS", "ServedSnapshot", "csv_cell", "snapshot_line"]

SNAPSHOT_HEADERS = {
    True: b"item_id,name,price,unlock_at,send_until\n",
    False: b"item_id,name,price\n",
}


class ServedSnapshot:
    """The rows of the last snapshot answer for one ``include_hold`` (see the module
    docstring). ``token`` stands for that answer."""

    def __init__(self, market: ReplayMarket, *, include_hold: bool, now: float) -> None:
        self.market = market
        self.include_hold = include_hold
        self.header = SNAPSHOT_HEADERS[include_hold]
        self.version = market.snapshot_version
        self.token = object()
        self._pending: dict[str, None] = {}
        self._locked: list[tuple[int, str]] = []  # (unlock_at, item_id) of rows held back
        self._quoted: dict[str, str] = {}
        self.rows: dict[str, Held] = {}
        for item_id, row in market.listings.items():
            if self._visible(item_id, row, now):
                self.rows[item_id] = row

    def note(self, item_ids: list[str]) -> None:
        """The market changed these listings since they were last looked at."""
        self._pending.update(dict.fromkeys(item_ids))

    def changes(self) -> SnapshotChanges:
        """This answer again, as no change from itself."""
        return SnapshotChanges(self.token, self.token, self.header, [], [], len(self.rows))

    def first(self) -> SnapshotChanges:
        """This answer, with nothing to start from: its body only."""
        return SnapshotChanges(self.token, None, self.header, [], [], len(self.rows))

    def advance(self, now: float) -> SnapshotChanges:
        """Serve the market as it is at ``now``: the changes from the last answer."""
        listings, rows = self.market.listings, self.rows
        pending = self._pending
        locked = self._locked
        while locked and locked[0][0] <= now:
            pending[heapq.heappop(locked)[1]] = None
        changed: list[str] = []
        removed: list[str] = []
        for item_id in pending:
            row = listings.get(item_id)
            if row is not None and not self._visible(item_id, row, now):
                row = None
            before = rows.get(item_id)
            if row == before:
                continue
            if row is None:
                del rows[item_id]
                removed.append(item_id)
            else:
                rows[item_id] = row
                changed.append(item_id)
        pending.clear()
        self.version = self.market.snapshot_version
        base, self.token = self.token, object()
        line = self._line
        records = [line(i, rows[i]).encode() for i in self.market.in_order(changed)]
        return SnapshotChanges(self.token, base, self.header, records, removed, len(rows))

    def body(self) -> bytes:
        """The whole answer as the service sends it, rows in the market's order (gzip,
        stored: the engine inflates it at once, in the same process). Read only by a
        tracker that does not hold the previous answer: the first, or after a lost one."""
        rows, line = self.rows, self._line
        lines = [line(i, rows[i]) for i in self.market.in_order(list(rows))]
        text = "\n".join([self.header.decode().rstrip("\n"), *lines, ""])
        return gzip.compress(text.encode(), compresslevel=0, mtime=0)

    def stream(self) -> httpx.AsyncByteStream:
        """The body, built only if it is read, and only while this is still the answer
        (a later one was served: the read fails, as a cut connection would)."""
        return _Body(self, self.token)

    def _visible(self, item_id: str, row: Held, now: float) -> bool:
        unlock_at = row[2]
        if self.include_hold or unlock_at is None or unlock_at <= now:
            return True
        heapq.heappush(self._locked, (unlock_at, item_id))
        return False

    def _line(self, item_id: str, row: Held) -> str:
        return snapshot_line(item_id, row, self.include_hold, self._quoted)


class _Body(httpx.AsyncByteStream):
    def __init__(self, served: ServedSnapshot, token: object) -> None:
        self._served = served
        self._token = token

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self._served.token is not self._token:
            raise httpx.ReadError("a later snapshot was served meanwhile")
        yield self._served.body()


def snapshot_line(item_id: str, row: Held, include_hold: bool, quoted: dict[str, str]) -> str:
    """A listing's CSV row of the snapshot, as :data:`SNAPSHOT_HEADERS` names its columns
    (``quoted``: each name's cell, kept between calls)."""
    name, price, unlock_at, send_until = row
    cell = quoted.get(name)
    if cell is None:
        cell = quoted[name] = csv_cell(name)
    if not include_hold:
        return f"{item_id},{cell},{price}"
    lock = f"{unlock_at},{send_until or ''}" if unlock_at is not None else ","
    return f"{item_id},{cell},{price},{lock}"


def csv_cell(text: str) -> str:
    """``text`` as one CSV cell (quoted when it must be)."""
    out = io.StringIO()
    csv.writer(out, lineterminator="").writerow([text])
    return out.getvalue()
