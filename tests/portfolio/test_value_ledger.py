"""``value_ledger``: the portfolio of an open ledger against a hub's references, as a
running engine (or a control plane) would ask for it; on asyncio and trio."""

from __future__ import annotations

from engine import VirtualClock
from engine.ledger import MEMORY, Intent, Ledger, PurchaseState
from engine.portfolio import value_ledger
from engine.reference import PriceList, ReferenceHub
from engine.rules import PortfolioSettings

REDLINE = "AK-47 | Redline (Field-Tested)"
RUBY = "★ Karambit | Doppler Ruby (Factory New)"
KARAMBIT = "★ Karambit | Doppler (Factory New)"


async def test_an_open_ledger_valued_against_the_hub(clock: VirtualClock) -> None:
    hub = ReferenceHub(clock=clock)
    for i in range(4):
        hub.book.record((REDLINE, None), 10_000 + 1_000 * i, clock.now() - 60)
    hub.book.record((KARAMBIT, "Ruby"), 900_000, clock.now() - 60)
    hub.lists["service.min"] = PriceList(
        "service.min", {(REDLINE, None): 9_000}, clock.now() - 120, "GET /v1/prices"
    )
    async with await Ledger.open(MEMORY, clock=clock) as ledger:
        await ledger.record_intent(Intent("a", "1", REDLINE, 8_000, "r"))
        await ledger.transition("a", PurchaseState.BOUGHT, charged_price=7_500)
        await ledger.record_intent(Intent("b", "2", RUBY, 500_000, "r"))
        await ledger.transition("b", PurchaseState.COMPLETED, charged_price=500_000)
        floor = PortfolioSettings(value_by="market.floor", min_observations=1)
        p = await value_ledger(ledger, hub, floor, now=clock.now())
        assert [(h.purchase.project_id, h.value) for h in p.holdings] == [
            ("a", 10_000),
            ("b", 900_000),
        ]
        assert p.totals.margin == 10_000 - 7_500 + 900_000 - 500_000
        # another source, another answer; the Ruby is not on that list
        service = PortfolioSettings(value_by="service.min", sale_fee="1%")
        p = await value_ledger(ledger, hub, service, now=clock.now())
        assert [(h.purchase.project_id, h.value) for h in p.holdings] == [
            ("a", 9_000 - 90),
            ("b", None),
        ]
        assert p.holdings[1].no_value == "no service.min reference"
