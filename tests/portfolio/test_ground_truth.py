"""Portfolio figures equal a hand computation from the sandbox's ground truth and a seeded
reference store, to the unit (USD x 1000), on asyncio and trio."""

from __future__ import annotations

import json
import time
from pathlib import Path

import anyio
import anyio.to_thread
import pytest
from sniper.harness import pick_item, plant, quiet_sandbox, rig, rules_text

from engine import SystemClock, VirtualClock
from engine.cli import main
from engine.ledger import Ledger
from engine.reference import ReferenceHub

FEE_BPS = 250  # --sale-fee 2.5%


async def test_portfolio_equals_the_ground_truth_by_hand(
    tmp_path: Path, clock: VirtualClock, capsys: pytest.CaptureFixture[str]
) -> None:
    sandbox = quiet_sandbox(clock)
    first = pick_item(sandbox)
    second = next(
        i
        for i in sandbox.market.items
        if i.game == "csgo" and not i.phases and 5_000 < i.reference < 150_000 and i is not first
    )
    plant(sandbox, first, price=first.reference // 2)
    plant(sandbox, second, price=second.reference // 3)
    rules = rules_text(first.name).replace(
        f'names: ["{first.name}"]', f'names: ["{first.name}", "{second.name}"]'
    )
    path = tmp_path / "ledger.sqlite"
    async with (
        await Ledger.open(path, clock=clock) as ledger,
        rig(clock, sandbox, rules, ledger=ledger) as r,
        clock.autojump(),
    ):
        await r.engine.run(duration=600)
    truth = sandbox.ground_truth()

    # The seeded references: the first name's lowest held price over 5 observations; the
    # second has 2 observations only, under min_observations 3: no value.
    floor = first.reference * 9 // 10
    now = time.time()
    async with ReferenceHub.open(None, clock=SystemClock(), ledger=path) as hub:
        for i in range(5):
            hub.book.record((first.name, None), floor + 1_000 * i, now - 300)
        for _ in range(2):
            hub.book.record((second.name, None), second.reference, now - 300)

    argv = ["portfolio", str(path), "--json", "--value-by", "market.floor", "--sale-fee", "2.5%"]
    assert await anyio.to_thread.run_sync(main, argv) == 0
    doc = json.loads(capsys.readouterr().out)

    # By hand, from what the sandbox says happened.
    refunded = {r["trade_id"] for r in truth["refunds"]}
    charged = {c["trade_id"]: c["amount"] for c in truth["charges"]}
    held = [p for p in truth["purchases"] if p["trade_id"] not in refunded]
    assert {p["name"] for p in held} == {first.name, second.name}
    cost = sum(charged[p["trade_id"]] for p in held)
    valued = [p for p in held if p["name"] == first.name]
    fee = -(-floor * FEE_BPS // 10_000)
    value = len(valued) * (floor - fee)
    valued_cost = sum(charged[p["trade_id"]] for p in valued)
    totals = doc["totals"]
    assert totals["holdings"] == len(held)
    assert totals["cost"] == cost
    assert totals["valued"] == len(valued)
    assert totals["value"] == value
    assert totals["margin"] == value - valued_cost
    assert totals["unvalued_cost"] == cost - valued_cost
    by_project = {h["project_id"]: h for h in doc["holdings"]}
    for p in held:
        holding = by_project[p["project_id"]]
        assert holding["cost"] == charged[p["trade_id"]]
        assert holding["item_id"] == p["item_id"]
