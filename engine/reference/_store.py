"""Reference prices on disk: a SQLite file of its own beside the ledger.

A separate file (``<ledger>.prices.sqlite``), not tables in the ledger: the ledger holds
money and is written with ``synchronous=FULL`` on every purchase; references are a cache
that may lose its last minute in a crash and can be deleted at any time without harm.

Tables: ``market_buckets`` (one row per key and time bucket: the packed histogram, the
lowest price, the latest listing time), ``price_lists`` (the last copy of each list source:
``service``, ``file.NAME``, with when it was fetched), ``meta`` (the bucket width the
market rows were written with; rows of another width are dropped on open, since they
cannot be merged). Blocking sqlite3 calls run in a worker thread (both anyio backends), one
at a time.
"""

from __future__ import annotations

import os
import sqlite3
from array import array
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from .._errors import ConfigError
from ._book import MarketKey, StoredBucket
from ._series import pack, unpack

__all__ = ["PriceList", "PriceStore", "store_path_for"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS market_buckets (
    name TEXT NOT NULL, phase TEXT NOT NULL, bucket INTEGER NOT NULL,
    bins BLOB NOT NULL, low INTEGER NOT NULL, last REAL NOT NULL,
    PRIMARY KEY (name, phase, bucket)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS price_lists (
    source TEXT NOT NULL, name TEXT NOT NULL, phase TEXT NOT NULL, price INTEGER NOT NULL,
    PRIMARY KEY (source, name, phase)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS price_list_meta (
    source TEXT PRIMARY KEY, fetched_at REAL NOT NULL, origin TEXT NOT NULL,
    rows INTEGER NOT NULL, set_aside INTEGER NOT NULL
);
"""


def store_path_for(ledger: str | os.PathLike[str]) -> Path | None:
    """Where the references of a ledger live: beside it, ``.prices.sqlite`` added to its
    name (``None`` for an in-memory ledger)."""
    text = os.fspath(ledger)
    if text == ":memory:":
        return None
    path = Path(text)
    return path.with_name(path.name + ".prices.sqlite")


@dataclass(frozen=True, slots=True)
class PriceList:
    """One list source's prices as last fetched: (base name, phase) -> USD x 1000."""

    source: str
    prices: Mapping[MarketKey, int]
    fetched_at: float
    origin: str
    set_aside: int = 0


class PriceStore:
    """The reference price file; open with :meth:`open`, close with :meth:`aclose`."""

    def __init__(self, conn: sqlite3.Connection, path: Path, bucket_seconds: float):
        self._conn = conn
        self.path = path
        self.bucket_seconds = bucket_seconds
        self._lock = anyio.Lock()
        self.dropped_on_open = 0
        """Market rows dropped because they were written with another bucket width."""

    @classmethod
    async def open(cls, path: str | os.PathLike[str], *, bucket_seconds: float) -> PriceStore:
        target = Path(path)
        try:
            conn = await anyio.to_thread.run_sync(_connect, target)
        except sqlite3.Error as exc:
            raise ConfigError(
                f"cannot open the reference price file: {exc}", location=str(target)
            ) from None
        store = cls(conn, target, bucket_seconds)
        store.dropped_on_open = await store._run(_check_width, bucket_seconds)
        return store

    @classmethod
    def open_read_only(cls, path: str | os.PathLike[str]) -> PriceStore:
        """For ``snipe prices``: read what a running (or past) engine wrote."""
        target = Path(path)
        if not target.exists():
            raise ConfigError("no reference price file (has `snipe run` run?)", location=str(path))
        conn = sqlite3.connect(f"file:{target}?mode=ro", uri=True, check_same_thread=False)
        row = conn.execute("SELECT value FROM meta WHERE key = 'bucket_seconds'").fetchone()
        return cls(conn, target, float(row[0]) if row else 0.0)

    async def _run(self, fn: Any, *args: Any) -> Any:
        async with self._lock:
            return await anyio.to_thread.run_sync(fn, self._conn, *args)

    async def load_market(self) -> list[StoredBucket]:
        return await self._run(read_market)  # type: ignore[no-any-return]

    async def save_market(
        self, changed: Iterable[StoredBucket], gone: Iterable[tuple[MarketKey, int]]
    ) -> None:
        await self._run(_write_market, list(changed), list(gone))

    async def load_lists(self) -> list[PriceList]:
        return await self._run(read_lists)  # type: ignore[no-any-return]

    async def save_list(self, price_list: PriceList) -> None:
        await self._run(_write_list, price_list)

    async def aclose(self) -> None:
        await self._run(_close)

    def close_sync(self) -> None:
        self._conn.close()


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")  # a cache: losing the last write is harmless
    conn.executescript(_SCHEMA)
    return conn


def _check_width(conn: sqlite3.Connection, bucket_seconds: float) -> int:
    row = conn.execute("SELECT value FROM meta WHERE key = 'bucket_seconds'").fetchone()
    dropped = 0
    if row is not None and float(row[0]) != bucket_seconds:
        dropped = conn.execute("DELETE FROM market_buckets").rowcount
    conn.execute(
        "INSERT OR REPLACE INTO meta VALUES ('bucket_seconds', ?)", (repr(bucket_seconds),)
    )
    return dropped


def read_market(conn: sqlite3.Connection) -> list[StoredBucket]:
    rows = conn.execute("SELECT name, phase, bucket, bins, low, last FROM market_buckets")
    out = []
    for name, phase, bucket, bins, low, last in rows:
        packed: array[int] = array("I")
        packed.frombytes(bins)
        hist = unpack(packed)
        out.append(StoredBucket((name, phase or None), bucket, hist, low, last))
    return out


def _write_market(
    conn: sqlite3.Connection, changed: list[StoredBucket], gone: list[tuple[MarketKey, int]]
) -> None:
    with conn:
        conn.execute("BEGIN")
        conn.executemany(
            "DELETE FROM market_buckets WHERE name = ? AND phase = ? AND bucket = ?",
            [(key[0], key[1] or "", bucket) for key, bucket in gone],
        )
        conn.executemany(
            "INSERT OR REPLACE INTO market_buckets VALUES (?, ?, ?, ?, ?, ?)",
            [
                (b.key[0], b.key[1] or "", b.bucket, pack(b.bins).tobytes(), b.low, b.last)
                for b in changed
            ],
        )


def read_lists(conn: sqlite3.Connection) -> list[PriceList]:
    metas = conn.execute("SELECT source, fetched_at, origin, set_aside FROM price_list_meta")
    out = []
    for source, fetched_at, origin, set_aside in metas.fetchall():
        rows = conn.execute(
            "SELECT name, phase, price FROM price_lists WHERE source = ?", (source,)
        )
        prices = {(name, phase or None): price for name, phase, price in rows}
        out.append(PriceList(source, prices, fetched_at, origin, set_aside))
    return out


def _write_list(conn: sqlite3.Connection, price_list: PriceList) -> None:
    with conn:
        conn.execute("BEGIN")
        conn.execute("DELETE FROM price_lists WHERE source = ?", (price_list.source,))
        conn.executemany(
            "INSERT INTO price_lists VALUES (?, ?, ?, ?)",
            [
                (price_list.source, name, phase or "", price)
                for (name, phase), price in price_list.prices.items()
            ],
        )
        conn.execute(
            "INSERT OR REPLACE INTO price_list_meta VALUES (?, ?, ?, ?, ?)",
            (
                price_list.source,
                price_list.fetched_at,
                price_list.origin,
                len(price_list.prices),
                price_list.set_aside,
            ),
        )


def _close(conn: sqlite3.Connection) -> None:
    conn.close()
