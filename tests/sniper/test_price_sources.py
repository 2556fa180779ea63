"""A plugin's price source is fetched off the buying path, on its own period.

Decisions read the answer the engine holds (with its age, for ``max_age``); a source that
takes seconds to answer never stands between a search answer and the purchase.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial

import anyio

from engine import VirtualClock
from engine.hookspecs import hookimpl
from engine.rules import Decision, EvalContext, PriceSource

from .harness import pick_item, plant, purchases_of, quiet_sandbox, rig, rules_text


class SlowSource(PriceSource):
    """Takes 2 s (of the engine's clock) to answer ``prices``."""

    name = "slowref"
    every = 0.5

    def __init__(self, clock: VirtualClock, prices: Mapping[str, int]) -> None:
        self.clock = clock
        self.prices = dict(prices)
        self.in_flight = False
        self.calls: list[tuple[float, tuple[str, ...]]] = []

    async def fetch(self, names: Sequence[str]) -> Mapping[str, int]:
        self.calls.append((self.clock.now(), tuple(names)))
        self.in_flight = True
        try:
            await self.clock.sleep(2.0)
        finally:
            self.in_flight = False
        return {n: p for n, p in self.prices.items() if n in names}


class Plugin:
    def __init__(self, source: SlowSource) -> None:
        self.source = source
        self.seen: list[tuple[float, float, bool]] = []
        """(decided at, purchase let go at, a fetch was in flight then)"""

    @hookimpl
    def snipe_register_price_sources(self) -> list[PriceSource]:
        return [self.source]

    @hookimpl
    def snipe_veto_purchase(self, decision: Decision, context: EvalContext) -> bool | None:
        self.seen.append((context.now, self.source.clock.now(), self.source.in_flight))
        return None


async def test_a_slow_price_source_does_not_delay_a_purchase(clock: VirtualClock) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    source = SlowSource(clock, {item.name: item.reference})
    plugin = Plugin(source)
    text = rules_text(item.name).replace(
        "discount: 20", "discount: {min: 25, versus: slowref, max_age: 1m}"
    )
    plugins = [("slow", plugin)]
    async with (
        rig(clock, sandbox, text, plugins=plugins) as r,
        clock.autojump(),
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(partial(r.engine.run, duration=120))
        await clock.sleep(30)  # the source has answered: a reference is held
        deal = plant(sandbox, item, price=item.reference * 60 // 100)  # 40% under
    assert [str(p["item_id"]) for p in purchases_of(sandbox)] == [str(deal.item_id)]
    [(decided, let_go, fetching)] = plugin.seen
    assert let_go == decided  # no clock time between the answer and the purchase
    assert fetching  # although the source was in the middle of a 2 s fetch
    # fetched on its own period for the watched names, not once per search
    assert source.calls
    assert all(names == (item.name,) for _, names in source.calls)
    assert len(source.calls) <= 120 / 2.0 + 1
    assert r.engine.status.searches > len(source.calls) / 4


async def test_a_source_no_rule_names_is_never_fetched(clock: VirtualClock) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    source = SlowSource(clock, {item.name: item.reference})
    plugins = [("slow", Plugin(source))]
    async with rig(clock, sandbox, rules_text(item.name), plugins=plugins) as r, clock.autojump():
        await r.engine.run(duration=60)
    assert source.calls == []


async def test_a_held_answer_too_old_for_max_age_is_refused(clock: VirtualClock) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    source = SlowSource(clock, {item.name: item.reference})
    source.every = 3600.0  # one answer at start, then none for an hour
    text = rules_text(item.name).replace(
        "discount: 20", "discount: {min: 25, versus: slowref, max_age: 1m}"
    )
    async with (
        rig(clock, sandbox, text, plugins=[("slow", Plugin(source))]) as r,
        clock.autojump(),
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(partial(r.engine.run, duration=300))
        await clock.sleep(120)  # the answer is two minutes old now
        plant(sandbox, item, price=item.reference * 60 // 100)
    assert purchases_of(sandbox) == []
    assert any("slowref" in reason for reason in r.engine.status.skip_reasons)
