"""Buying paused while the feed is trusted: the feed tells a listing once and no background
search looks at a searched name again, so a deal told while paused is searched again when
buying resumes, and bought if it is still listed."""

from __future__ import annotations

from engine import VirtualClock
from engine.sandbox import Listing as SandboxListing
from engine.sniper import Engine

from .harness import Rig, pick_item, plant, purchases_of, quiet_sandbox, rig, rules_text
from .test_feed_confirm import ready, search_when_due
from .test_feed_engine import SETTINGS, searches, told


async def paused_deal(r: Rig) -> tuple[Engine, SandboxListing]:
    """The engine ready and paused, and a deal its rule takes told by the feed meanwhile."""
    engine = await ready(r)
    await engine.pause("operator")
    item = pick_item(r.sandbox)
    deal = plant(r.sandbox, item, price=item.reference // 2)
    await engine.on_feed_event(told(r.sandbox, deal))
    return engine, deal


async def test_a_deal_told_while_paused_is_searched_again_and_bought_on_resume(
    clock: VirtualClock,
) -> None:
    sandbox = quiet_sandbox(clock)
    async with rig(clock, sandbox, rules_text(pick_item(sandbox).name), settings=SETTINGS) as r:
        engine, deal = await paused_deal(r)
        await engine.step("search")  # paused: nothing held back is released
        assert purchases_of(sandbox) == []
        assert engine.schedule.hot_count == 0
        before = searches(sandbox)
        assert engine.resume()
        await engine.step("search")
        assert engine.schedule.hot_count == 1  # the held-back name, in the priority lane
        await search_when_due(r)
        bought = [p.item_id for p in await r.ledger.purchases()]
    assert bought == [str(deal.item_id)]
    assert [str(p["item_id"]) for p in purchases_of(sandbox)] == [str(deal.item_id)]
    assert searches(sandbox) == before + 1


async def test_a_deal_told_while_paused_and_gone_by_resume_is_not_bought(
    clock: VirtualClock,
) -> None:
    sandbox = quiet_sandbox(clock)
    async with rig(clock, sandbox, rules_text(pick_item(sandbox).name), settings=SETTINGS) as r:
        engine, deal = await paused_deal(r)
        sandbox.market.remove(deal.item_id)  # another buyer took it meanwhile
        assert engine.resume()
        await engine.step("search")
        await search_when_due(r)
        purchases = await r.ledger.purchases()
    assert purchases == []
    assert purchases_of(sandbox) == []
