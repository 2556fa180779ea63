"""One small async interface to SQLite, on both anyio backends.

aiosqlite runs a connection in a thread of its own and hands answers back through asyncio
futures, so it works only under asyncio. Under trio (or wherever asked to) the same
interface is served by :class:`ThreadConnection`: a plain ``sqlite3`` connection used from
anyio's worker threads, one call at a time. Both expose exactly what the ledger needs:
``execute_fetchall`` and ``close``. Transactions are explicit (``BEGIN IMMEDIATE`` /
``COMMIT``), so both connections are opened in autocommit mode (``isolation_level=None``)
and the ``sqlite3`` module never starts one behind our back.

A call that has started in a thread cannot be stopped; callers shield their transactions
from cancellation so one is never left half-open.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any, Literal, Protocol, cast

import aiosqlite
import anyio
import anyio.to_thread
import sniffio

__all__ = ["AsyncConnection", "Driver", "ThreadConnection", "connect"]

Driver = Literal["auto", "aiosqlite", "thread"]
"""``auto``: aiosqlite under asyncio, :class:`ThreadConnection` elsewhere."""

Row = tuple[Any, ...]


class AsyncConnection(Protocol):
    """What the ledger needs from a connection."""

    async def execute_fetchall(self, sql: str, parameters: Sequence[Any] = ()) -> list[Row]:
        """Run one statement and return every row it produced."""
        ...

    async def close(self) -> None:
        """Close the connection; safe to call twice."""
        ...


def _open_sqlite(database: str, uri: bool) -> sqlite3.Connection:
    return sqlite3.connect(
        database,
        uri=uri,
        isolation_level=None,
        check_same_thread=False,
        # The ledger waits for another process's write lock rather than failing at once.
        timeout=10.0,
    )


class ThreadConnection:
    """A ``sqlite3`` connection driven from anyio worker threads, one call at a time.

    Works on every anyio backend. The connection may be used from different worker
    threads (``check_same_thread=False``); the capacity limiter of one makes the calls
    strictly sequential, which is what SQLite's Python module requires for that.
    """

    def __init__(self, connection: sqlite3.Connection) -> None:
        self._connection: sqlite3.Connection | None = connection
        self._limiter = anyio.CapacityLimiter(1)

    @classmethod
    async def open(cls, database: str, *, uri: bool = False) -> ThreadConnection:
        connection = await anyio.to_thread.run_sync(_open_sqlite, database, uri)
        return cls(connection)

    def _run(self, sql: str, parameters: Sequence[Any]) -> list[Row]:
        if self._connection is None:
            raise sqlite3.ProgrammingError("Cannot operate on a closed database.")
        return self._connection.execute(sql, parameters).fetchall()

    async def execute_fetchall(self, sql: str, parameters: Sequence[Any] = ()) -> list[Row]:
        return await anyio.to_thread.run_sync(self._run, sql, parameters, limiter=self._limiter)

    async def close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            await anyio.to_thread.run_sync(connection.close, limiter=self._limiter)


class AiosqliteConnection:
    """aiosqlite behind :class:`AsyncConnection` (asyncio only)."""

    def __init__(self, connection: aiosqlite.Connection) -> None:
        self._connection = connection

    @classmethod
    async def open(cls, database: str, *, uri: bool = False) -> AiosqliteConnection:
        connection = await aiosqlite.connect(
            database, uri=uri, isolation_level=None, check_same_thread=False, timeout=10.0
        )
        return cls(connection)

    async def execute_fetchall(self, sql: str, parameters: Sequence[Any] = ()) -> list[Row]:
        # No row factory is set, so the rows are plain tuples.
        rows = await self._connection.execute_fetchall(sql, parameters)
        return cast(list[Row], list(rows))

    async def close(self) -> None:
        await self._connection.close()


async def connect(database: str, *, uri: bool = False, driver: Driver = "auto") -> AsyncConnection:
    """Open ``database`` with the driver that suits the running backend.

    Errors are ``sqlite3.Error``; the ledger translates them.
    """
    if driver == "auto":
        driver = "aiosqlite" if sniffio.current_async_library() == "asyncio" else "thread"
    if driver == "aiosqlite":
        return await AiosqliteConnection.open(database, uri=uri)
    return await ThreadConnection.open(database, uri=uri)
