"""The engine against the in-process sandbox: it buys what the rules accept, once."""

from __future__ import annotations

from engine import VirtualClock
from engine.ledger import PurchaseState
from engine.sniper import EngineSettings, Outcome

from .harness import pick_item, plant, purchases_of, quiet_sandbox, rig, rules_text


async def test_buys_a_planted_deal_exactly_once(clock: VirtualClock) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    deal = plant(sandbox, item, price=item.reference // 2)
    async with rig(clock, sandbox, rules_text(item.name)) as r:
        async with clock.autojump():
            status = await r.engine.run(duration=600)
        (purchase,) = await r.ledger.purchases()
    bought = purchases_of(sandbox)
    assert [str(p["item_id"]) for p in bought] == [str(deal.item_id)]
    assert status.outcomes[Outcome.BOUGHT] == 1
    assert purchase.item_id == str(deal.item_id)
    assert purchase.state in {PurchaseState.BOUGHT, PurchaseState.COMPLETED}
    assert purchase.charged_price == deal.price


async def test_never_buys_what_the_rules_reject(clock: VirtualClock) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    plant(sandbox, item, price=item.reference * 95 // 100)  # 5% off, rule wants 20%
    async with rig(clock, sandbox, rules_text(item.name)) as r:
        async with clock.autojump():
            status = await r.engine.run(duration=300)
        assert await r.ledger.purchases() == []
    assert purchases_of(sandbox) == []
    assert status.candidates == 0
    assert any("discount" in k for k in status.skip_reasons)


async def test_a_pattern_rule_finds_a_deal_through_the_catalogue(clock: VirtualClock) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    deal = plant(sandbox, item, price=item.reference // 3)
    weapon = item.name.split(" | ")[0]
    rules = rules_text(item.name).replace(
        f'match: {{names: ["{item.name}"]}}', f'match: {{patterns: ["{weapon} | *"]}}'
    )
    settings = EngineSettings(use_snapshot=False)  # no snapshot: names come from the catalogue
    async with rig(clock, sandbox, rules, settings=settings) as r:
        async with clock.autojump():
            await r.engine.run(duration=300)
        (purchase,) = await r.ledger.purchases()
    assert purchase.item_id == str(deal.item_id)
    assert sandbox.ground_truth()["requests"]["GET /v2/get-items-list 200"] >= 1
