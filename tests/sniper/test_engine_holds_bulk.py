"""Trade-locked purchases from reservation to delivery, and bulk purchases that half fail."""

from __future__ import annotations

from typing import Any

import pytest

from engine import VirtualClock
from engine.hookspecs import hookimpl
from engine.ledger import PurchaseState
from engine.rules import Decision, EvalContext
from engine.sandbox import Sandbox
from engine.sniper import Outcome

from .harness import pick_item, plant, purchases_of, quiet_sandbox, rig, rules_text

DAY = 86_400.0
HOLD = """    hold:
      max_wait: 3d
      min_send_window: 6h
      extra_discount: 0
"""


@pytest.mark.parametrize(
    ("unlock_in", "bought"),
    [(2 * DAY, True), (5 * DAY, False)],
    ids=["within-tolerance", "waits-too-long"],
)
async def test_hold_tolerance_decides_trade_locked_listings(
    clock: VirtualClock, unlock_in: float, bought: bool
) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    plant(sandbox, item, price=item.reference // 2, unlock_in=unlock_in)
    async with rig(clock, sandbox, rules_text(item.name, rule_extra=HOLD)) as r:
        async with clock.autojump():
            status = await r.engine.run(duration=300)
        purchases = await r.ledger.purchases()
    assert len(purchases_of(sandbox)) == (1 if bought else 0)
    if bought:
        assert status.outcomes[Outcome.RESERVED] == 1
        assert purchases[0].state is PurchaseState.RESERVED
        assert purchases[0].allow_trade_locked
        assert purchases[0].unlock_at is not None


async def test_a_hold_purchase_is_followed_from_reservation_to_delivery(
    clock: VirtualClock,
) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    plant(sandbox, item, price=item.reference // 2, unlock_in=DAY)
    async with rig(clock, sandbox, rules_text(item.name, rule_extra=HOLD)) as r:
        async with clock.autojump():
            await r.engine.run(duration=120)
        for _ in range(8):  # the engine's reconcile loop, without a day of searching
            clock.advance(6 * 3600)
            await r.engine.reconciler.follow()
        (purchase,) = await r.ledger.purchases()
        states = [e.to_state for e in await r.ledger.events(purchase.project_id)]
    assert states[:2] == [PurchaseState.INTENT, PurchaseState.RESERVED]
    assert states[-1] in {PurchaseState.COMPLETED, PurchaseState.REFUNDED}
    assert len(purchases_of(sandbox)) == 1


class SnatchOne:
    """A plugin that lets another buyer take one listing right before we buy."""

    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox
        self.snatched: str | None = None

    @hookimpl
    def snipe_veto_purchase(self, decision: Decision, context: EvalContext) -> Any:
        if self.snatched is None:
            self.snatched = decision.item_id
            self.sandbox.market.remove(int(decision.item_id))
        return None


async def test_bulk_purchase_with_a_partial_failure(clock: VirtualClock) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    deals = [plant(sandbox, item, price=item.reference // 2 + n) for n in range(3)]
    snatcher = SnatchOne(sandbox)
    rules = rules_text(item.name, rule_extra="    action: bulk")
    async with rig(clock, sandbox, rules, plugins=[("snatch", snatcher)]) as r:
        async with clock.autojump():
            status = await r.engine.run(duration=120)
        purchases = await r.ledger.purchases()
    by_item = {p.item_id: p for p in purchases}
    assert snatcher.snatched is not None
    assert by_item[snatcher.snatched].state is PurchaseState.FAILED
    assert "sold" in (by_item[snatcher.snatched].reason or "").lower()
    others = {str(d.item_id) for d in deals} - {snatcher.snatched}
    assert {by_item[i].state for i in others} <= {PurchaseState.BOUGHT, PurchaseState.COMPLETED}
    assert {str(p["item_id"]) for p in purchases_of(sandbox)} == others
    assert status.outcomes[Outcome.BOUGHT] == 2
    assert status.outcomes[Outcome.REFUSED] == 1
    assert len({p.batch_id for p in purchases}) == 1


async def test_a_veto_blocks_the_purchase(clock: VirtualClock) -> None:
    class No:
        @hookimpl
        def snipe_veto_purchase(self, decision: Decision, context: EvalContext) -> bool:
            return False

    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    plant(sandbox, item, price=item.reference // 2)
    async with rig(clock, sandbox, rules_text(item.name), plugins=[("no", No())]) as r:
        async with clock.autojump():
            status = await r.engine.run(duration=60)
        assert await r.ledger.purchases() == []
    assert status.outcomes[Outcome.VETOED] >= 1
    assert purchases_of(sandbox) == []
