"""What the engine does with odd purchase answers (issue 10 point 4, issue 14): a success
without ``price``, a refusal that may hide a purchase, and a bulk batch with an item that
already has a live purchase."""

from __future__ import annotations

import json
from collections.abc import Sequence

import httpx

from engine import VirtualClock
from engine.ledger import MEMORY, Cap, Intent, Ledger, Purchase, PurchaseState, new_project_id
from engine.sniper import Outcome

from .books import assert_books_balance, assert_sent_once
from .harness import pick_item, plant, purchases_of, quiet_sandbox, rig, rules_text

S = PurchaseState
CAPS = (500_000, 1_000_000)


class RewriteBuyAnswer(httpx.AsyncBaseTransport):
    """Lets the sandbox buy, then hands the engine a rewritten answer."""

    def __init__(self, inner: httpx.AsyncBaseTransport, rewrite: dict[str, object]) -> None:
        self.inner, self.rewrite = inner, rewrite

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        if request.url.path != "/v1/buy-one-p2p":
            return response
        await response.aread()
        body = {k: v for k, v in json.loads(response.content).items() if k != "price"}
        body.update(self.rewrite)
        return httpx.Response(200, json=body)


async def test_a_success_without_price_is_charged_the_request_price_and_says_so(
    clock: VirtualClock,
) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    deal = plant(sandbox, item, price=item.reference // 2)
    transport = RewriteBuyAnswer(httpx.ASGITransport(app=sandbox.app), {"msg": "buy_csgo"})
    async with rig(clock, sandbox, rules_text(item.name), transport=transport) as r:
        async with clock.autojump():
            status = await r.engine.run(duration=1_800)
        (purchase,) = await r.ledger.purchases()
        events = await r.ledger.events(purchase.project_id)
        await assert_books_balance(r.ledger, sandbox, caps=CAPS)
    assert status.outcomes[Outcome.BOUGHT] == 1
    bought = next(e for e in events if e.to_state is S.BOUGHT)
    assert bought.details["charged_from"] == "request price"
    assert purchase.charged_price == deal.price
    assert_sent_once(sandbox)


async def test_projectid_already_exists_is_unknown_and_found_by_project_id(
    clock: VirtualClock,
) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    deal = plant(sandbox, item, price=item.reference // 2)
    rewrite = {"success": False, "msg": "projectId already exists"}
    transport = RewriteBuyAnswer(httpx.ASGITransport(app=sandbox.app), rewrite)
    async with rig(clock, sandbox, rules_text(item.name), transport=transport) as r:
        async with clock.autojump():
            status = await r.engine.run(duration=600)
        (purchase,) = await r.ledger.purchases()
        await assert_books_balance(r.ledger, sandbox, caps=CAPS)
    # the sandbox did buy it: a refusal taken at its word would have lost the money
    assert status.outcomes[Outcome.UNKNOWN] == 1
    assert status.outcomes[Outcome.REFUSED] == 0
    assert purchase.state in {S.BOUGHT, S.COMPLETED, S.REFUNDED}
    assert purchase.charged_price == deal.price
    assert_sent_once(sandbox)


class SharedLedger(Ledger):
    """This engine's ledger, while another engine on the same file starts buying one
    listing between this one's decision and its intents."""

    rival: Intent | None = None

    async def record_intents(
        self, intents: Sequence[Intent], *, caps: Sequence[Cap] = ()
    ) -> list[Purchase]:
        if self.rival is not None:
            rival, self.rival = self.rival, None
            await super().record_intent(rival)
        return await super().record_intents(intents, caps=caps)


async def test_a_live_item_is_dropped_from_a_bulk_batch_and_the_rest_bought(
    clock: VirtualClock,
) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    deals = [plant(sandbox, item, price=item.reference // 2 + n) for n in range(3)]
    rules = rules_text(item.name, rule_extra="    action: bulk")
    held = deals[1]
    other = new_project_id(clock.now())
    async with await SharedLedger.open(MEMORY, clock=clock) as ledger:
        ledger.rival = Intent(other, str(held.item_id), item.name, held.price, rule="deals")
        async with rig(clock, sandbox, rules, ledger=ledger) as r, clock.autojump():
            status = await r.engine.run(duration=60)
        purchases = await ledger.purchases()
    bought = {str(p["item_id"]) for p in purchases_of(sandbox)}
    assert bought == {str(deals[0].item_id), str(deals[2].item_id)}
    assert status.outcomes[Outcome.DUPLICATE] >= 1
    assert status.outcomes[Outcome.BOUGHT] == 2
    assert not status.halted
    mine = [p for p in purchases if p.project_id != other]
    assert len(mine) == 2
    assert len({p.batch_id for p in mine}) == 1  # one batch, without the live item
    assert {r["item_id"] for r in sandbox.purchase_requests} == bought
