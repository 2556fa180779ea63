"""While a purchase of a listing is unresolved, later searches that see the same listing
turn it down as "already bought or purchase pending" before the buyer: no second intent,
no ledger refusal, no INFO line per poll (issue 18). The ledger's own check stays."""

from __future__ import annotations

import logging

import pytest

from engine import VirtualClock
from engine.ledger import Intent, PurchaseState
from engine.sniper._engine import ALREADY_BOUGHT
from engine.sniper._status import EngineMode, Outcome

from .harness import pick_item, plant, quiet_sandbox, rig, rules_text


async def test_a_listing_with_a_live_purchase_is_skipped_before_the_buyer(
    clock: VirtualClock, caplog: pytest.LogCaptureFixture
) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    listing = plant(sandbox, item, price=item.reference // 2)
    async with rig(clock, sandbox, rules_text(item.name)) as r:
        # a purchase of this listing whose outcome is not known yet (sent, answer lost)
        pending = Intent("pending-1", str(listing.item_id), item.name, listing.price, "deals")
        await r.ledger.record_intent(pending)
        await r.ledger.transition("pending-1", PurchaseState.UNKNOWN)
        events_before = len(await r.ledger.events())
        await r.engine.start_gate()
        r.engine.status.mode = EngineMode.RUNNING
        with caplog.at_level(logging.INFO):
            for _ in range(3):
                decisions = await r.engine.search_once()
                r.engine.schedule.flag(item.name, promise=1, at=clock.now())
                clock.advance(10)
        events_after = len(await r.ledger.events())
        purchases = await r.ledger.purchases()
    mine = [d for d in decisions if d.item_id == str(listing.item_id)]
    assert mine
    assert not any(d.accepted for d in mine)
    assert mine[0].reasons == (ALREADY_BOUGHT,)
    assert r.engine.status.outcomes[Outcome.DUPLICATE] == 0
    assert any("already bought" in v for v in r.engine.status.skip_examples.values())
    assert [p.project_id for p in purchases] == ["pending-1"]
    assert events_after == events_before  # nothing written for it
    assert not [rec for rec in caplog.records if "live purchase" in rec.getMessage()]
