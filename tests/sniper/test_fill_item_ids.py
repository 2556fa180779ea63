"""A buy order's fill is recorded with the item the service bought, as my-history names
it, not a made-up id (issue 18); an item that already has a live purchase keeps the
stand-in id, so the ledger's one-live-purchase-per-item rule holds."""

from __future__ import annotations

from engine import VirtualClock
from engine.ledger import FILL_PREFIX, MEMORY, HistoryFill, Intent, Ledger, PurchaseState

from .harness import pick_item, plant, quiet_sandbox, rig
from .test_buy_orders import order_rules


def _usd(mills: int) -> str:
    return f"{mills / 1000:.3f}"


async def test_a_fill_names_the_item_my_history_names(clock: VirtualClock) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    price = item.reference // 2
    listing = plant(sandbox, item, price=price - 10)
    async with rig(clock, sandbox, order_rules(item.name, price=_usd(price), amount=3)) as r:
        async with clock.autojump():
            await r.engine.run(duration=60)
        fills = [p for p in await r.ledger.purchases() if p.project_id.startswith(FILL_PREFIX)]
        events = await r.ledger.events(fills[0].project_id)
    assert [f.item_id for f in fills] == [str(listing.item_id)]
    assert any(e.details.get("item_id") == str(listing.item_id) for e in events)


async def _order_with_a_fill(ledger: Ledger) -> str:
    order = await ledger.reserve_order(name="Case", rule="orders", game="csgo", price=500, amount=2)
    order = await ledger.order_placed(order, order_id=7)
    (pid,) = await ledger.record_fills(order, 1)  # seen in the list's count: no item yet
    return pid


async def test_the_history_row_gives_a_listed_fill_its_item(clock: VirtualClock) -> None:
    async with await Ledger.open(MEMORY, clock=clock) as ledger:
        pid = await _order_with_a_fill(ledger)
        stand_in = await ledger.get(pid)
        (order,) = await ledger.orders()
        await ledger.attach_fills(order, [HistoryFill(41, 480, 2, "9001")])
        fill = await ledger.get(pid)
    assert stand_in is not None
    assert stand_in.item_id.startswith("order:")
    assert fill is not None
    assert (fill.item_id, fill.charged_price, fill.state) == ("9001", 480, PurchaseState.BOUGHT)


async def test_an_item_with_a_live_purchase_keeps_the_stand_in(clock: VirtualClock) -> None:
    async with await Ledger.open(MEMORY, clock=clock) as ledger:
        await ledger.record_intent(Intent("own-1", "9001", "Case", 500, "deals"))
        await ledger.transition("own-1", PurchaseState.BOUGHT, charged_price=500)
        pid = await _order_with_a_fill(ledger)
        (order,) = await ledger.orders()
        await ledger.attach_fills(order, [HistoryFill(41, 480, 2, "9001")])
        fill = await ledger.get(pid)
        events = await ledger.events(pid)
        # the two fills' item ids never stop a later purchase of another listing
        await ledger.record_intent(Intent("own-2", "9002", "Case", 500, "deals"))
    assert fill is not None
    assert fill.item_id.startswith("order:")
    assert fill.charged_price == 480
    assert events[-1].details["item_id"] == "9001"
