"""One read model: the status line, the status file and the metrics show the same numbers
from one :meth:`Engine.view`; the purchases it keeps stay bounded; and the engine itself
tells plugins of refunds, HALT and each day's end (no ``ops`` around it)."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest
from prometheus_client.parser import text_string_to_metric_families

from engine import VirtualClock
from engine.hookspecs import hookimpl
from engine.metrics import EngineMetrics
from engine.sandbox import MarketConfig, Sandbox, SandboxConfig
from engine.sandbox._trading import TradingConfig
from engine.sniper import EngineSettings, EngineStatus, Outcome, PurchaseRecord
from engine.sniper._status import RECENT_PURCHASES
from engine.sniper._statusfile import status_document
from engine.sniper._view import status_line

from .harness import pick_item, plant, quiet_sandbox, rig, rules_text

MIDNIGHT = 1_767_225_600.0  # 2026-01-01T00:00:00Z


def record(n: int) -> PurchaseRecord:
    return PurchaseRecord(n, "x", str(n), "r", 1_000, Outcome.DRY_RUN, None, ())


@pytest.mark.parametrize(
    ("recorded", "seen", "new"),
    [(0, 0, []), (3, 0, [0, 1, 2]), (3, 2, [2]), (3, 3, []), (250, 0, list(range(150, 250)))],
)
def test_the_status_keeps_the_latest_purchases_only(
    recorded: int, seen: int, new: list[int]
) -> None:
    status = EngineStatus()
    for n in range(recorded):
        status.record_purchase(record(n))
    assert len(status.purchases) == min(recorded, RECENT_PURCHASES)
    assert status.purchases_recorded == recorded
    assert [int(r.item_id) for r in status.purchases_since(seen)] == new


async def test_a_dry_run_keeps_one_record_per_listing_however_often_it_sees_it(
    clock: VirtualClock,
) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    deal = plant(sandbox, item, price=item.reference // 2)
    settings = EngineSettings(dry_run=True)
    async with rig(clock, sandbox, rules_text(item.name), settings=settings) as r:
        async with clock.autojump():
            status = await r.engine.run(duration=1800)
        view = await r.engine.view()
    # seen again and again: turned down before the buyer as already bought (or, if the
    # ledger's own check is what stopped it, a duplicate outcome)
    resighted = status.outcomes[Outcome.DUPLICATE] + sum(
        n for kind, n in status.skip_reasons.items() if kind.startswith("already bought")
    )
    assert resighted > RECENT_PURCHASES
    assert [(p.item_id, p.outcome) for p in status.purchases] == [
        (str(deal.item_id), Outcome.DRY_RUN)
    ]
    assert view.purchases_recorded == 1
    assert len(view.recent) == 1


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


async def test_status_line_status_file_and_metrics_agree_on_one_view(
    clock: VirtualClock,
) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    deal = plant(sandbox, item, price=item.reference // 2)
    async with rig(clock, sandbox, rules_text(item.name)) as r:
        async with clock.autojump():
            await r.engine.run(duration=300)
        view = await r.engine.view()
        line = await r.engine.status_line()
        document = status_document(view, every=5.0)
        metrics = EngineMetrics(r.engine)
        await metrics.refresh()
        got = _samples(metrics.render().decode())
    assert metrics.state == view
    assert line == status_line(view)
    # the numbers, each from all three
    assert view.spent_total == deal.price
    assert f"committed ${deal.price / 1000:,.2f}" in line
    assert got[("snipe_spend_usd", (("period", "total"),))] == deal.price / 1000
    assert view.searches >= 1
    assert document["searches"] == view.searches == got[("snipe_searches_total", ())]
    used, limit = view.search_used, view.search_limit
    assert f"searches {used}/{limit} in window" in line
    assert document["search_budget"] == {"used": used, "limit": limit}
    assert got[("snipe_search_budget_used", ())] == used
    assert got[("snipe_search_budget_limit", ())] == limit
    assert view.candidates >= 1
    assert f"candidates {view.candidates} |" in line
    assert document["candidates"] == view.candidates == got[("snipe_candidates_total", ())]
    went = {k.lower(): v for k, v in view.by_state.items() if v}
    assert sum(went.values()) == 1
    for state, count in went.items():
        assert f"{state} {count}" in line
        assert got[("snipe_purchases", (("state", state),))] == count
    assert document["outcomes"] == {"bought": 1} == {o.value: n for o, n in view.outcomes.items()}
    assert document["mode"] == view.mode.value == "stopped"
    assert got[("snipe_engine_mode", (("mode", "stopped"),))] == 1
    assert document["snapshot_bytes"] == dict(view.snapshot_bytes)
    for game, count in view.snapshot_bytes.items():
        assert got[("snipe_snapshot_bytes_total", (("game", game),))] == count


class Told:
    """A plugin that keeps what the engine's notification hooks tell it."""

    def __init__(self) -> None:
        self.refunds: list[str] = []
        self.halts: list[str] = []
        self.days: list[Any] = []

    @hookimpl
    def snipe_refund(self, purchase: Any, reason: str | None) -> None:
        self.refunds.append(purchase.item_id)

    @hookimpl
    def snipe_halted(self, reason: str) -> None:
        self.halts.append(reason)

    @hookimpl
    def snipe_daily_summary(self, summary: Any) -> None:
        self.days.append(summary)


async def test_a_bare_engine_tells_plugins_of_refund_halt_and_day_end(tmp_path: Path) -> None:
    clock = VirtualClock(start=MIDNIGHT - 300)  # five minutes before 2026-01-01
    market = MarketConfig(size=300, deal_share=0.0, hold_share=0.0, mean_lifetime=10**9)
    trading = TradingConfig(trade_failure_rate=1.0)  # every trade fails: a refund
    sandbox = Sandbox(SandboxConfig(seed=3, market=market, trading=trading), clock=clock)
    item = pick_item(sandbox)
    deal = plant(sandbox, item, price=item.reference // 2)
    kill = tmp_path / "stop"
    settings = EngineSettings(kill_file=str(kill))
    told = Told()
    async with (
        rig(clock, sandbox, rules_text(item.name), settings=settings, plugins=[("t", told)]) as r,
        clock.autojump(),
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(partial(r.engine.run, duration=1800))
        while not told.refunds:
            await clock.sleep(10)
        kill.touch()
        await clock.sleep(30)
        assert told.halts == [f"kill file {kill} exists"]
    assert told.refunds == [str(deal.item_id)]
    assert told.halts == [f"kill file {kill} exists"]  # once, though it stays HALTED
    [day] = told.days
    assert (day.day, day.purchases, day.spent) == ("2025-12-31", 1, deal.price)
