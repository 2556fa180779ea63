"""The buy orders snipe placed, kept beside the purchases.

The service keeps one buy order per item name and does not say who placed it; the ledger
remembers the ones snipe placed, so a restart removes exactly its own orders when their
rule goes, and records each fill once. A fill becomes a purchase (``BOUGHT`` at the order's
price, ``project_id`` ``ord-<order id>-<n>``) so it counts against every cap like any other
purchase. While an order is open, what it may still buy is its *exposure*, which the engine
counts against the caps too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from .._errors import LedgerError
from .._money import Money
from ._connection import Row
from ._records import Intent, encode_details
from ._states import PurchaseState

__all__ = ["FILL_PREFIX", "BuyOrderRecord", "OrderBook"]

FILL_PREFIX = "ord-"
"""``project_id`` prefix of purchases made by a buy order (the service knows no
``project_id`` for them, so they are not looked up by one)."""

_FILL_DETAILS = encode_details({"source": "buy order"})
_ORDER_COLUMNS = "name, order_id, rule, game, price, amount, filled, active, created_at, updated_at"


@dataclass(frozen=True, slots=True)
class BuyOrderRecord:
    """A buy order snipe placed. ``amount`` is how many it asked for, ``filled`` how many
    were bought so far."""

    name: str
    order_id: int
    rule: str
    game: str | None
    price: Money
    amount: int
    filled: int
    active: bool
    created_at: float
    updated_at: float

    @property
    def exposure(self) -> Money:
        """What the order may still spend."""
        return self.price * max(0, self.amount - self.filled) if self.active else 0


def _order(row: Row) -> BuyOrderRecord:
    name, order_id, rule, game, price, amount, filled, active, created, updated = row
    return BuyOrderRecord(
        name, order_id, rule, game, price, amount, filled, bool(active), created, updated
    )


class _Store(Protocol):
    async def _exec(self, sql: str, parameters: Any = ()) -> list[Row]: ...
    async def _read(self, sql: str, parameters: Any = ()) -> list[Row]: ...
    async def _transaction(self, work: Any) -> Any: ...
    async def _insert_intent(self, intent: Intent, now: float) -> Any: ...
    async def _add_event(self, *args: Any) -> None: ...

    _clock: Any


class OrderBook:
    """Buy-order methods of :class:`~engine.ledger.Ledger`."""

    async def orders(self: _Store, *, active_only: bool = True) -> list[BuyOrderRecord]:
        """The buy orders snipe placed (the open ones unless ``active_only`` is false)."""
        where = "WHERE active = 1" if active_only else ""
        rows = await self._read(f"SELECT {_ORDER_COLUMNS} FROM buy_orders {where} ORDER BY name")
        return [_order(r) for r in rows]

    async def record_order(
        self: _Store,
        *,
        name: str,
        order_id: int,
        rule: str,
        game: str | None,
        price: Money,
        amount: int,
    ) -> BuyOrderRecord:
        """Remember an order placed (or edited) for ``name``; its fills so far are kept."""
        if isinstance(price, bool) or not isinstance(price, int) or price < 0:
            raise LedgerError(f"buy order {name!r}: price must be a non-negative int")
        now = self._clock.now()

        async def work() -> BuyOrderRecord:
            await self._exec(
                f"INSERT INTO buy_orders ({_ORDER_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, 0, 1, ?, ?)"
                " ON CONFLICT (name) DO UPDATE SET order_id = excluded.order_id,"
                " rule = excluded.rule, game = excluded.game, price = excluded.price,"
                " amount = excluded.amount, active = 1, updated_at = excluded.updated_at,"
                " filled = CASE WHEN buy_orders.order_id = excluded.order_id"
                " THEN buy_orders.filled ELSE 0 END",
                (name, order_id, rule, game, price, amount, now, now),
            )
            rows = await self._exec(
                f"SELECT {_ORDER_COLUMNS} FROM buy_orders WHERE name = ?", (name,)
            )
            return _order(rows[0])

        result: BuyOrderRecord = await self._transaction(work)
        return result

    async def record_fills(self: _Store, name: str, filled: int) -> list[str]:
        """The service says the order for ``name`` has bought ``filled`` items in all:
        record each new one as a BOUGHT purchase at the order's price, in one transaction.
        Returns the new purchases' ``project_id`` s (none when nothing is new)."""
        now = self._clock.now()

        async def work() -> list[str]:
            rows = await self._exec(
                f"SELECT {_ORDER_COLUMNS} FROM buy_orders WHERE name = ?", (name,)
            )
            if not rows:
                raise LedgerError(f"no buy order for {name!r} in the ledger")
            order = _order(rows[0])
            new = []
            for n in range(order.filled + 1, filled + 1):
                pid = f"{FILL_PREFIX}{order.order_id}-{n}"
                intent = Intent(
                    pid, f"order:{order.order_id}:{n}", name, order.price, order.rule, order.game
                )
                await self._insert_intent(intent, now)
                await self._exec(
                    "UPDATE purchases SET state = ?, updated_at = ?, charged_price = price"
                    " WHERE project_id = ?",
                    (PurchaseState.BOUGHT.value, now, pid),
                )
                await self._add_event(
                    pid, now, PurchaseState.INTENT, PurchaseState.BOUGHT, _FILL_DETAILS
                )
                new.append(pid)
            if new:
                await self._exec(
                    "UPDATE buy_orders SET filled = ?, updated_at = ? WHERE name = ?",
                    (filled, now, name),
                )
            return new

        result: list[str] = await self._transaction(work)
        return result

    async def close_order(self: _Store, name: str) -> None:
        """The order for ``name`` is gone (removed, or fully filled)."""
        now = self._clock.now()

        async def work() -> None:
            await self._exec(
                "UPDATE buy_orders SET active = 0, updated_at = ? WHERE name = ?", (now, name)
            )

        await self._transaction(work)
