"""Reading the ledger's purchases: the queries of :class:`~engine.ledger.Ledger` that change
nothing (one purchase, lists by state, the history, and what budgets count), and the SQL
they share with the writer (the column list, the state sets, the cap queries).

A mixin, like the buy-order methods of ``_orders.py``: :class:`PurchaseQueries` only needs
the ledger's ``_read``.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

from .._money import Money
from ._connection import Row
from ._orders import _LIVE_SQL, exposure_sql
from ._records import Cap, Committed, ControlEvent, Event, Purchase, Totals, summarize
from ._schema import SECONDS_PER_DAY
from ._states import BUDGET_STATES, IN_FLIGHT_STATES, PurchaseState

__all__ = ["PurchaseQueries"]

_COLUMNS = (
    "project_id, item_id, name, game, price, charged_price, rule, state, batch_id,"
    " allow_trade_locked, created_at, updated_at, unlock_at, send_until, marketplace_id,"
    " reason"
)
_BUDGET_SQL = ", ".join(f"'{s.value}'" for s in sorted(BUDGET_STATES))
_UNRESOLVED_SQL = ", ".join(f"'{s.value}'" for s in sorted(IN_FLIGHT_STATES))
_OPEN_TRADE_SQL = ", ".join(f"'{s.value}'" for s in (PurchaseState.BOUGHT, PurchaseState.RESERVED))
_RELEASED_SQL = f"'{PurchaseState.RELEASED.value}'"
# A purchase in these states no longer holds its item: it may be bought again.
_FREE_SQL = f"'{PurchaseState.FAILED.value}', {_RELEASED_SQL}"

_HOLDING: dict[str, str] = {
    "unresolved": f"SELECT 1 FROM purchases WHERE state IN ({_UNRESOLVED_SQL})",
    "open_trades": f"SELECT 1 FROM purchases WHERE state IN ({_OPEN_TRADE_SQL})",
    "released": f"SELECT 1 FROM purchases WHERE state = {_RELEASED_SQL}",
    "live_orders": f"SELECT 1 FROM buy_orders WHERE state IN ({_LIVE_SQL})",
}
"""The kinds of rows a reconcile pass looks for, each as the rows that make it held: what
:meth:`~engine.ledger.Ledger._holding` knows of a ledger in memory."""
HOLDING_SQL = "SELECT " + ", ".join(f"EXISTS ({sql})" for sql in _HOLDING.values())
HOLDING_KINDS = tuple(_HOLDING)


def _purchase(row: Row) -> Purchase:
    return Purchase(
        project_id=row[0],
        item_id=row[1],
        name=row[2],
        game=row[3],
        price=row[4],
        charged_price=row[5],
        rule=row[6],
        state=PurchaseState(row[7]),
        batch_id=row[8],
        allow_trade_locked=bool(row[9]),
        created_at=row[10],
        updated_at=row[11],
        unlock_at=row[12],
        send_until=row[13],
        marketplace_id=row[14],
        reason=row[15],
    )


def _cap_query(cap: Cap, *, orders: bool = True) -> tuple[str, list[Any]]:
    """SQL for what ``cap`` counts now: in-flight and spent purchases and, unless
    ``orders`` is false, what live buy orders may still buy (their exposure counts against
    every cap, whatever its day, until the order is settled).

    Whole UTC days come from the trigger-kept ``budget_days``; a ``since`` that is not a
    day start adds the rest of its day from ``purchases`` (at most one day of rows).
    """
    sql, params = _purchases_cap_query(cap)
    if not orders:
        return sql, params
    held_sql, held_params = exposure_sql(cap.kind, cap.rule)
    return f"SELECT ({sql}) + ({held_sql})", [*params, *held_params]


def _purchases_cap_query(cap: Cap) -> tuple[str, list[Any]]:
    column = "count" if cap.kind == "count" else "amount"
    rule_sql = " AND rule = ?" if cap.rule is not None else ""
    rule_params: list[Any] = [cap.rule] if cap.rule is not None else []
    if cap.since is None:
        sql = f"SELECT coalesce(sum({column}), 0) FROM budget_days WHERE 1{rule_sql}"
        return sql, rule_params
    first_full_day = math.ceil(cap.since / SECONDS_PER_DAY)
    days_sql = f"SELECT coalesce(sum({column}), 0) FROM budget_days WHERE day >= ?{rule_sql}"
    days_params = [first_full_day, *rule_params]
    if first_full_day * SECONDS_PER_DAY == cap.since:  # a day start: whole days only
        return days_sql, days_params
    what = "count(*)" if cap.kind == "count" else "coalesce(sum(coalesce(charged_price, price)), 0)"
    # "+state" keeps SQLite on the created_at index: the head is at most one day of rows,
    # the state index would walk every live purchase ever made.
    head_sql = (
        f"SELECT {what} FROM purchases WHERE +state IN ({_BUDGET_SQL})"
        f" AND created_at >= ? AND created_at < ?{rule_sql}"
    )
    head_params = [cap.since, first_full_day * SECONDS_PER_DAY, *rule_params]
    return f"SELECT ({days_sql}) + ({head_sql})", [*days_params, *head_params]


class PurchaseQueries:
    """Purchase-reading methods of :class:`~engine.ledger.Ledger`."""

    if TYPE_CHECKING:

        async def _read(self, sql: str, parameters: Sequence[Any] = ()) -> list[Row]: ...
        async def _holding(self, kind: str) -> bool: ...

    async def get(self, project_id: str) -> Purchase | None:
        """The purchase with this ``project_id``, or ``None``."""
        rows = await self._read(
            f"SELECT {_COLUMNS} FROM purchases WHERE project_id = ?", (project_id,)
        )
        return _purchase(rows[0]) if rows else None

    async def live_items(self, item_ids: Collection[str]) -> set[str]:
        """Those of ``item_ids`` that already have a live purchase (any state but FAILED
        or RELEASED): one read, so a batch of decisions can skip them before the buyer
        (the intent's own check stays the last line of defence)."""
        wanted = sorted(set(item_ids))
        found: set[str] = set()
        for start in range(0, len(wanted), 500):  # under SQLite's parameter limit
            chunk = wanted[start : start + 500]
            rows = await self._read(
                f"SELECT item_id FROM purchases WHERE item_id IN ({', '.join('?' * len(chunk))})"
                f" AND state NOT IN ({_FREE_SQL})",
                chunk,
            )
            found.update(str(r[0]) for r in rows)
        return found

    async def purchases(
        self,
        *,
        states: Collection[PurchaseState] | None = None,
        rule: str | None = None,
        since: float | None = None,
    ) -> list[Purchase]:
        """Purchases, oldest first, optionally only in ``states``, of ``rule``, or created
        at or after ``since``."""
        sql = f"SELECT {_COLUMNS} FROM purchases WHERE 1"
        params: list[Any] = []
        if states is not None:
            values = sorted(PurchaseState(s).value for s in states)
            if not values:
                return []
            sql += f" AND state IN ({', '.join('?' * len(values))})"
            params.extend(values)
        if rule is not None:
            sql += " AND rule = ?"
            params.append(rule)
        if since is not None:
            sql += " AND created_at >= ?"
            params.append(since)
        sql += " ORDER BY created_at, project_id"
        return [_purchase(r) for r in await self._read(sql, params)]

    async def unresolved(self) -> list[Purchase]:
        """``INTENT`` and ``UNKNOWN`` purchases, oldest first: after a restart, every one
        must be resolved by its ``project_id`` before it may be considered failed."""
        if not await self._holding("unresolved"):
            return []
        rows = await self._read(
            f"SELECT {_COLUMNS} FROM purchases WHERE state IN ({_UNRESOLVED_SQL})"
            " ORDER BY created_at, project_id"
        )
        return [_purchase(r) for r in rows]

    async def open_trades(self) -> list[Purchase]:
        """``BOUGHT`` and ``RESERVED`` purchases, oldest first: trades still to follow."""
        if not await self._holding("open_trades"):
            return []
        rows = await self._read(
            f"SELECT {_COLUMNS} FROM purchases WHERE state IN ({_OPEN_TRADE_SQL})"
            " ORDER BY created_at, project_id"
        )
        return [_purchase(r) for r in rows]

    async def released(self, *, since: float) -> list[Purchase]:
        """``RELEASED`` purchases released at or after ``since``, oldest first: those still
        watched for a late appearance."""
        if not await self._holding("released"):
            return []
        rows = await self._read(
            f"SELECT {_COLUMNS} FROM purchases WHERE state = {_RELEASED_SQL}"
            " AND updated_at >= ? ORDER BY updated_at, project_id",
            (since,),
        )
        return [_purchase(r) for r in rows]

    async def released_before(self, until: float) -> list[Purchase]:
        """``RELEASED`` purchases released before ``until``: their watch is over."""
        if not await self._holding("released"):
            return []
        rows = await self._read(
            f"SELECT {_COLUMNS} FROM purchases WHERE state = {_RELEASED_SQL}"
            " AND updated_at < ? ORDER BY updated_at, project_id",
            (until,),
        )
        return [_purchase(r) for r in rows]

    async def overdue(self, now: float) -> list[Purchase]:
        """Open trades (BOUGHT, RESERVED) past their ``send_until``: the service still
        calls them open, so they are shown as overdue, never refunded by the clock."""
        if not await self._holding("open_trades"):
            return []
        rows = await self._read(
            f"SELECT {_COLUMNS} FROM purchases WHERE state IN ({_OPEN_TRADE_SQL})"
            " AND send_until IS NOT NULL AND send_until < ? ORDER BY created_at, project_id",
            (now,),
        )
        return [_purchase(r) for r in rows]

    async def events(self, project_id: str | None = None) -> list[Event]:
        """The append-only history, oldest first (of one purchase, if given)."""
        import json

        sql = "SELECT id, project_id, at, from_state, to_state, details FROM events"
        params: tuple[Any, ...] = ()
        if project_id is not None:
            sql += " WHERE project_id = ?"
            params = (project_id,)
        rows = await self._read(sql + " ORDER BY id", params)
        return [
            Event(
                id=r[0],
                project_id=r[1],
                at=r[2],
                from_state=PurchaseState(r[3]) if r[3] else None,
                to_state=PurchaseState(r[4]),
                details=json.loads(r[5]) if r[5] else {},
            )
            for r in rows
        ]

    async def control_events(self, *, after: int = 0, limit: int = 100) -> list[ControlEvent]:
        """Control actions with an id above ``after``, oldest first, at most ``limit``."""
        import json

        rows = await self._read(
            "SELECT id, at, action, actor, outcome, details FROM control_events"
            " WHERE id > ? ORDER BY id LIMIT ?",
            (after, limit),
        )
        return [
            ControlEvent(r[0], r[1], r[2], r[3], r[4], json.loads(r[5]) if r[5] else {})
            for r in rows
        ]

    async def settings(self) -> dict[str, str]:
        """The file's written-once settings (``mode``, the paper wallet's start...)."""
        rows = await self._read("SELECT key, value FROM ledger_meta ORDER BY key")
        return {str(r[0]): str(r[1]) for r in rows}

    async def committed(self, *, rule: str | None = None, since: float | None = None) -> Money:
        """What budgets count: the amount of every purchase in flight or spent (of
        ``rule``, created at or after ``since``)."""
        sql, params = _cap_query(Cap(limit=0, rule=rule, since=since), orders=False)
        return int((await self._read(sql, params))[0][0])

    async def count(self, *, rule: str | None = None, since: float | None = None) -> int:
        """How many purchases count against a budget (of ``rule``, since ``since``)."""
        sql, params = _cap_query(Cap(limit=0, kind="count", rule=rule, since=since), orders=False)
        return int((await self._read(sql, params))[0][0])

    async def committed_by_rule(self, *, since: float | None = None) -> dict[str, Committed]:
        """What budgets count, per rule (created at or after ``since``): the cheap form of
        :meth:`totals` for a decision loop, read from the day buckets (a few rows per day
        and rule, whatever the history)."""
        rows: list[Row]
        if since is None:
            rows = await self._read(
                "SELECT rule, sum(amount), sum(count) FROM budget_days GROUP BY rule"
            )
        else:
            first_full_day = math.ceil(since / SECONDS_PER_DAY)
            rows = await self._read(
                "SELECT rule, sum(amount), sum(count) FROM budget_days WHERE day >= ?"
                " GROUP BY rule",
                (first_full_day,),
            )
            if first_full_day * SECONDS_PER_DAY != since:
                rows += await self._read(
                    "SELECT rule, sum(coalesce(charged_price, price)), count(*) FROM purchases"
                    f" WHERE +state IN ({_BUDGET_SQL}) AND created_at >= ? AND created_at < ?"
                    " GROUP BY rule",
                    (since, first_full_day * SECONDS_PER_DAY),
                )
        result: dict[str, Committed] = {}
        for rule, amount, count in rows:
            before = result.get(rule, Committed())
            result[rule] = Committed(before.amount + amount, before.count + count)
        return {rule: c for rule, c in sorted(result.items()) if c.count}

    async def totals(self, *, since: float | None = None) -> Totals:
        """Money and counts by state and by rule (of purchases created since ``since``).
        Reads every purchase: for reports; a decision loop wants
        :meth:`committed_by_rule`."""
        return summarize(await self.purchases(since=since))
