"""The engine learns ``market.*`` references from the sandbox's snapshots and buys against
them; ``service.*`` references come from GET /v1/prices on their own schedule."""

from __future__ import annotations

from functools import partial

import anyio

from engine import VirtualClock
from engine.sniper import Outcome

from .harness import pick_item, plant, purchases_of, quiet_sandbox, rig, rules_text


async def test_the_engine_buys_against_what_it_learned(clock: VirtualClock) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    going = item.reference * 2  # platform_price says half the going price: a deal never
    text = (
        rules_text(item.name).replace(
            "discount: 20",
            "discount: {min: 25, versus: market.p25, min_observations: 4}",
        )
        + "prices: {market: {hold: 5m, window: 1d}}\n"
    )
    async with rig(clock, sandbox, text) as r:
        async with clock.autojump(), anyio.create_task_group() as tg:
            tg.start_soon(partial(r.engine.run, duration=1800))
            while r.engine.status.snapshots < 1:  # after the first snapshot: news
                await clock.sleep(1)
            honest = [plant(sandbox, item, price=going + 100 * i) for i in range(5)]
            await clock.sleep(900)  # they have held: the engine knows the going price
            deal = plant(sandbox, item, price=going * 60 // 100)
        stats = r.engine.references.book.stats(item.name, None, clock.now())
    assert stats is not None
    assert stats.observations == 5
    assert stats.floor == going
    bought = [str(p["item_id"]) for p in purchases_of(sandbox)]
    assert str(deal.item_id) in bought  # 40% under what held listed
    assert all(str(h.item_id) not in bought for h in honest)  # the going price
    [record] = [
        p
        for p in r.engine.status.purchases
        if p.outcome is Outcome.BOUGHT and p.item_id == str(deal.item_id)
    ]
    assert any(
        "vs market.p25" in reason and "5 observations" in reason for reason in record.reasons
    )


async def test_the_service_list_is_read_when_a_rule_names_it(clock: VirtualClock) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    text = (
        rules_text(item.name).replace(
            "discount: 20", "discount: {min: 20, versus: service.platform_price, max_age: 15m}"
        )
        + "prices: {service: {every: 10m}}\n"
    )
    deal = plant(sandbox, item, price=item.reference // 2)
    async with rig(clock, sandbox, text) as r:
        async with clock.autojump():
            await r.engine.run(duration=1500)
        fetched = r.engine.references.lists["service.platform_price"].fetched_at
    assert clock.now() - fetched < 600  # fetched again on its period
    assert [str(p["item_id"]) for p in purchases_of(sandbox)] == [str(deal.item_id)]
    assert r.limiter.usage("search")[0] <= 20
