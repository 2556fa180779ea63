"""Buy orders in the ledger: exposure reserved under the caps, fills as purchases, the
history attached, and the step that migrates a version 2 file."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from engine import VirtualClock
from engine._errors import IntentRefused
from engine.ledger import (
    SCHEMA_VERSION,
    Cap,
    Driver,
    HistoryFill,
    Ledger,
    OrderState,
    PurchaseState,
)
from engine.ledger._schema import MIGRATIONS, split_statements

from .support import intent


async def _order(ledger: Ledger, *, price: int = 1_000, amount: int = 5, caps: list[Cap]) -> None:
    await ledger.reserve_order(
        name="Case", rule="r1", game="csgo", price=price, amount=amount, caps=caps
    )


async def test_an_order_reserves_its_exposure_under_the_caps(ledger: Ledger) -> None:
    caps = [Cap(10_000)]
    await _order(ledger, amount=5, caps=caps)
    assert (await ledger.order_exposure()).total == 5_000
    # the same atomic check: a purchase and another order see the exposure
    with pytest.raises(IntentRefused, match="buy-order exposure included"):
        await ledger.record_intent(intent(1, price=5_001), caps=caps)
    await ledger.record_intent(intent(2, price=5_000), caps=caps)
    with pytest.raises(IntentRefused, match="buy order of 'Other'"):
        await ledger.reserve_order(
            name="Other", rule="r1", game="csgo", price=1, amount=1, caps=caps
        )
    assert [o.name for o in await ledger.orders()] == ["Case"]  # nothing written


async def test_a_count_cap_counts_what_an_order_may_still_buy(ledger: Ledger) -> None:
    caps = [Cap(3, kind="count", rule="r1")]
    with pytest.raises(IntentRefused):
        await _order(ledger, amount=4, caps=caps)
    await _order(ledger, amount=3, caps=caps)
    with pytest.raises(IntentRefused):
        await ledger.record_intent(intent(1), caps=caps)


async def test_fills_turn_exposure_into_purchases(ledger: Ledger) -> None:
    await _order(ledger, amount=3, caps=[])
    (order,) = await ledger.orders()
    assert await ledger.record_fills(order, 2) == ["ord-L1-1", "ord-L1-2"]
    assert await ledger.record_fills(order, 2) == []  # the same count again: nothing new
    assert await ledger.committed() == 2_000
    assert (await ledger.order_exposure()).total == 1_000
    # my-history: the first two rows are the recorded fills, the third was never listed
    (order,) = await ledger.orders()
    rows = [HistoryFill(501, 940, 2), HistoryFill(502, 950, 0), HistoryFill(503, 990, 0)]
    assert await ledger.attach_fills(order, rows) == ["ord-L1-3"]
    by_id = {p.project_id: p for p in await ledger.purchases()}
    assert [(p.marketplace_id, p.amount) for p in by_id.values()] == [
        (501, 940),
        (502, 950),
        (503, 990),
    ]
    assert await ledger.committed() == 940 + 950 + 990  # what was paid, not the order price
    assert await ledger.known_trade_ids() == {501, 502, 503}
    assert (await ledger.order_exposure()).total == 0  # 3 filled of 3


async def test_a_refunded_fill_gives_its_budget_back(ledger: Ledger) -> None:
    caps = [Cap(3_000)]
    await _order(ledger, amount=3, caps=caps)
    (order,) = await ledger.orders()
    (pid,) = await ledger.record_fills(order, 1)
    await ledger.set_order_state(order, OrderState.GONE)
    await ledger.set_order_state(order, OrderState.CLOSED, reason="1 of 3 filled")
    with pytest.raises(IntentRefused):
        await ledger.record_intent(intent(1, price=2_001), caps=caps)
    await ledger.transition(pid, PurchaseState.REFUNDED, reason="trade failed")
    await ledger.record_intent(intent(2, price=3_000), caps=caps)


async def test_a_settled_order_stays_settled(ledger: Ledger) -> None:
    await _order(ledger, caps=[])
    (order,) = await ledger.orders()
    closed = await ledger.set_order_state(order, OrderState.FAILED, reason="refused")
    assert closed.exposure == 0
    with pytest.raises(Exception, match="cannot move"):
        await ledger.set_order_state(closed, OrderState.OPEN)
    await _order(ledger, caps=[])  # a new order for the same name: a new row and key
    assert [(o.fill_key, o.state) for o in await ledger.orders(live_only=False)] == [
        ("L1", OrderState.FAILED),
        ("L2", OrderState.PENDING),
    ]


async def test_a_version_2_ledger_is_migrated(
    ledger_path: Path, clock: VirtualClock, driver: Driver
) -> None:
    raw = sqlite3.connect(ledger_path, isolation_level=None)
    for script in MIGRATIONS[:2]:
        for statement in split_statements(script):
            raw.execute(statement)
    raw.execute("PRAGMA user_version = 2")
    raw.executemany(
        "INSERT INTO buy_orders VALUES (?, ?, 'r1', 'csgo', 1000, 4, ?, ?, 1.0, 2.0)",
        [("Open Case", 2001, 1, 1), ("Old Case", 1999, 2, 0)],
    )
    raw.close()
    async with await Ledger.open(ledger_path, clock=clock, driver=driver) as ledger:
        assert ledger.schema_version == SCHEMA_VERSION == 6
        orders = {o.name: o for o in await ledger.orders(live_only=False)}
        assert (orders["Open Case"].state, orders["Open Case"].fill_key) == (
            OrderState.OPEN,
            "2001",
        )
        assert orders["Old Case"].state is OrderState.CLOSED
        assert (await ledger.order_exposure()).total == 3_000
        # fills go on from the count the old file had, under the old project ids
        assert await ledger.record_fills(orders["Open Case"], 2) == ["ord-2001-2"]


async def test_history_rows_of_snipes_own_purchases_are_told_apart(ledger: Ledger) -> None:
    await ledger.record_intent(intent(1, item="item-a"))
    await ledger.record_intent(intent(2, item="item-b"))
    await ledger.transition("snp-test-0001", PurchaseState.UNKNOWN)
    await ledger.transition("snp-test-0002", PurchaseState.BOUGHT, marketplace_id=77)
    # an UNKNOWN purchase's row can only be recognised by its item; a bought one by its
    # trade id, so a relisted item-b bought later by an order is still a fill
    assert await ledger.own_items() == {"item-a"}
    assert await ledger.known_trade_ids() == {77}
