"""Money safety of the live engine: caps, crashes, the start-up gate, dry runs, stopping."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from engine import VirtualClock
from engine.client import TradeLink
from engine.ledger import Intent, Ledger, PurchaseState, new_project_id
from engine.sniper import EngineSettings, Outcome, TradingRefused
from engine.sniper._engine import ALREADY_BOUGHT

from .harness import TRADE_LINK, pick_item, plant, purchases_of, quiet_sandbox, rig, rules_text


@pytest.mark.parametrize("action", ["buy", "bulk"])
async def test_caps_hold_with_many_candidates_at_once(clock: VirtualClock, action: str) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    price = item.reference // 2
    for _ in range(10):
        plant(sandbox, item, price=price)
    per_day = (price * 2 + price // 2) / 1000  # room for two, not three
    rules = rules_text(
        item.name,
        rule_extra=f"    action: {action}",
        budgets=f'{{per_day: "{per_day:.3f}", total: "1000.00"}}',
    )
    async with rig(clock, sandbox, rules) as r:
        async with clock.autojump():
            await r.engine.run(duration=300)
        totals = await r.ledger.totals()
    assert len(purchases_of(sandbox)) == 2
    assert totals.committed == 2 * price


async def test_rule_max_count_holds(clock: VirtualClock) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    for _ in range(5):
        plant(sandbox, item, price=item.reference // 2)
    rules = rules_text(item.name, rule_extra="    max_count: 3")
    async with rig(clock, sandbox, rules) as r, clock.autojump():
        await r.engine.run(duration=300)
    assert len(purchases_of(sandbox)) == 3


async def test_crash_between_intent_and_send_resolves_then_buys_once(
    clock: VirtualClock, tmp_path: Path
) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    deal = plant(sandbox, item, price=item.reference // 2)
    path = tmp_path / "ledger.sqlite"
    ledger = await Ledger.open(path, clock=clock)
    orphan = new_project_id(clock.now())
    await ledger.record_intent(
        Intent(orphan, str(deal.item_id), item.name, deal.price, rule="deals")
    )
    await ledger.close()  # the process died here: the request never left
    async with await Ledger.open(path, clock=clock) as reopened:
        async with (
            rig(clock, sandbox, rules_text(item.name), ledger=reopened) as r,
            clock.autojump(),
        ):
            await r.engine.run(duration=900)
        first = await reopened.get(orphan)
        purchases = await reopened.purchases()
    assert first is not None
    # absent twice, minutes apart, and not in my-history: released (budget and item freed)
    assert first.state is PurchaseState.RELEASED
    assert "not in my-history" in (first.reason or "")
    assert len(purchases_of(sandbox)) == 1
    assert [p.state for p in purchases if p.project_id != orphan] in (
        [PurchaseState.BOUGHT],
        [PurchaseState.COMPLETED],
    )


async def test_crash_between_send_and_answer_is_found_by_project_id(
    clock: VirtualClock, tmp_path: Path
) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    deal = plant(sandbox, item, price=item.reference // 2)
    path = tmp_path / "ledger.sqlite"
    pid = new_project_id(clock.now())
    async with await Ledger.open(path, clock=clock) as ledger:
        await ledger.record_intent(Intent(pid, str(deal.item_id), item.name, deal.price, "deals"))
        async with rig(clock, sandbox, rules_text(item.name), ledger=ledger) as r:
            link = TradeLink.parse(TRADE_LINK)
            # the request reached the service; the process died before the answer
            await r.client.buy_one_p2p(
                item_id=str(deal.item_id),
                price=deal.price,
                partner=link.partner,
                token=link.token,
                project_id=pid,
            )
            async with clock.autojump():
                # the reconcile task finds it once its grace (60 s) has passed
                await r.engine.run(duration=120)
        resolved = await ledger.get(pid)
    assert resolved is not None
    assert resolved.state in {PurchaseState.BOUGHT, PurchaseState.COMPLETED}
    assert resolved.charged_price == deal.price
    assert len(purchases_of(sandbox)) == 1


async def test_leftovers_never_hold_buying_and_keep_their_item(clock: VirtualClock) -> None:
    """An intent an earlier run left (maybe sent, maybe not) while its check keeps failing:
    other listings are bought at once; its own listing is never bought a second time."""
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    leftover = plant(sandbox, item, price=item.reference // 2)
    sandbox.inject("GET /v1/check-many-project-id", "http_error", probability=1.0)
    async with rig(clock, sandbox, rules_text(item.name)) as r:
        pid = new_project_id(clock.now())
        await r.ledger.record_intent(
            Intent(pid, str(leftover.item_id), item.name, leftover.price, "deals")
        )
        clock.advance(30)  # the crash, the restart
        fresh = plant(sandbox, item, price=item.reference // 2)
        started = clock.now()
        async with clock.autojump():
            status = await r.engine.run(duration=60)
        still = await r.ledger.get(pid)
    bought = purchases_of(sandbox)
    assert [str(p["item_id"]) for p in bought] == [str(fresh.item_id)]
    assert status.buying_since == started  # no wait for the leftover
    assert still is not None
    assert still.state is PurchaseState.INTENT
    # its listing was turned down before the buyer: it has a live purchase
    assert ALREADY_BOUGHT in status.skip_examples.values()


async def test_gate_refuses_an_invalid_trade_link(clock: VirtualClock) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    plant(sandbox, item, price=item.reference // 2)
    # the sandbox says "Inventory is private" for partners that are 13 modulo 97
    link = TRADE_LINK.replace("partner=123456789", f"partner={97 * 1000 + 13}")
    async with rig(clock, sandbox, rules_text(item.name), trade_link=link) as r:
        with pytest.raises(TradingRefused, match="trade link"):
            async with clock.autojump():
                await r.engine.run(duration=60)
    assert purchases_of(sandbox) == []


async def test_dry_run_decides_but_never_buys(clock: VirtualClock) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    plant(sandbox, item, price=item.reference // 2)
    settings = EngineSettings(dry_run=True)
    async with rig(clock, sandbox, rules_text(item.name), settings=settings) as r, clock.autojump():
        status = await r.engine.run(duration=300)
    assert purchases_of(sandbox) == []
    assert status.outcomes[Outcome.DRY_RUN] == 1
    assert sandbox.ground_truth()["requests"].get("GET /v1/buy-one-p2p 200") is None


async def test_stopping_mid_purchase_finishes_and_records_it(clock: VirtualClock) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    deal = plant(sandbox, item, price=item.reference // 2)
    sandbox.inject("GET /v1/buy-one-p2p", "latency", count=1, seconds=5.0)
    async with rig(clock, sandbox, rules_text(item.name)) as r:
        async with clock.autojump(), anyio.create_task_group() as tg:
            tg.start_soon(r.engine.run)
            while not sandbox.faults_fired:  # the purchase is on the wire
                await clock.sleep(0.5)
            tg.cancel_scope.cancel()  # SIGTERM
        (purchase,) = await r.ledger.purchases()
    assert purchase.item_id == str(deal.item_id)
    assert purchase.state is PurchaseState.BOUGHT
    assert len(purchases_of(sandbox)) == 1


async def test_own_pacing_never_causes_a_429_and_a_429_is_honoured(clock: VirtualClock) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    sandbox.inject("GET /v2/search-items-by-name", "rate_limit", count=1, after=3, retry_ms=20_000)
    async with rig(clock, sandbox, rules_text(item.name)) as r, clock.autojump():
        status = await r.engine.run(duration=900)
    requests = sandbox.ground_truth()["requests"]
    assert list(status.errors) == []
    assert status.rate_limited == 1
    assert requests.get("GET /v2/search-items-by-name 429") == 1
    # the budget is used all along, evenly spaced (one search per 3 s): 20 a minute for
    # 15 minutes, but for the ~7 searches the 20-second pause held back
    assert requests["GET /v2/search-items-by-name 200"] >= 280


async def test_a_purchase_over_the_known_balance_is_not_sent(clock: VirtualClock) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    deal = plant(sandbox, item, price=item.reference // 2)
    sandbox.default_account.balance = deal.price - 1
    async with rig(clock, sandbox, rules_text(item.name)) as r, clock.autojump():
        status = await r.engine.run(duration=120)
    assert purchases_of(sandbox) == []
    assert "GET /v1/buy-one-p2p 200" not in sandbox.ground_truth()["requests"]
    assert any("balance" in reason for reason in status.skip_reasons)
