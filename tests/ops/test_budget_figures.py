"""One budget figure everywhere (issue 14): the rules' budget, the status line, metrics,
``snipe status`` and ``snipe ledger`` agree to the unit, each saying whether buy-order
exposure is in it."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import anyio
import pytest
from sniper.harness import TRADE_LINK, pick_item, plant, quiet_sandbox, rig

from engine import VirtualClock
from engine.cli import main
from engine.ledger import Intent, Ledger, PurchaseState
from engine.metrics import EngineMetrics
from engine.rules import BudgetState
from engine.sniper import budget_state
from engine.sniper._budget import budget_words
from engine.testing import decide, make_listing, rules_for


def _rules(name: str, price: int) -> str:
    return f"""
version: 1
account: {{base_url: "http://sandbox", trade_link: "{TRADE_LINK}"}}
budgets: {{per_day: "500.00", total: "1000.00"}}
rules:
  - name: orders
    match: {{names: ["{name}"], game: csgo}}
    max_price: "{price / 1000:.3f}"
    action: buy_order
    buy_order: {{price: "{price / 1000:.3f}", amount: 4}}
"""


async def test_every_place_shows_the_same_budget(
    clock: VirtualClock, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    price = item.reference // 2
    plant(sandbox, item, price=price - 7)  # the order buys it as it is placed
    path = tmp_path / "ledger.sqlite"
    async with await Ledger.open(path, clock=clock) as ledger:
        single = Intent("snp-single-1", "item-single", "Something", 12_345, "orders")
        await ledger.record_intent(single)
        await ledger.transition("snp-single-1", PurchaseState.BOUGHT, charged_price=12_000)
        async with rig(clock, sandbox, _rules(item.name, price), ledger=ledger) as r:
            async with clock.autojump():
                await r.engine.run(duration=30)
            now = clock.now()
            budget = await budget_state(ledger, now)
            line = await r.engine.status_line()
            metrics = EngineMetrics(r.engine)
            await metrics.refresh()
            reasons_budget = budget.order_exposure
    committed = 12_000 + price - 7
    exposure = 3 * price
    assert (budget.spent_today, budget.spent_total) == (committed + exposure,) * 2
    assert reasons_budget == exposure
    assert budget_words(committed, exposure) in line
    assert metrics.state.spent_today + metrics.state.order_exposure == committed + exposure
    assert metrics.state.spent_today == committed
    exposition = metrics.render().decode()
    assert f"snipe_buy_order_exposure_usd {exposure / 1000}" in exposition

    # The CLI reads the file on its own (read-only), outside this event loop.
    assert await anyio.to_thread.run_sync(main, ["ledger", str(path), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    await anyio.to_thread.run_sync(partial(main, ["status", str(path), "--json"]))
    report = json.loads(capsys.readouterr().out)
    assert document["totals"]["committed"] == report["spent_total"] == committed
    assert document["order_exposure"] == report["order_exposure"] == exposure
    assert document["counted_by_caps"] == report["counted_total"] == committed + exposure
    fills = [p for p in document["purchases"] if p["source"] == "buy order"]
    assert [(f["state"], f["amount"], f["name"]) for f in fills] == [
        ("BOUGHT", price - 7, item.name)
    ]
    (order,) = document["buy_orders"]
    assert (order["filled"], order["exposure"]) == (1, exposure)


RULES = """\
version: 1
account: {base_url: "https://market.example.com"}
budgets: {per_day: "50.00", total: "200.00"}
rules:
  - name: r
    match: {names: ["AK-47 | Redline (Field-Tested)"]}
    max_price: "20.00"
"""


@pytest.mark.parametrize(
    ("budget", "said"),
    [
        (BudgetState(spent_today=9_000, spent_total=9_000),
         "today $9.00 of $50.00, total $9.00 of $200.00"),
        (BudgetState(spent_today=9_000, spent_total=9_000, order_exposure=4_000),
         "today $9.00 of $50.00, total $9.00 of $200.00 (buy-order exposure $4.00 included)"),
    ],
)  # fmt: skip
def test_a_purchase_reason_says_whether_order_exposure_is_in_its_budget(
    budget: BudgetState, said: str
) -> None:
    listing = make_listing(item_id="1", price=1_000, name="AK-47 | Redline (Field-Tested)")
    (decision,) = decide(rules_for(RULES), [listing], budget=budget)
    assert decision.accepted
    within = decision.reasons[-1]
    assert within.startswith("within budgets:")
    assert within.endswith(said.replace("$9.00", "$10.00"))
