"""The ledger: every purchase, written before it is sent, in a SQLite file.

Durability. The file is in WAL mode with ``synchronous=FULL``: ``COMMIT`` returns only
after the write-ahead log is on disk, so an intent the ledger acknowledged survives a
process crash *and* a power cut or kernel panic. ``NORMAL`` would survive a process crash
too (the log is already in the OS cache) and saves an fsync, but may lose the last
commits on power loss; an intent lost after its request went out is a purchase the budget
no longer counts and that no restart resolves. The fsync costs a fraction of a
millisecond here (see ``bench/bench_intent.py``), well inside the intent-to-request
budget, so the ledger pays it.

Atomicity. An intent is written by one ``INSERT ... SELECT ... WHERE <checks>``
statement: no purchase with this ``project_id``, no live purchase of this ``item_id``,
every cap still held with this intent added (in-flight purchases counted). A single
write statement is its own transaction and takes SQLite's write lock before it reads, so
its checks and its write cannot interleave with another writer, in this process (an
anyio lock also serialises the tasks sharing the one connection) or in another. Two
intents can never both pass a cap. When the statement writes nothing, the same checks
run again step by step in a ``BEGIN IMMEDIATE`` transaction to say which one refused
(:class:`IntentRefused`), or to write after all if that has changed meanwhile. Every
other write is one ``BEGIN IMMEDIATE`` transaction. Once begun, a write is shielded from
cancellation: it commits or rolls back, and is never left half-open.

Budgets. Caps read ``budget_days`` (amount and count per rule and UTC day, kept by
triggers in the same transaction as every insert and move), so a cap check costs a few
rows whatever the history; a ``since`` that is not a day start adds at most one day of
purchases.

Backends. aiosqlite under asyncio; under trio (where aiosqlite cannot run) a ``sqlite3``
connection driven from anyio worker threads behind the same small interface
(``_connection.py``). The SQL, and so the behaviour, is the same on both.

Append-only history. Every change of state adds a row to ``events``; triggers refuse any
update or delete of an event and any delete of a purchase. The ``purchases`` table is the
current state, kept in the same transaction as the event that explains it.

Secrets. Nothing written comes from a URL or a header: purchase columns are typed fields,
and event details are a whitelist of scalar fields (:data:`DETAIL_FIELDS`).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import urllib.parse
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

import anyio
import anyio.lowlevel

from .._clock import Clock
from .._errors import IntentRefusal, IntentRefused, LedgerError
from .._money import Money, format_usd
from ..models import HistoryTrade, ProjectTrade
from ._connection import AsyncConnection, Driver, Row, connect
from ._orders import OrderBook
from ._queries import (
    _COLUMNS,
    _FREE_SQL,
    HOLDING_KINDS,
    HOLDING_SQL,
    PurchaseQueries,
    _cap_query,
    _purchase,
)
from ._records import Cap, ControlEvent, Intent, Purchase, encode_details
from ._resolve import (
    DEFAULT_ABSENCE_GAP,
    DEFAULT_GRACE,
    DEFAULT_WATCH,
    Absence,
    Resolution,
    history_match,
    release,
    resolve,
    resolve_history,
)
from ._schema import (
    APPLICATION_ID,
    MIGRATIONS,
    MIN_SQLITE,
    SCHEMA_VERSION,
    split_statements,
)
from ._states import PurchaseState, check_transition

__all__ = ["MEMORY", "Ledger"]

MEMORY = ":memory:"
"""The path of a ledger that lives in memory only (backtests): same code, no file."""

_KEPT_READS = 256
_KEPT_ROWS = 50_000
"""At most this many reads, and rows in all, kept by a ledger in memory (see
:meth:`Ledger._read`)."""

_T = TypeVar("_T")


def _check_money(project_id: str, name: str, value: int | None) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise LedgerError(
            f"purchase {project_id}: {name} must be a non-negative int (USD x 1000), got {value!r}"
        )


class Ledger(OrderBook, PurchaseQueries):
    """Every purchase snipe makes, with its history. Open it with :meth:`open`.

    All times come from the injected clock. All money is int USD x 1000.
    """

    def __init__(
        self, connection: AsyncConnection, *, path: str, clock: Clock, readonly: bool
    ) -> None:
        self._connection: AsyncConnection | None = connection
        self._lock = anyio.Lock()
        self.path = path
        """The file (or :data:`MEMORY`)."""
        self.readonly = readonly
        self._clock = clock
        self.writes = 0
        """Statements other than a ``SELECT`` run by this object so far: what this
        process's reads may have changed by (a cache of a read is good while it stays;
        another process writing the same file is not counted)."""
        self.intents = 0
        """Purchase intents this object wrote so far (counted once written): what can have
        filled a cap since a budget was read, of this process's own writes."""
        self._kept: dict[tuple[str, tuple[Any, ...]], list[Row]] = {}
        """A ledger in memory: reads made at the count of :attr:`writes` ``_kept_at``, by
        SQL and parameters (:meth:`_read`)."""
        self._kept_at = -1
        self._kept_rows = 0

    # -- opening -------------------------------------------------------------------------

    @classmethod
    async def open(
        cls,
        path: str | os.PathLike[str],
        *,
        clock: Clock,
        readonly: bool = False,
        driver: Driver = "auto",
    ) -> Ledger:
        """Open (creating and migrating if needed) the ledger at ``path``.

        ``readonly=True`` never changes the file: it must exist and be at the current
        schema version. :data:`MEMORY` opens a ledger that lives in memory. Raises
        :class:`LedgerError` naming the file for a missing, corrupt or foreign file, or a
        schema version newer than this snipe knows.
        """
        name = os.fspath(path)
        if sqlite3.sqlite_version_info < MIN_SQLITE:
            raise LedgerError(
                f"{name}: the ledger needs SQLite {'.'.join(map(str, MIN_SQLITE))} or newer,"
                f" this Python has {sqlite3.sqlite_version}"
            )
        database, uri = cls._locate(name, readonly)
        try:
            connection = await connect(database, uri=uri, driver=driver)
        except sqlite3.Error as exc:
            raise LedgerError(f"{name}: cannot open the ledger: {exc}") from exc
        ledger = cls(connection, path=name, clock=clock, readonly=readonly)
        try:
            await ledger._prepare()
        except BaseException:
            with anyio.CancelScope(shield=True):
                await ledger.close()
            raise
        return ledger

    @staticmethod
    def _locate(name: str, readonly: bool) -> tuple[str, bool]:
        if name == MEMORY:
            if readonly:
                raise LedgerError("an in-memory ledger cannot be opened read-only")
            return name, False
        file = Path(name)
        if file.is_dir():
            raise LedgerError(f"{name}: is a directory, not a ledger file")
        if readonly:
            if not file.is_file():
                raise LedgerError(f"{name}: no ledger file there")
            return f"file:{urllib.parse.quote(str(file.resolve()))}?mode=ro", True
        if not file.parent.is_dir():
            raise LedgerError(f"{name}: directory {str(file.parent)!r} does not exist")
        return name, False

    async def _prepare(self) -> None:
        version, app_id, tables = await self._header()
        if version > SCHEMA_VERSION:
            raise LedgerError(
                f"{self.path}: ledger schema version {version} is newer than this snipe"
                f" knows ({SCHEMA_VERSION}); upgrade snipe to open it"
            )
        if app_id != APPLICATION_ID and (app_id != 0 or tables):
            raise LedgerError(f"{self.path}: not a snipe ledger (another SQLite database)")
        # Before anything is written: a damaged file is reported, never "repaired".
        check = await self._exec("PRAGMA quick_check")
        if [tuple(r) for r in check] != [("ok",)]:
            problem = "; ".join(str(r[0]) for r in check[:3])
            raise LedgerError(f"{self.path}: ledger file is corrupt: {problem}")
        if self.readonly:
            if version < SCHEMA_VERSION:
                what = "is empty" if version == 0 else f"has schema version {version}"
                raise LedgerError(
                    f"{self.path}: ledger {what}; this snipe reads version {SCHEMA_VERSION}"
                    " (open it for writing once to migrate)"
                )
            await self._exec("PRAGMA query_only = ON")
        else:
            await self._configure()
            await self._migrate()

    async def _header(self) -> tuple[int, int, int]:
        # The first read of the file: a file that is not SQLite fails here.
        version = (await self._exec("PRAGMA user_version"))[0][0]
        app_id = (await self._exec("PRAGMA application_id"))[0][0]
        tables = (await self._exec("SELECT count(*) FROM sqlite_schema"))[0][0]
        return int(version), int(app_id), int(tables)

    async def _configure(self) -> None:
        if self.path != MEMORY:
            mode = (await self._exec("PRAGMA journal_mode = WAL"))[0][0]
            if str(mode).lower() != "wal":
                raise LedgerError(f"{self.path}: cannot switch the ledger to WAL (got {mode})")
        await self._exec("PRAGMA synchronous = FULL")
        await self._exec("PRAGMA foreign_keys = ON")

    async def _migrate(self) -> None:
        async def run() -> None:
            # Read again under the write lock: another process may have migrated meanwhile.
            version = (await self._exec("PRAGMA user_version"))[0][0]
            for target in range(version + 1, SCHEMA_VERSION + 1):
                for statement in split_statements(MIGRATIONS[target - 1]):
                    await self._exec(statement)
                await self._exec(f"PRAGMA user_version = {int(target)}")

        version = (await self._exec("PRAGMA user_version"))[0][0]
        if version < SCHEMA_VERSION:
            await self._transaction(run)

    @property
    def schema_version(self) -> int:
        """The schema version of the open file (always :data:`SCHEMA_VERSION`)."""
        return SCHEMA_VERSION

    # -- plumbing ------------------------------------------------------------------------

    async def _exec(self, sql: str, parameters: Sequence[Any] = ()) -> list[Row]:
        if self._connection is None:
            raise LedgerError(f"{self.path}: the ledger is closed")
        if sql.lstrip()[:6].upper() != "SELECT":
            self.writes += 1  # counted before it runs: a read begun meanwhile is stale
        try:
            with self._busy():
                return await self._connection.execute_fetchall(sql, parameters)
        except sqlite3.DatabaseError as exc:
            raise LedgerError(f"{self.path}: {exc}") from exc
        except sqlite3.Error as exc:
            raise LedgerError(f"{self.path}: ledger error: {exc}") from exc

    def _busy(self) -> contextlib.AbstractContextManager[object]:
        # The call runs in a worker thread: a virtual clock must not move meanwhile.
        mark = getattr(self._clock, "busy", None)
        return mark() if mark is not None else contextlib.nullcontext()

    async def _transaction(self, work: Callable[[], Awaitable[_T]]) -> _T:
        """Run ``work`` inside ``BEGIN IMMEDIATE`` ... ``COMMIT``, one writer at a time."""
        if self.readonly:
            raise LedgerError(f"{self.path}: the ledger is open read-only")
        async with self._lock:
            # Past this point the transaction finishes even if the caller is cancelled.
            with anyio.CancelScope(shield=True):
                await self._exec("BEGIN IMMEDIATE")
                try:
                    result = await work()
                    await self._exec("COMMIT")
                except BaseException:
                    await self._rollback()
                    raise
        return result

    async def _rollback(self) -> None:
        # A COMMIT that failed may have ended the transaction already: nothing to undo.
        with contextlib.suppress(LedgerError):
            await self._exec("ROLLBACK")

    async def _read(self, sql: str, parameters: Sequence[Any] = ()) -> list[Row]:
        """A read. A ledger in memory answers one made again with nothing written since
        (:data:`MEMORY`, a backtest's or a dry run's) as it did, without a trip to the
        connection's thread: no other connection, in this process or another, can read or
        write it, so its rows change only by this object's statements, and every one that
        is not a ``SELECT`` is counted in :attr:`writes` before it runs. An answer read at
        one count stays true while the count stays and no write is under way (the write
        lock is free: a caller that finds it taken reads, waiting for the writer, as
        before). A file ledger is always read: another process may write it (two ``snipe
        run`` on one file: nothing locks it)."""
        if self.path != MEMORY:
            async with self._lock:
                return await self._exec(sql, parameters)
        key = (sql, tuple(parameters))
        if self._kept_at != self.writes:
            self._kept.clear()
            self._kept_rows = 0
            self._kept_at = self.writes
        kept = None if self._lock.locked() else self._kept.get(key)
        if kept is not None:
            await anyio.lowlevel.checkpoint_if_cancelled()  # a read's cancellation point
            return list(kept)
        count = self.writes  # before the read: a write meanwhile makes it stale
        async with self._lock:
            rows = await self._exec(sql, parameters)
        if count == self.writes == self._kept_at:
            # reads at ever new times, or long answers: start again
            if len(self._kept) >= _KEPT_READS or self._kept_rows + len(rows) > _KEPT_ROWS:
                self._kept.clear()
                self._kept_rows = 0
            self._kept[key] = list(rows)
            self._kept_rows += len(rows)
        return rows

    async def _holding(self, kind: str) -> bool:
        """Whether the ledger may hold rows of ``kind`` (``"unresolved"``,
        ``"open_trades"``, ``"released"``, ``"live_orders"``): false only when it surely
        holds none. A reconcile pass asks a dozen queries for these, some with the time in
        them: a ledger in memory with none of them answers each ``[]`` from one kept read
        (see :meth:`_read`); a file ledger is always read."""
        if self.path != MEMORY:
            return True
        row = (await self._read(HOLDING_SQL))[0]
        return bool(row[HOLDING_KINDS.index(kind)])

    async def close(self) -> None:
        """Close the ledger. Every acknowledged write is already durable."""
        connection, self._connection = self._connection, None
        if connection is not None:
            with anyio.CancelScope(shield=True):
                try:
                    await connection.close()
                except sqlite3.Error as exc:
                    raise LedgerError(f"{self.path}: closing the ledger: {exc}") from exc

    async def __aenter__(self) -> Ledger:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def __repr__(self) -> str:
        state = "closed" if self._connection is None else "open"
        mode = ", readonly" if self.readonly else ""
        return f"Ledger({self.path!r}, {state}{mode})"

    # -- writing -------------------------------------------------------------------------

    async def record_intent(self, intent: Intent, *, caps: Sequence[Cap] = ()) -> Purchase:
        """Write ``intent`` as an ``INTENT`` purchase, before it is sent.

        In the same transaction it checks that no purchase has this ``project_id``, that
        no purchase of this ``item_id`` is live (anything but ``FAILED`` or ``RELEASED``),
        and that every cap in ``caps`` still holds with this intent added, counting
        in-flight purchases.
        Otherwise it raises :class:`IntentRefused` and writes nothing. Returns the
        purchase as written: once this returns, the intent survives any crash.
        """
        return (await self.record_intents([intent], caps=caps))[0]

    async def record_control(
        self,
        action: str,
        *,
        actor: str,
        outcome: str,
        details: Mapping[str, Any] | None = None,
    ) -> ControlEvent:
        """Append one control action (``pause``, ``reload``...) with the engine clock's
        time, the name of the token that did it (``actor``) and how it ended."""
        import json

        now = self._clock.now()
        text = json.dumps(dict(details), separators=(",", ":"), sort_keys=True) if details else None

        async def work() -> int:
            await self._exec(
                "INSERT INTO control_events (at, action, actor, outcome, details)"
                " VALUES (?, ?, ?, ?, ?)",
                (now, action, actor, outcome, text),
            )
            rows = await self._exec("SELECT last_insert_rowid()")
            return int(rows[0][0])

        row_id = await self._transaction(work)
        return ControlEvent(row_id, now, action, actor, outcome, dict(details or {}))

    async def settle_setting(self, key: str, value: str) -> str:
        """Write the file setting ``key`` once: returns ``value`` when it was not set yet,
        else the value first written (never changed; see the schema's version 6)."""
        now = self._clock.now()

        async def work() -> str:
            await self._exec(
                "INSERT INTO ledger_meta (key, value, at) VALUES (?, ?, ?)"
                " ON CONFLICT (key) DO NOTHING",
                (key, value, now),
            )
            rows = await self._exec("SELECT value FROM ledger_meta WHERE key = ?", (key,))
            return str(rows[0][0])

        return await self._transaction(work)

    async def record_intents(
        self, intents: Sequence[Intent], *, caps: Sequence[Cap] = ()
    ) -> list[Purchase]:
        """Write several intents (a bulk purchase) in one transaction: all or none.

        The checks of :meth:`record_intent` apply to each intent and, for caps, to the
        batch as a whole.
        """
        if not intents:
            return []
        if len(intents) == 1:
            written = await self._try_insert_checked(intents[0], caps)
            if written is not None:
                self.intents += 1
                return [written]
        # Refused (or a batch): check step by step under the write lock, to say exactly
        # why, or to write after all if what refused the fast path has changed since.

        async def work() -> list[Purchase]:
            await self._refuse_duplicates(intents)
            await self._refuse_over_caps(intents, caps)
            now = self._clock.now()
            return [await self._insert_intent(intent, now) for intent in intents]

        purchases = await self._transaction(work)
        self.intents += len(purchases)
        return purchases

    async def _try_insert_checked(self, intent: Intent, caps: Sequence[Cap]) -> Purchase | None:
        """The fast path of one intent: a single ``INSERT ... SELECT ... WHERE <every
        check>`` statement. One statement is one atomic transaction that takes the write
        lock before it reads, so its checks and its write cannot interleave with another
        writer; a trigger adds the event. Returns ``None`` (nothing written) if any check
        fails."""
        conditions = [
            "NOT EXISTS (SELECT 1 FROM purchases WHERE project_id = ?)",
            "NOT EXISTS (SELECT 1 FROM purchases"
            f" WHERE item_id = ? AND state NOT IN ({_FREE_SQL}))",
        ]
        params: list[Any] = []
        for cap in caps:
            if cap.rule is not None and cap.rule != intent.rule:
                continue
            query, query_params = _cap_query(cap)
            conditions.append(f"({query}) + ? <= ?")
            adding = 1 if cap.kind == "count" else intent.price
            params.extend([*query_params, adding, cap.limit])
        now = self._clock.now()
        sql = (
            f"INSERT INTO purchases ({_COLUMNS})"
            " SELECT ?, ?, ?, ?, ?, NULL, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL"
            f" WHERE {' AND '.join(conditions)} RETURNING project_id"
        )
        values = [*self._intent_values(intent, now), intent.project_id, intent.item_id, *params]
        async with self._lock:
            with anyio.CancelScope(shield=True):
                if self.readonly:
                    raise LedgerError(f"{self.path}: the ledger is open read-only")
                rows = await self._exec(sql, values)
        return _intent_purchase(intent, now) if rows else None

    @staticmethod
    def _intent_values(intent: Intent, now: float) -> list[Any]:
        return [
            intent.project_id,
            intent.item_id,
            intent.name,
            intent.game,
            intent.price,
            intent.rule,
            PurchaseState.INTENT.value,
            intent.batch_id,
            int(intent.allow_trade_locked),
            now,
            now,
            intent.unlock_at,
            intent.send_until,
        ]

    async def _refuse_duplicates(self, intents: Sequence[Intent]) -> None:
        seen_ids: set[str] = set()
        seen_items: set[str] = set()
        for intent in intents:
            rows = await self._exec(
                "SELECT (SELECT 1 FROM purchases WHERE project_id = ?),"
                " (SELECT project_id FROM purchases"
                f" WHERE item_id = ? AND state NOT IN ({_FREE_SQL}))",
                (intent.project_id, intent.item_id),
            )
            known_id, live_purchase = rows[0]
            if known_id or intent.project_id in seen_ids:
                raise IntentRefused(
                    f"project_id {intent.project_id} is already in the ledger",
                    reason=IntentRefusal.DUPLICATE_PROJECT_ID,
                    project_id=intent.project_id,
                    item_id=intent.item_id,
                )
            if live_purchase or intent.item_id in seen_items:
                holder = live_purchase or "the same batch"
                raise IntentRefused(
                    f"item {intent.item_id} already has a live purchase ({holder});"
                    " a listing is bought at most once",
                    reason=IntentRefusal.DUPLICATE_ITEM,
                    project_id=intent.project_id,
                    item_id=intent.item_id,
                )
            seen_ids.add(intent.project_id)
            seen_items.add(intent.item_id)

    async def _cap_used(self, caps: Sequence[Cap]) -> list[int]:
        """What each cap counts now (buy-order exposure included), inside the caller's
        transaction."""
        if not caps:
            return []
        queries = [_cap_query(cap) for cap in caps]
        sql = "SELECT " + ", ".join(f"({q})" for q, _ in queries)
        params = [p for _, qp in queries for p in qp]
        return [int(v) for v in (await self._exec(sql, params))[0]]

    async def cap_usage(self, caps: Sequence[Cap]) -> list[int]:
        """What each cap counts now: purchases in flight or spent, and buy-order exposure
        (the figures the atomic checks compare with each cap's limit)."""
        async with self._lock:
            return await self._cap_used(caps)

    async def _refuse_over_caps(self, intents: Sequence[Intent], caps: Sequence[Cap]) -> None:
        if not caps:
            return
        used_by_cap = await self._cap_used(caps)
        for cap, used in zip(caps, used_by_cap, strict=True):
            mine = [i for i in intents if cap.rule is None or i.rule == cap.rule]
            adding = len(mine) if cap.kind == "count" else sum(i.price for i in mine)
            if mine and used + adding > cap.limit:
                first = mine[0]
                # said to a person (log, HALT reason): money in dollars
                show = _purchases if cap.kind == "count" else format_usd
                raise IntentRefused(
                    f"{cap.describe()}: {show(used)} committed (in flight and buy-order"
                    f" exposure included) + {show(adding)} would exceed the limit of"
                    f" {show(cap.limit)}",
                    reason=IntentRefusal.CAP,
                    project_id=first.project_id,
                    item_id=first.item_id,
                    cap=cap.describe(),
                    committed=int(used),
                    limit=cap.limit,
                )

    async def _insert_intent(self, intent: Intent, now: float) -> Purchase:
        # The purchases_intent_event trigger writes the INTENT event.
        await self._exec(
            f"INSERT INTO purchases ({_COLUMNS})"
            " VALUES (?, ?, ?, ?, ?, NULL, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL)",
            self._intent_values(intent, now),
        )
        return _intent_purchase(intent, now)

    async def _add_event(
        self,
        project_id: str,
        at: float,
        from_state: PurchaseState | None,
        to_state: PurchaseState,
        details: str | None,
    ) -> None:
        await self._exec(
            "INSERT INTO events (project_id, at, from_state, to_state, details)"
            " VALUES (?, ?, ?, ?, ?)",
            (project_id, at, from_state.value if from_state else None, to_state.value, details),
        )

    async def transition(
        self,
        project_id: str,
        to: PurchaseState,
        *,
        reason: str | None = None,
        charged_price: Money | None = None,
        marketplace_id: int | None = None,
        unlock_at: int | None = None,
        send_until: int | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> Purchase:
        """Move a purchase to ``to``, recording what is now known about it.

        Raises :class:`LedgerError` and writes nothing for an unknown ``project_id``, a
        move the state machine does not allow (:data:`TRANSITIONS`), a move to ``FAILED``
        or ``REFUNDED`` without a ``reason``, or details outside :data:`DETAIL_FIELDS`.
        Fields left ``None`` keep their value.
        """
        move = Resolution(
            PurchaseState(to),
            reason=reason,
            charged_price=charged_price,
            marketplace_id=marketplace_id,
            unlock_at=unlock_at,
            send_until=send_until,
            details=dict(details or {}),
        )
        _check_money(project_id, "charged_price", charged_price)
        encode_details(move.details)  # refuse bad input before taking the write lock
        moved = await self._move(project_id, lambda _purchase, _now: move)
        if moved is None:  # pragma: no cover - the decision above always moves
            raise LedgerError(f"{self.path}: purchase {project_id} was not moved")
        return moved

    async def resolve(
        self,
        project_id: str,
        trade: ProjectTrade | None,
        *,
        watch: float = DEFAULT_WATCH,
    ) -> Purchase | None:
        """Apply check-many-project-id's answer about ``project_id`` (``None``: absent).

        Reads, decides (:func:`resolve`) and writes in one transaction, so a concurrent
        move cannot slip in between. Returns the purchase after the move, or ``None``
        when the answer calls for none (an absence, which alone proves nothing, or nothing
        new). A released purchase absent ``watch`` seconds after its release is FAILED.
        """
        return await self._move(
            project_id, lambda purchase, now: resolve(purchase, trade, now=now, watch=watch)
        )

    async def release(
        self,
        project_id: str,
        absence: Absence,
        *,
        grace: float = DEFAULT_GRACE,
        gap: float = DEFAULT_ABSENCE_GAP,
    ) -> Purchase | None:
        """RELEASED (budget and item released) when ``absence`` proves the
        purchase did not happen (:func:`release`); ``None`` when it does not yet."""
        return await self._move(
            project_id, lambda purchase, _now: release(purchase, absence, grace=grace, gap=gap)
        )

    async def resolve_history(
        self, project_id: str, rows: Sequence[HistoryTrade]
    ) -> Purchase | None:
        """Apply my-history: the row that matches the purchase (:func:`history_match`), if
        any, says it happened. Returns the purchase after the move, or ``None``."""

        def decide(purchase: Purchase, _now: float) -> Resolution | None:
            row = history_match(purchase, rows)
            return resolve_history(purchase, row) if row is not None else None

        return await self._move(project_id, decide)

    async def _move(
        self, project_id: str, decide: Callable[[Purchase, float], Resolution | None]
    ) -> Purchase | None:
        """In one transaction: read the purchase, ask ``decide`` for the move, check it
        against the state machine, write it and its event."""

        async def work() -> Purchase | None:
            rows = await self._exec(
                f"SELECT {_COLUMNS} FROM purchases WHERE project_id = ?", (project_id,)
            )
            if not rows:
                raise LedgerError(f"{self.path}: no purchase with project_id {project_id!r}")
            before = _purchase(rows[0])
            now = self._clock.now()
            move = decide(before, now)
            if move is None:
                return None
            check_transition(project_id, before.state, move.state, move.reason)
            _check_money(project_id, "charged_price", move.charged_price)
            encoded = encode_details(move.details)
            after = _moved(before, move, now)
            await self._exec(
                "UPDATE purchases SET state = ?, updated_at = ?, charged_price = ?,"
                " marketplace_id = ?, unlock_at = ?, send_until = ?, reason = ?"
                " WHERE project_id = ?",
                (
                    after.state.value,
                    now,
                    after.charged_price,
                    after.marketplace_id,
                    after.unlock_at,
                    after.send_until,
                    after.reason,
                    project_id,
                ),
            )
            await self._add_event(project_id, now, before.state, after.state, encoded)
            return after

        return await self._transaction(work)


def _intent_purchase(intent: Intent, now: float) -> Purchase:
    return Purchase(
        project_id=intent.project_id,
        item_id=intent.item_id,
        name=intent.name,
        game=intent.game,
        price=intent.price,
        charged_price=None,
        rule=intent.rule,
        state=PurchaseState.INTENT,
        batch_id=intent.batch_id,
        allow_trade_locked=intent.allow_trade_locked,
        created_at=now,
        updated_at=now,
        unlock_at=intent.unlock_at,
        send_until=intent.send_until,
        marketplace_id=None,
        reason=None,
    )


def _moved(before: Purchase, move: Resolution, now: float) -> Purchase:
    """``before`` after ``move``: fields the move leaves ``None`` keep their value."""
    return replace(
        before,
        state=move.state,
        updated_at=now,
        reason=_keep(move.reason, before.reason),
        charged_price=_keep(move.charged_price, before.charged_price),
        marketplace_id=_keep(move.marketplace_id, before.marketplace_id),
        unlock_at=_keep(move.unlock_at, before.unlock_at),
        send_until=_keep(move.send_until, before.send_until),
    )


def _keep(new: _T | None, old: _T | None) -> _T | None:
    return new if new is not None else old


def _purchases(n: int) -> str:
    return f"{n} purchase{'s' * (n != 1)}"
