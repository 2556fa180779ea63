"""Every HALT reason the README lists, each by a test that fails if that HALT is removed:
a rejected key (wherever the service says so), repeated failures (test_exactly_once.py),
a cap breach attempt refused by the ledger, the kill file, and a released purchase that
turns up and breaches a cap (test_service_word.py)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import anyio
import httpx
import pytest

from engine import VirtualClock
from engine.ledger import Cap, Intent, Ledger, Purchase, new_project_id
from engine.sniper import EngineSettings, Outcome

from .books import truth_committed
from .harness import pick_item, plant, purchases_of, quiet_sandbox, rig, rules_text


class RejectKeyOn(httpx.AsyncBaseTransport):
    """The service rejects the key (403) on one path, after ``after`` calls to it."""

    def __init__(self, inner: httpx.AsyncBaseTransport, path: str, after: int = 0) -> None:
        self.inner, self.path, self.after = inner, path, after
        self.rejected = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == self.path:
            if self.after <= 0:
                self.rejected += 1
                return httpx.Response(403, json={"success": False, "msg": "Wrong API key"})
            self.after -= 1
        return await self.inner.handle_async_request(request)


@pytest.mark.parametrize(
    ("path", "after"),
    [("/v2/search-items-by-name", 0), ("/v1/buy-one-p2p", 0), ("/v1/user", 1)],
    ids=["search", "purchase", "balance"],
)
async def test_a_rejected_key_halts(clock: VirtualClock, path: str, after: int) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    plant(sandbox, item, price=item.reference // 2)
    transport = RejectKeyOn(httpx.ASGITransport(app=sandbox.app), path, after)
    async with (
        rig(clock, sandbox, rules_text(item.name), transport=transport) as r,
        clock.autojump(),
    ):
        status = await r.engine.run(duration=120)
    assert status.halted
    assert (status.halt_reason or "").startswith("the API key was rejected")
    if path != "/v1/user":  # (the balance is refreshed after the first purchase)
        assert purchases_of(sandbox) == []
    if path != "/v1/user":  # (reconciling, which refreshes the balance, goes on)
        assert transport.rejected == 1  # halted at the first rejection


class RacedLedger(Ledger):
    """The engine's ledger, while another engine on the same file writes a purchase between
    this one's decision and its intent (the race the ledger's atomic cap check is for)."""

    rival: Ledger | None = None
    rival_intent: Intent | None = None

    async def record_intents(
        self, intents: Sequence[Intent], *, caps: Sequence[Cap] = ()
    ) -> list[Purchase]:
        if self.rival is not None and self.rival_intent is not None:
            intent, self.rival_intent = self.rival_intent, None
            await self.rival.record_intent(intent)
        return await super().record_intents(intents, caps=caps)


async def test_a_cap_the_ledger_enforces_against_a_race_halts(
    clock: VirtualClock, tmp_path: Path
) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    price = item.reference // 2
    plant(sandbox, item, price=price)
    per_day = price + price // 2  # room for one purchase, not two
    rules = rules_text(item.name, budgets=f'{{per_day: "{per_day / 1000:.3f}", total: "1000.00"}}')
    path = tmp_path / "ledger.sqlite"
    async with (
        await RacedLedger.open(path, clock=clock) as ledger,
        await Ledger.open(path, clock=clock) as other_engine,
    ):
        ledger.rival = other_engine
        # the other engine's purchase of another listing of the same rule, same day
        ledger.rival_intent = Intent(
            new_project_id(clock.now()), "rival-1", item.name, price, "deals"
        )
        async with rig(clock, sandbox, rules, ledger=ledger) as r, clock.autojump():
            status = await r.engine.run(duration=120)
        committed = await ledger.committed()
    # The rules saw room for it; the ledger's cap check in the intent's transaction did not:
    # nothing was sent, and buying stopped for a person to look.
    assert sandbox.purchase_requests == []
    assert truth_committed(sandbox) == 0
    assert committed == price <= per_day
    assert status.outcomes[Outcome.CAPPED] >= 1
    assert status.halted
    assert "caps breach attempt refused by the ledger" in (status.halt_reason or "")
    assert "daily budget" in (status.halt_reason or "")


async def test_the_kill_file_halts_buying(clock: VirtualClock, tmp_path: Path) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    kill = tmp_path / "stop"
    rules = rules_text(item.name)
    settings = EngineSettings(kill_file=str(kill))

    async def operator() -> None:
        await clock.sleep(60)
        kill.touch()
        await clock.sleep(5)
        plant(sandbox, item, price=item.reference // 2)  # a deal, after the stop

    async with (
        rig(clock, sandbox, rules, settings=settings) as r,
        clock.autojump(),
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(operator)
        status = await r.engine.run(duration=300)
    assert status.halted
    assert status.halt_reason == f"kill file {kill} exists"
    assert sandbox.purchase_requests == []


async def test_the_feed_and_a_search_racing_for_the_last_room_under_a_cap_do_not_halt(
    clock: VirtualClock,
) -> None:
    """The feed's events and the search step decide side by side: both may see the last
    room under a cap before either writes its intent. The second is refused by the ledger
    (nothing sent) and skipped as capped: the engine's own purchase explains it, and asked
    again with the budget as the ledger has it now, the rules turn it down. Before, this
    HALTed the bot within a minute of a sandbox run with the feed on."""
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    rules = rules_text(item.name, rule_extra="    max_count: 1")
    async with rig(clock, sandbox, rules) as r:
        await r.engine.start()
        assert r.engine.status.buying_allowed
        deals = [plant(sandbox, item, price=item.reference // 2) for _ in range(2)]
        answer = await r.engine.client.search_items_by_name([item.name])
        ids = {str(d.item_id) for d in deals}
        listings = [li for li in answer.items[item.name] if li.item_id in ids]
        assert len(listings) == 2
        # both decided before either is bought: each sees room for one
        decided = [await r.engine.decide([li], clock.now()) for li in listings]
        assert all(d.accepted for decisions, _ in decided for d in decisions)
        for decisions, context in decided:
            await r.engine._buy(decisions, context)
        status = r.engine.status
        assert not status.halted, status.halt_reason
        assert status.outcomes[Outcome.CAPPED] == 1
        assert len(sandbox.purchase_requests) == 1
        assert truth_committed(sandbox) == item.reference // 2
        # the engine's own intent is what filled the cap: one intent in the ledger, the
        # purchase's (the refused one wrote none), the one the service bought
        (purchase,) = await r.ledger.purchases()
        assert purchase.item_id == listings[0].item_id
        assert purchase.project_id == sandbox.purchase_requests[0]["project_id"]


async def test_another_writers_intent_is_not_excused_by_an_own_write_that_is_no_intent(
    clock: VirtualClock, tmp_path: Path
) -> None:
    """What excuses a cap refusal is an intent of this engine's own written since the
    decision's budget was read: only that can have filled the cap. Any other write of
    its own (an operator's control action here) says nothing about the cap, so another
    process's intent that filled it still HALTs."""
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    price = item.reference // 2
    deal = plant(sandbox, item, price=price)
    rules = rules_text(item.name, rule_extra="    max_count: 1")
    path = tmp_path / "ledger.sqlite"
    async with (
        await Ledger.open(path, clock=clock) as ledger,
        await Ledger.open(path, clock=clock) as other_engine,
        rig(clock, sandbox, rules, ledger=ledger) as r,
    ):
        await r.engine.start()
        answer = await r.engine.client.search_items_by_name([item.name])
        (listing,) = [li for li in answer.items[item.name] if li.item_id == str(deal.item_id)]
        decisions, context = await r.engine.decide([listing], clock.now())  # room for one
        assert [d.accepted for d in decisions] == [True]
        await ledger.record_control("pause", actor="operator", outcome="done")
        rival = Intent(new_project_id(clock.now()), "rival-1", item.name, price, "deals")
        await other_engine.record_intent(rival)  # another process fills the cap
        await r.engine._buy(decisions, context)
        status = r.engine.status
        intents = [p.item_id for p in await ledger.purchases()]
    assert sandbox.purchase_requests == []
    assert intents == ["rival-1"]  # none of this engine's
    assert status.outcomes[Outcome.CAPPED] == 1
    assert status.halted
    assert "caps breach attempt refused by the ledger" in (status.halt_reason or "")
