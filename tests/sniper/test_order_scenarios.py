"""Buy orders against the sandbox, told by the service's own ground truth (issue 14).

Each scenario ends with the same two checks: the ledger's committed total equals what the
sandbox charged minus what it refunded, to the unit, and no cap was exceeded at any moment
(the sandbox's net spend, replayed charge by charge, and the ledger's committed figure plus
the orders' exposure).
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import anyio

from engine import VirtualClock
from engine.hookspecs import hookimpl
from engine.ledger import FILL_PREFIX, Ledger, OrderState, PurchaseState
from engine.sandbox import MarketConfig, Sandbox, SandboxConfig
from engine.sandbox._trading import TradingConfig
from engine.sniper import EngineSettings
from engine.sniper._status import EngineMode

from .harness import TRADE_LINK, Rig, pick_item, plant, quiet_sandbox, rig

CREATE = "POST /v1/create-buy-order"


def order_rules(name: str, *, price: int, amount: int, per_day: int) -> str:
    return f"""
version: 1
account: {{base_url: "http://sandbox", trade_link: "{TRADE_LINK}"}}
budgets: {{per_day: "{per_day / 1000:.3f}", total: "1000.00"}}
rules:
  - name: orders
    match: {{names: ["{name}"], game: csgo}}
    max_price: "{price / 1000:.3f}"
    action: buy_order
    buy_order: {{price: "{price / 1000:.3f}", amount: {amount}}}
"""


def net_spend_peak(truth: dict[str, Any]) -> int:
    """The highest the sandbox's net spend (charges less refunds) ever was."""
    moves = [(c["at"], 0, c["amount"]) for c in truth["charges"]]
    moves += [(r["at"], 1, -r["amount"]) for r in truth["refunds"]]
    net = peak = 0
    for _, _, amount in sorted(moves):
        net += amount
        peak = max(peak, net)
    return peak


async def assert_ledger_matches_the_service(r: Rig, *, per_day: int) -> None:
    truth = r.sandbox.ground_truth()
    charged = sum(c["amount"] for c in truth["charges"])
    refunded = sum(x["amount"] for x in truth["refunds"])
    totals = await r.ledger.totals()
    assert totals.in_flight == 0
    assert totals.committed == charged - refunded
    assert net_spend_peak(truth) <= per_day
    exposure = (await r.ledger.order_exposure()).total
    assert totals.committed + exposure <= per_day


async def placed(r: Rig) -> None:
    """Wait (on the virtual clock) until the sandbox lists an order."""
    while not (await r.client.buy_orders()).offers:
        await r.clock.sleep(0.5)


async def fills(ledger: Ledger) -> list[Any]:
    return [p for p in await ledger.purchases() if p.project_id.startswith(FILL_PREFIX)]


async def test_an_order_filled_up_between_syncs_and_recreated_has_every_fill(
    clock: VirtualClock,
) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    price = item.reference // 2
    per_day = 3 * price + 100  # room for three fills in all
    rules = order_rules(item.name, price=price, amount=2, per_day=per_day)
    async with rig(clock, sandbox, rules) as r:
        async with clock.autojump(), anyio.create_task_group() as tg:
            tg.start_soon(partial(r.engine.run, duration=1800))
            await placed(r)  # the first order (2); the next sync is 15 s after the start
            plant(sandbox, item, price=price - 10, arrive=True)
            plant(sandbox, item, price=price - 20, arrive=True)
            await clock.sleep(20)  # it vanished filled; settled; re-created for the last 1
            offers = (await r.client.buy_orders()).offers
            plant(sandbox, item, price=price - 30, arrive=True)
        orders = await r.ledger.orders(live_only=False)
        got = await fills(r.ledger)
        await assert_ledger_matches_the_service(r, per_day=per_day)
    assert [o.amount for o in offers] == [1]
    first, second = orders
    assert first.order_id != second.order_id
    assert (first.state, first.filled, second.state, second.filled) == (
        OrderState.CLOSED,
        2,
        OrderState.CLOSED,
        1,
    )
    assert sorted(p.charged_price for p in got) == [price - 30, price - 20, price - 10]
    assert all(p.state in (PurchaseState.COMPLETED, PurchaseState.REFUNDED) for p in got)
    # fills are never looked up by project_id
    assert sandbox.ground_truth()["requests"].get("GET /v1/check-many-project-id") is None


async def test_a_create_that_times_out_and_fills_up_is_settled_from_history(
    clock: VirtualClock,
) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    price = item.reference // 2
    per_day = 2 * price + 100
    for cut in (10, 20):  # on the market already: the create fills both at once
        plant(sandbox, item, price=price - cut)
    sandbox.inject(CREATE, "timeout_after_commit", count=1)
    rules = order_rules(item.name, price=price, amount=2, per_day=per_day)
    async with rig(clock, sandbox, rules) as r:
        async with clock.autojump(), anyio.create_task_group() as tg:
            tg.start_soon(partial(r.engine.run, duration=1800))
            while not await r.ledger.orders(live_only=False):
                await clock.sleep(0.5)
            (unknown,) = await r.ledger.orders()
        (order,) = await r.ledger.orders(live_only=False)
        got = await fills(r.ledger)
        await assert_ledger_matches_the_service(r, per_day=per_day)
    assert unknown.state is OrderState.UNKNOWN
    assert unknown.exposure == 2 * price  # held while the order may exist
    assert (order.state, order.filled) == (OrderState.CLOSED, 2)
    assert sorted(p.charged_price for p in got) == [price - 20, price - 10]
    assert sandbox.ground_truth()["requests"][CREATE] == 1  # never sent again


async def test_a_create_that_times_out_but_exists_is_adopted_from_the_list(
    clock: VirtualClock,
) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    price = item.reference // 2
    per_day = 3 * price + 100
    plant(sandbox, item, price=price - 10)
    sandbox.inject(CREATE, "timeout_after_commit", count=1)
    rules = order_rules(item.name, price=price, amount=3, per_day=per_day)
    async with rig(clock, sandbox, rules) as r:
        async with clock.autojump():
            await r.engine.run(duration=1800)
        (order,) = await r.ledger.orders()
        (offer,) = (await r.client.buy_orders()).offers
        await assert_ledger_matches_the_service(r, per_day=per_day)
        view = await r.engine.view()
    assert (order.state, order.order_id, order.filled) == (OrderState.OPEN, offer.id, 1)
    assert order.exposure == 2 * price
    assert (view.orders_live, view.order_exposure) == (1, 2 * price)  # what observers see
    assert sandbox.ground_truth()["requests"][CREATE] == 1


class Refunds:
    """A plugin hearing of refunds through the engine's own ``snipe_refund`` hook."""

    def __init__(self) -> None:
        self.told: list[Any] = []

    @hookimpl
    def snipe_refund(self, purchase: Any, reason: str | None) -> None:
        self.told.append(purchase)


async def test_a_refunded_fill_gives_its_budget_back(clock: VirtualClock) -> None:
    market = MarketConfig(size=300, deal_share=0.0, hold_share=0.0, mean_lifetime=10**9)
    sandbox = Sandbox(
        SandboxConfig(seed=3, market=market, trading=TradingConfig(trade_failure_rate=1.0)),
        clock=clock,
    )
    item = pick_item(sandbox)
    price = item.reference // 2
    per_day = price + 100  # room for one fill only
    rules = order_rules(item.name, price=price, amount=1, per_day=per_day)
    refunds = Refunds()
    told = refunds.told
    async with rig(clock, sandbox, rules, plugins=[("refunds", refunds)]) as r:
        async with clock.autojump(), anyio.create_task_group() as tg:
            tg.start_soon(partial(r.engine.run, duration=1800))
            await placed(r)
            plant(sandbox, item, price=price - 10, arrive=True)
            await clock.sleep(20)
        (fill,) = await fills(r.ledger)
        orders = await r.ledger.orders(live_only=False)
        await assert_ledger_matches_the_service(r, per_day=per_day)
    assert fill.state is PurchaseState.REFUNDED
    assert [p.project_id for p in told] == [fill.project_id]
    assert len(sandbox.ground_truth()["refunds"]) == 1
    # the budget came back: a new order was placed with it
    assert [o.state for o in orders] == [OrderState.CLOSED, OrderState.OPEN]


async def test_a_kill_file_present_at_start_places_no_order(
    clock: VirtualClock, tmp_path: Path
) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    price = item.reference // 2
    kill = tmp_path / "STOP"
    kill.write_text("")
    rules = order_rules(item.name, price=price, amount=5, per_day=10 * price)
    settings = EngineSettings(kill_file=str(kill))
    async with rig(clock, sandbox, rules, settings=settings) as r, clock.autojump():
        status = await r.engine.run(duration=60)
    assert status.mode is EngineMode.HALTED
    assert sandbox.ground_truth()["requests"].get(CREATE) is None
    assert sandbox.trading.buy_orders == {}


async def test_halting_withdraws_the_open_orders(clock: VirtualClock, tmp_path: Path) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    price = item.reference // 2
    kill = tmp_path / "STOP"
    rules = order_rules(item.name, price=price, amount=5, per_day=10 * price)
    settings = EngineSettings(kill_file=str(kill))
    async with rig(clock, sandbox, rules, settings=settings) as r:
        async with clock.autojump(), anyio.create_task_group() as tg:
            tg.start_soon(partial(r.engine.run, duration=120))
            while not (placed := (await r.client.buy_orders()).offers):
                await clock.sleep(0.5)
            kill.write_text("")
        offers = (await r.client.buy_orders()).offers
        status = r.engine.status
    assert [o.name for o in placed] == [item.name]
    assert status.mode is EngineMode.HALTED
    assert offers == ()


async def test_a_dry_run_reports_the_orders_it_would_place(clock: VirtualClock) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    price = item.reference // 2
    rules = order_rules(item.name, price=price, amount=5, per_day=3 * price + 1)
    settings = EngineSettings(dry_run=True)
    async with rig(clock, sandbox, rules, settings=settings) as r, clock.autojump():
        await r.engine.run(duration=60)
        planned = r.engine.orders.planned
    assert sandbox.ground_truth()["requests"].get(CREATE) is None
    assert [(p.name, p.amount, p.wanted) for p in planned] == [(item.name, 3, 5)]
    assert "x3 (of 5: the caps)" in planned[0].describe()


async def test_fills_made_while_snipe_was_down_are_recorded_on_restart(
    clock: VirtualClock, tmp_path: Path
) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    price = item.reference // 2
    per_day = 2 * price + 100
    rules = order_rules(item.name, price=price, amount=2, per_day=per_day)
    async with await Ledger.open(tmp_path / "ledger.sqlite", clock=clock) as ledger:
        async with rig(clock, sandbox, rules, ledger=ledger) as r, clock.autojump():
            await r.engine.run(duration=10)
        assert [o.state for o in await ledger.orders()] == [OrderState.OPEN]
        # snipe is down: the order fills up and leaves the list
        plant(sandbox, item, price=price - 10, arrive=True)
        plant(sandbox, item, price=price - 20, arrive=True)
        clock.advance(600)
        async with rig(clock, sandbox, rules, ledger=ledger) as r:
            async with clock.autojump():
                await r.engine.run(duration=1800)
            await assert_ledger_matches_the_service(r, per_day=per_day)
        orders = await ledger.orders(live_only=False)
        got = await fills(ledger)
    assert [(o.state, o.filled) for o in orders] == [(OrderState.CLOSED, 2)]
    assert sorted(p.charged_price for p in got) == [price - 20, price - 10]


async def test_the_start_up_gate_places_no_order(clock: VirtualClock) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    price = item.reference // 2
    rules = order_rules(item.name, price=price, amount=5, per_day=10 * price)
    async with rig(clock, sandbox, rules) as r, clock.autojump():
        await r.engine.start_gate()
        assert r.engine.status.mode is EngineMode.STARTING
    assert sandbox.ground_truth()["requests"].get(CREATE) is None


async def test_an_adopted_order_beyond_the_caps_halts_and_is_withdrawn(
    clock: VirtualClock,
) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    price = item.reference // 2
    per_day = 3 * price + 100
    rules = order_rules(item.name, price=price, amount=2, per_day=per_day)
    async with rig(clock, sandbox, rules) as r:
        # someone placed a big order for the name by hand; snipe's create is lost unsent
        await r.client.create_buy_order(name=item.name, amount=10, price=price, game="csgo")
        sandbox.inject(CREATE, "drop_connection", count=1, commit=False)
        async with clock.autojump():
            status = await r.engine.run(duration=60)
        offers = (await r.client.buy_orders()).offers
        (order,) = await r.ledger.orders(live_only=False)
    assert status.mode is EngineMode.HALTED
    assert "daily budget exceeded" in (status.halt_reason or "")
    assert offers == ()  # withdrawn: it could have spent past the cap
    assert order.state is OrderState.GONE
