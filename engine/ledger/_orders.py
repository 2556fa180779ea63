"""The buy orders snipe placed, kept beside the purchases, and their fills.

A buy order lets the service spend for us while we are not looking, so the ledger treats
it like a purchase that may happen ``amount - filled`` more times:

- **Reserved before it exists.** :meth:`OrderBook.reserve_order` writes the order
  (``PENDING``) with its whole remaining *exposure* (``price * (amount - filled)``) in one
  write transaction that checks every cap first, the same caps and the same sums a single
  purchase's intent is checked against (:func:`exposure_sql` is part of every cap query).
  Only then is ``create-buy-order`` sent.
- **Unknown until the service says.** A create whose answer was lost is ``UNKNOWN``: it may
  exist and fill. It keeps its exposure until the order list shows it (``OPEN``) or the
  history settles it.
- **Every fill is a purchase.** A fill is a ``BOUGHT`` purchase (``project_id``
  ``ord-<key>-<n>``, at the order's price until the history tells what was paid), written
  from the ``filled`` count of the order list, or from ``my-history`` rows when the order
  left the list (filled up, or removed) before its last fills were seen. A fill seen only
  in the ``filled`` count has a stand-in item id (``order:<key>:<n>``) until its history row
  names the item. A history row gives the fill its item id, trade id and price
  (:meth:`OrderBook.attach_fills`; an item that already has a live purchase keeps the
  stand-in, and the event names it); its trade status
  later moves it to ``COMPLETED`` or ``REFUNDED`` (which gives its budget back).
- **Gone is not settled.** An order missing from the list is ``GONE``: it keeps its
  exposure until the history has shown every fill (``filled == amount``) or has been read
  again long after it left; then it is ``CLOSED``. A create that never shows up in the list
  or the history is ``FAILED`` after the same wait.

Order states are this module's own (the purchase state table is not involved).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .._errors import IntentRefusal, IntentRefused, LedgerError
from .._money import Money
from ._connection import Row
from ._records import Cap, Intent, encode_details
from ._states import PurchaseState

__all__ = [
    "FILL_PREFIX",
    "LIVE_ORDER_STATES",
    "BuyOrderRecord",
    "Exposure",
    "HistoryFill",
    "OrderBook",
    "OrderState",
    "exposure_sql",
]

FILL_PREFIX = "ord-"
"""``project_id`` prefix of purchases made by a buy order (the service knows no
``project_id`` for them, so they are never looked up by one)."""


class OrderState(enum.StrEnum):
    PENDING = "PENDING"
    """Reserved in the ledger; the create request is about to be sent (after a crash it
    may or may not have been)."""
    UNKNOWN = "UNKNOWN"
    """The create was sent and its answer lost: the order may exist and fill."""
    OPEN = "OPEN"
    """The service listed it, or answered the create with its id."""
    GONE = "GONE"
    """No longer listed (filled up, or removed); its last fills may not be recorded yet."""
    CLOSED = "CLOSED"
    """Settled: every fill the service shows is recorded. Final."""
    FAILED = "FAILED"
    """Never placed: refused, or neither listed nor in the history long after. Final."""


LIVE_ORDER_STATES: frozenset[OrderState] = frozenset(
    {OrderState.PENDING, OrderState.UNKNOWN, OrderState.OPEN, OrderState.GONE}
)
"""States whose remaining exposure counts against the caps."""

_LIVE_SQL = ", ".join(f"'{s.value}'" for s in sorted(LIVE_ORDER_STATES))

ORDERS_V3 = f"""
-- Buy orders as the ledger reserves them (issue 14): one row per order ever placed (a name
-- may have had several), the service's id unknown until the create answer or the order
-- list gives it, the fills' project_id key fixed at reservation, and an order state.
CREATE TABLE buy_orders_v3 (
    id          INTEGER PRIMARY KEY,
    name        TEXT    NOT NULL,
    order_id    INTEGER,
    fill_key    TEXT    NOT NULL UNIQUE,
    rule        TEXT    NOT NULL,
    game        TEXT,
    price       INTEGER NOT NULL CHECK (price >= 0),
    amount      INTEGER NOT NULL CHECK (amount >= 0),
    filled      INTEGER NOT NULL CHECK (filled >= 0),
    state       TEXT    NOT NULL CHECK (state IN ({", ".join(f"'{s.value}'" for s in OrderState)})),
    created_at  REAL    NOT NULL,
    updated_at  REAL    NOT NULL,
    gone_at     REAL,
    reason      TEXT
) STRICT;
INSERT INTO buy_orders_v3 (name, order_id, fill_key, rule, game, price, amount, filled, state,
                           created_at, updated_at)
SELECT name, order_id, CAST(order_id AS TEXT), rule, game, price, amount, filled,
       CASE WHEN active = 1 THEN 'OPEN' ELSE 'CLOSED' END, created_at, updated_at
FROM buy_orders;
DROP TABLE buy_orders;
ALTER TABLE buy_orders_v3 RENAME TO buy_orders;
-- The service keeps one order per name: so does the ledger, among the live ones.
CREATE UNIQUE INDEX buy_orders_live_name ON buy_orders (name) WHERE state IN ({_LIVE_SQL});
"""
"""Schema step 3 (appended to the ledger's ordered migrations)."""

_COLUMNS = (
    "id, name, order_id, fill_key, rule, game, price, amount, filled, state, created_at,"
    " updated_at, gone_at, reason"
)
_FILL_DETAILS = {"source": "buy order"}
_FREE_SQL = f"'{PurchaseState.FAILED.value}', '{PurchaseState.RELEASED.value}'"
_HISTORY = "my-history"


def exposure_sql(kind: str, rule: str | None) -> tuple[str, list[Any]]:
    """SQL for what the live orders (of ``rule``) may still buy: money, or a count."""
    remaining = "max(amount - filled, 0)"
    what = remaining if kind == "count" else f"price * {remaining}"
    rule_sql = " AND rule = ?" if rule is not None else ""
    sql = f"SELECT coalesce(sum({what}), 0) FROM buy_orders WHERE state IN ({_LIVE_SQL}){rule_sql}"
    return sql, ([rule] if rule is not None else [])


@dataclass(frozen=True, slots=True)
class BuyOrderRecord:
    """A buy order snipe placed (or is placing). ``amount`` is how many it asks for in
    all, ``filled`` how many fills the ledger holds."""

    id: int
    name: str
    order_id: int | None
    fill_key: str
    rule: str
    game: str | None
    price: Money
    amount: int
    filled: int
    state: OrderState
    created_at: float
    updated_at: float
    gone_at: float | None
    reason: str | None

    @property
    def live(self) -> bool:
        return self.state in LIVE_ORDER_STATES

    @property
    def active(self) -> bool:
        """Placed (or maybe placed) and still able to buy."""
        return self.state in (OrderState.PENDING, OrderState.UNKNOWN, OrderState.OPEN)

    @property
    def exposure(self) -> Money:
        """What the order may still spend, as the caps count it."""
        return self.price * max(0, self.amount - self.filled) if self.live else 0

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "order_id": self.order_id,
            "rule": self.rule,
            "game": self.game,
            "price": self.price,
            "amount": self.amount,
            "filled": self.filled,
            "state": self.state.value,
            "exposure": self.exposure,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class Exposure:
    """What live buy orders may still spend, in total and per rule (USD x 1000)."""

    total: int = 0
    per_rule: dict[str, int] | None = None

    def of(self, rule: str) -> int:
        return (self.per_rule or {}).get(rule, 0)


@dataclass(frozen=True, slots=True)
class HistoryFill:
    """A ``my-history`` buy row taken as a fill of an order."""

    trade_id: int
    price: Money | None
    status: int | None
    item_id: str | None = None
    """The item the fill bought, as the history names it."""


def _order(row: Row) -> BuyOrderRecord:
    (oid, name, order_id, key, rule, game, price, amount, filled, state, created, updated) = row[
        :12
    ]
    return BuyOrderRecord(
        oid,
        name,
        order_id,
        key,
        rule,
        game,
        price,
        amount,
        filled,
        OrderState(state),
        created,
        updated,
        row[12],
        row[13],
    )


class _Store(Protocol):
    async def _exec(self, sql: str, parameters: Any = ()) -> list[Row]: ...
    async def _read(self, sql: str, parameters: Any = ()) -> list[Row]: ...
    async def _holding(self, kind: str) -> bool: ...
    async def _transaction(self, work: Any) -> Any: ...
    async def _insert_intent(self, intent: Intent, now: float) -> Any: ...
    async def _add_event(self, *args: Any) -> None: ...
    async def _cap_used(self, caps: Sequence[Cap]) -> list[int]: ...

    _clock: Any


class OrderBook:
    """Buy-order methods of :class:`~engine.ledger.Ledger`."""

    # -- reading -------------------------------------------------------------------------

    async def orders(self: _Store, *, live_only: bool = True) -> list[BuyOrderRecord]:
        """The buy orders snipe placed: the live ones (whose exposure counts), or all."""
        if live_only and not await self._holding("live_orders"):
            return []
        where = f"WHERE state IN ({_LIVE_SQL})" if live_only else ""
        rows = await self._read(f"SELECT {_COLUMNS} FROM buy_orders {where} ORDER BY name, id")
        return [_order(r) for r in rows]

    async def order_exposure(self: _Store) -> Exposure:
        """What the live orders may still spend, per rule: what every cap adds to the
        purchases it counts."""
        if not await self._holding("live_orders"):
            return Exposure(0, {})
        rows = await self._read(
            "SELECT rule, sum(price * max(amount - filled, 0)) FROM buy_orders"
            f" WHERE state IN ({_LIVE_SQL}) GROUP BY rule ORDER BY rule"
        )
        per_rule = {rule: int(amount) for rule, amount in rows if amount}
        return Exposure(sum(per_rule.values()), per_rule)

    async def known_trade_ids(self: _Store) -> set[int]:
        """The service's ids of every purchase the ledger knows (fills included)."""
        rows = await self._read(
            "SELECT marketplace_id FROM purchases WHERE marketplace_id IS NOT NULL"
        )
        return {int(r[0]) for r in rows}

    async def own_items(self: _Store) -> set[str]:
        """Item ids of snipe's own purchases (not fills) whose trade id is not known: a
        history row of one of these may be that purchase, so it is never taken as a fill.
        (A purchase whose trade id is known is told apart by :meth:`known_trade_ids`, so
        a relisted item it once bought can still be a fill.)"""
        rows = await self._read(
            "SELECT item_id FROM purchases WHERE project_id NOT LIKE ? AND marketplace_id IS NULL",
            (f"{FILL_PREFIX}%",),
        )
        return {str(r[0]) for r in rows}

    async def open_fills(self: _Store) -> list[tuple[str, str, int | None, float]]:
        """Fills whose trade is not finished: (project_id, order name, trade id, when the
        order was placed). The fill's trade is older than its row in the ledger (it was
        seen at a later sync): the history is read from the order's placing on."""
        if not await self._holding("open_trades"):  # a fill is a BOUGHT or RESERVED purchase
            return []
        rows = await self._read(
            "SELECT p.project_id, p.name, p.marketplace_id,"
            " coalesce(min(o.created_at), p.created_at - 86400) FROM purchases AS p"
            " LEFT JOIN buy_orders AS o ON p.project_id LIKE ? || o.fill_key || '-%'"
            " WHERE p.project_id LIKE ? AND p.state IN (?, ?)"
            " GROUP BY p.project_id ORDER BY p.created_at",
            (
                FILL_PREFIX,
                f"{FILL_PREFIX}%",
                PurchaseState.BOUGHT.value,
                PurchaseState.RESERVED.value,
            ),
        )
        return [(r[0], r[1], r[2], r[3]) for r in rows]

    # -- reserving and placing -----------------------------------------------------------

    async def reserve_order(
        self: _Store,
        *,
        name: str,
        rule: str,
        game: str | None,
        price: Money,
        amount: int,
        caps: Sequence[Cap] = (),
    ) -> BuyOrderRecord:
        """Reserve an order's exposure before the create request is sent: a new
        ``PENDING`` order, or a live one of ``name`` raised to at least ``price`` and
        ``amount`` (an edit may or may not take effect, so the larger of old and new counts
        until the service says). In one write transaction, after checking that every cap
        in ``caps`` holds with the added exposure (purchases in flight and every other
        order counted); otherwise :class:`IntentRefused` and nothing is written."""
        if isinstance(price, bool) or not isinstance(price, int) or price < 0:
            raise LedgerError(f"buy order {name!r}: price must be a non-negative int")
        now = self._clock.now()

        async def work() -> BuyOrderRecord:
            rows = await self._exec(
                f"SELECT {_COLUMNS} FROM buy_orders WHERE name = ? AND state IN ({_LIVE_SQL})",
                (name,),
            )
            current = _order(rows[0]) if rows else None
            new_price = max(price, current.price) if current else price
            new_amount = max(amount, current.amount) if current else amount
            filled = current.filled if current else 0
            remaining = max(0, new_amount - filled)
            adding_money = new_price * remaining - (current.exposure if current else 0)
            adding_count = remaining - (max(0, current.amount - filled) if current else 0)
            used = await self._cap_used(caps)
            for cap, before in zip(caps, used, strict=True):
                if cap.rule is not None and cap.rule != rule:
                    continue
                adding = adding_count if cap.kind == "count" else adding_money
                if adding > 0 and before + adding > cap.limit:
                    raise IntentRefused(
                        f"{cap.describe()}: {before} committed (in flight and buy orders"
                        f" included) + {adding} for a buy order of {name!r} would exceed"
                        f" the limit of {cap.limit}",
                        reason=IntentRefusal.CAP,
                        project_id=f"{FILL_PREFIX}{name}"[:50],
                        item_id=name,
                        cap=cap.describe(),
                        committed=int(before),
                        limit=cap.limit,
                    )
            if current is not None:
                await self._exec(
                    "UPDATE buy_orders SET price = ?, amount = ?, rule = ?, game = ?,"
                    " updated_at = ? WHERE id = ?",
                    (new_price, new_amount, rule, game, now, current.id),
                )
                oid = current.id
            else:
                (next_id,) = (await self._exec("SELECT coalesce(max(id), 0) + 1 FROM buy_orders"))[
                    0
                ]
                await self._exec(
                    f"INSERT INTO buy_orders ({_COLUMNS})"
                    " VALUES (?, ?, NULL, ?, ?, ?, ?, ?, 0, ?, ?, ?, NULL, NULL)",
                    (
                        next_id,
                        name,
                        f"L{next_id}",
                        rule,
                        game,
                        price,
                        amount,
                        OrderState.PENDING.value,
                        now,
                        now,
                    ),
                )
                oid = next_id
            return await _get(self, oid)

        result: BuyOrderRecord = await self._transaction(work)
        return result

    async def order_placed(
        self: _Store,
        order: BuyOrderRecord,
        *,
        order_id: int,
        price: Money | None = None,
        amount: int | None = None,
    ) -> BuyOrderRecord:
        """The service gave the order's id (create answer, or the order list): ``OPEN``,
        with the price and amount the service holds when known."""
        now = self._clock.now()

        async def work() -> BuyOrderRecord:
            await self._exec(
                "UPDATE buy_orders SET order_id = ?, state = ?, price = coalesce(?, price),"
                " amount = coalesce(?, amount), gone_at = NULL, updated_at = ? WHERE id = ?",
                (order_id, OrderState.OPEN.value, price, amount, now, order.id),
            )
            return await _get(self, order.id)

        result: BuyOrderRecord = await self._transaction(work)
        return result

    async def set_order_state(
        self: _Store, order: BuyOrderRecord, state: OrderState, *, reason: str | None = None
    ) -> BuyOrderRecord:
        """Move an order (``UNKNOWN`` after a lost answer, ``GONE`` when no longer
        listed, ``CLOSED``/``FAILED`` when settled); refuses to leave a final state."""
        now = self._clock.now()

        async def work() -> BuyOrderRecord:
            before = await _get(self, order.id)
            if not before.live and state is not before.state:
                raise LedgerError(
                    f"buy order {before.name!r}: cannot move {before.state} -> {state}"
                )
            gone_at = (before.gone_at or now) if state is OrderState.GONE else before.gone_at
            await self._exec(
                "UPDATE buy_orders SET state = ?, gone_at = ?, reason = coalesce(?, reason),"
                " updated_at = ? WHERE id = ?",
                (state.value, gone_at, reason, now, order.id),
            )
            return await _get(self, order.id)

        result: BuyOrderRecord = await self._transaction(work)
        return result

    # -- fills ---------------------------------------------------------------------------

    async def record_fills(self: _Store, order: BuyOrderRecord, filled: int) -> list[str]:
        """The service says the order has bought ``filled`` items in all: record each new
        one as a ``BOUGHT`` purchase at the order's price, in one transaction. Returns the
        new purchases' ``project_id`` s (none when nothing is new)."""
        now = self._clock.now()

        async def work() -> list[str]:
            current = await _get(self, order.id)
            return await _add_fills(self, current, [None] * max(0, filled - current.filled), now)

        result: list[str] = await self._transaction(work)
        return result

    async def attach_fills(
        self: _Store, order: BuyOrderRecord, rows: Sequence[HistoryFill]
    ) -> list[str]:
        """History rows (oldest first, none of them known to the ledger yet) taken as
        fills of ``order``: the first ones give the fills recorded from the order list
        their trade id and price; the rest are fills the list never showed, recorded now.
        Returns the ``project_id`` s of the new fills."""
        now = self._clock.now()

        async def work() -> list[str]:
            current = await _get(self, order.id)
            pending = await self._exec(
                "SELECT project_id FROM purchases WHERE project_id LIKE ?"
                " AND marketplace_id IS NULL ORDER BY created_at, project_id",
                (f"{FILL_PREFIX}{current.fill_key}-%",),
            )
            queue = list(rows)
            for (pid,), row in zip(pending, queue, strict=False):
                await _learn_trade(self, pid, row, now)
            extra = queue[len(pending) :]
            return await _add_fills(self, current, list(extra), now)

        result: list[str] = await self._transaction(work)
        return result


async def _get(store: _Store, oid: int) -> BuyOrderRecord:
    rows = await store._exec(f"SELECT {_COLUMNS} FROM buy_orders WHERE id = ?", (oid,))
    if not rows:
        raise LedgerError(f"no buy order {oid} in the ledger")
    return _order(rows[0])


async def _add_fills(
    store: _Store, order: BuyOrderRecord, fills: Sequence[HistoryFill | None], now: float
) -> list[str]:
    new = []
    for n, fill in enumerate(fills, start=order.filled + 1):
        pid = f"{FILL_PREFIX}{order.fill_key}-{n}"
        item_id = await _free_item_id(store, fill.item_id if fill is not None else None)
        # Until the history names the item (a fill seen in the order list's count), a
        # stand-in id that no listing has.
        intent = Intent(
            pid, item_id or f"order:{order.fill_key}:{n}", order.name, order.price, order.rule
        )
        await store._insert_intent(intent, now)
        details = dict(_FILL_DETAILS)
        if fill is not None:
            details = {"source": _HISTORY, "trade_id": str(fill.trade_id)}
            if fill.item_id is not None:
                details["item_id"] = fill.item_id
        await store._exec(
            "UPDATE purchases SET state = ?, updated_at = ?, game = ?, charged_price = ?,"
            " marketplace_id = ? WHERE project_id = ?",
            (
                PurchaseState.BOUGHT.value,
                now,
                order.game,
                fill.price if fill is not None else None,
                fill.trade_id if fill is not None else None,
                pid,
            ),
        )
        await store._add_event(
            pid, now, PurchaseState.INTENT, PurchaseState.BOUGHT, encode_details(details)
        )
        new.append(pid)
    if new:
        await store._exec(
            "UPDATE buy_orders SET filled = ?, updated_at = ? WHERE id = ?",
            (order.filled + len(new), now, order.id),
        )
    return new


async def _learn_trade(store: _Store, pid: str, row: HistoryFill, now: float) -> None:
    # Not a move: the fill stays BOUGHT; it learns its trade and what was paid. Logged as a
    # BOUGHT -> BOUGHT event so the history of the purchase says where the figure came from.
    item_id = await _free_item_id(store, row.item_id)
    await store._exec(
        "UPDATE purchases SET marketplace_id = ?, charged_price = coalesce(?, charged_price),"
        " item_id = coalesce(?, item_id), updated_at = ? WHERE project_id = ?",
        (row.trade_id, row.price, item_id, now, pid),
    )
    details = {"source": _HISTORY, "trade_id": str(row.trade_id), "charged_price": row.price}
    if row.item_id is not None:
        details["item_id"] = row.item_id
    await store._add_event(
        pid, now, PurchaseState.BOUGHT, PurchaseState.BOUGHT, encode_details(details)
    )


async def _free_item_id(store: _Store, item_id: str | None) -> str | None:
    """``item_id`` when no live purchase holds it (a listing is bought at most once, and
    the ledger's unique index says so), else ``None``: a fill of an item the ledger already
    holds a live purchase of (bought, then relisted and filled) keeps its stand-in id, its
    event names the real one."""
    if not item_id:
        return None
    rows = await store._exec(
        f"SELECT 1 FROM purchases WHERE item_id = ? AND state NOT IN ({_FREE_SQL})", (item_id,)
    )
    return None if rows else item_id
