"""When searches go out: background searches evenly spaced, a slot kept for the search
right after each snapshot, names the snapshot flags searched first and at once."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import replace

import anyio
import pytest

from engine import VirtualClock
from engine._errors import RateLimited, Unavailable
from engine.sandbox import CatalogueItem, Sandbox
from engine.sniper import EngineMode, EngineSettings
from engine.sniper._schedule import SearchPacer

from .harness import pick_item, plant, purchases_of, quiet_sandbox, rig, rules_text

# -- the pacer, pure ---------------------------------------------------------------------


def pacer_with(sent: list[tuple[float, bool]], *, reserve: int = 1) -> SearchPacer:
    pacer = SearchPacer(calls=20, period=60.0, reserve=reserve)
    for at, background in sent:
        pacer.sent(at, background=background)
    return pacer


def background_every_3s(count: int, start: float = 0.0) -> list[tuple[float, bool]]:
    return [(start + 3.0 * i, True) for i in range(count)]


@pytest.mark.parametrize(
    ("sent", "now", "flags_at", "expected"),
    [
        # nothing sent yet: at once
        ([], 0.0, 10.0, 0.0),
        # evenly spaced: one background search per period / calls
        ([(100.0, True)], 100.0, 110.0, 103.0),
        ([(100.0, True)], 105.0, None, 105.0),
        # a search for flagged names does not hold the next background one back
        ([(100.0, True), (101.0, False)], 101.0, 110.0, 103.0),
        # 18 in the window at the next snapshot: the 19th leaves one slot free
        (background_every_3s(18), 54.0, 58.0, 54.0),
        # 19 in it: the 20th would take the snapshot's slot, so it waits for the snapshot
        (background_every_3s(19), 57.0, 58.0, math.inf),
        # a snapshot being taken now counts the same way
        (background_every_3s(19), 57.0, 57.0, math.inf),
        # no snapshot expected: the whole budget is background's
        (background_every_3s(19), 57.0, None, 57.0),
        # not due before the snapshot: decided after it, against the next one
        (background_every_3s(19), 55.0, 56.5, 57.0),
        # calls older than the window at the snapshot do not count
        (background_every_3s(19), 57.0, 61.0, 57.0),
    ],
)
def test_background_searches_are_spaced_and_leave_the_snapshot_a_slot(
    sent: list[tuple[float, bool]], now: float, flags_at: float | None, expected: float
) -> None:
    assert pacer_with(sent).background_at(now, flags_at=flags_at) == expected


def test_a_larger_reserve_keeps_more_slots_free() -> None:
    pacer = pacer_with(background_every_3s(17), reserve=3)
    assert pacer.background_at(51.0, flags_at=55.0) == math.inf
    assert pacer_with(background_every_3s(16), reserve=3).background_at(48.0, flags_at=55.0) == 48


@pytest.mark.parametrize(
    ("sent", "now", "expected", "without_feed"),
    [
        # 9 in the window: the 10th background search goes, the feed's 10 slots stay free
        (background_every_3s(9), 27.0, 27.0, 27.0),
        # 10 in it: it waits until the oldest leaves the window (0 + 60)
        (background_every_3s(10), 30.0, 60.0, 30.0),
        # searches for flagged names fill the window too: the next background one waits
        # until enough of them have left it (here the 5th oldest, sent at 4)
        ([(float(t), False) for t in range(14)], 14.0, 64.0, 14.0),
        # older than the window: not counted
        (background_every_3s(10, start=-40.0), 30.0, 30.0, 30.0),
    ],
)
def test_with_the_feed_connected_background_searches_leave_half_the_window(
    sent: list[tuple[float, bool]], now: float, expected: float, without_feed: float
) -> None:
    # a first search of every watched name (a sweep at the budget's whole pace) would
    # otherwise fill the window, and each confirmation of a feed listing would wait
    # for a slot to leave it
    assert pacer_with(sent).background_at(now, None, feed=True) == expected
    # without the feed, the whole budget is background's (no snapshot expected)
    assert pacer_with(sent).background_at(now, None) == without_feed


@pytest.mark.parametrize("per_minute", [3, 10, 20, 60])
async def test_an_engine_runs_with_any_search_limit_the_rules_allow(
    clock: VirtualClock, per_minute: int
) -> None:
    # rate_limits.search_per_minute may be up to 600: the feed's share of the window is
    # half of whatever it is (10 was fixed, and 10 or fewer searches a minute could not
    # start an engine)
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    async with rig(clock, sandbox, rules_text(item.name), search_per_minute=per_minute) as r:
        assert r.engine.pacer.feed_keeps_free == per_minute // 2
        await r.engine.start_gate()
        r.engine.status.mode = EngineMode.RUNNING
        await r.engine.search_once()
        assert r.engine.status.searches == 1


@pytest.mark.parametrize("keep", [-1, 20])
def test_the_feeds_share_must_leave_background_a_slot(keep: int) -> None:
    with pytest.raises(ValueError, match="feed_keeps_free"):
        SearchPacer(calls=20, feed_keeps_free=keep)


def test_an_unlimited_budget_never_waits() -> None:
    pacer = SearchPacer(calls=None)
    pacer.sent(5.0, background=True)
    assert pacer.background_at(5.0, flags_at=5.0) == 5.0


@pytest.mark.parametrize("reserve", [-1, 20])
def test_the_reserve_must_leave_a_slot_for_background(reserve: int) -> None:
    with pytest.raises(ValueError, match="reserve"):
        SearchPacer(calls=20, reserve=reserve)


def flagged_at(times: Iterable[float]) -> list[tuple[float, bool]]:
    return [(t, False) for t in times]


@pytest.mark.parametrize(
    ("sent", "now", "expected"),
    [
        # now and then: at once
        ([], 0.0, 0.0),
        (flagged_at([0.0, 10.0, 20.0]), 30.0, 30.0),  # a snapshot's every 10 s
        # at once while the window holds fewer than 3 searches
        (flagged_at([0.0, 0.1]), 0.2, 0.2),
        # then one every 3 s (60 s / 20) after the previous one
        (flagged_at([0.0, 0.1, 0.2]), 0.3, 3.2),
        (flagged_at([0.0, 0.1, 0.2]), 5.0, 5.0),
        # background searches count in the window, not as the previous one
        ([(3.0 * i, True) for i in range(12)], 33.0, 33.0),
        ([(3.0 * i, True) for i in range(12)] + [(33.0, False)], 34.0, 36.0),
        # the window rolls: searches older than 60 s no longer count
        (flagged_at([0.0, 0.1, 0.2]), 60.25, 60.25),
    ],
)
def test_searches_for_flagged_names_go_at_once_unless_the_lane_is_busy(
    sent: list[tuple[float, bool]], now: float, expected: float
) -> None:
    assert pacer_with(sent).priority_at(now) == pytest.approx(expected)


def test_an_unlimited_budget_never_waits_for_flagged_names_either() -> None:
    pacer = SearchPacer(calls=None)
    for t in range(10):
        pacer.sent(t / 100, background=False)
    assert pacer.priority_at(0.1) == 0.1


# -- the engine ----------------------------------------------------------------------------


def csgo_names(items: Iterable[CatalogueItem], count: int) -> list[str]:
    return sorted({i.name for i in items if i.game == "csgo"})[:count]


def watching(names: list[str]) -> str:
    quoted = ", ".join(f'"{n}"' for n in names)
    return rules_text(names[0]).replace(f'names: ["{names[0]}"]', f"names: [{quoted}]")


async def test_a_flagged_name_is_searched_first_and_at_once(clock: VirtualClock) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    # three batches of 50: each round searches the same three groups in the same order
    names = sorted({item.name, *csgo_names(sandbox.market.items, 150)})[:150]
    assert item.name in names
    async with rig(clock, sandbox, watching(names)) as r:
        engine = r.engine
        await engine.start_gate()
        engine.status.mode = EngineMode.RUNNING
        start = clock.now()
        await engine.poll_snapshot()  # the first one only learns the market
        searched: set[str] = set()
        while item.name not in searched:
            clock.jump_to(engine.next_search_at())
            searched.update(engine.schedule.next_batch(engine.game_of))
            await engine.search_once()
        clock.jump_to(start + 10.0)  # the sandbox's next snapshot
        await engine.search_once()
        # the item's name was just searched: stalest first, it is not due for a while,
        # and the next background search waits its turn
        assert item.name not in engine.schedule.next_batch(engine.game_of)
        assert engine.next_search_at() > clock.now()

        deal = plant(sandbox, item, price=item.reference // 2)
        await engine.poll_snapshot()
        assert engine.schedule.next_batch(engine.game_of)[0] == item.name
        assert engine.next_search_at() == clock.now()
        await engine.search_once()
    assert [p["item_id"] for p in purchases_of(sandbox)] == [str(deal.item_id)]


async def test_a_deal_is_bought_right_after_the_snapshot_that_shows_it(
    clock: VirtualClock,
) -> None:
    # 500 watched names keep the whole search budget busy with background searches; the
    # deal still waits neither for a free slot nor for its name's turn.
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    names = sorted({item.name, *csgo_names(sandbox.market.items, 499)})
    settings = EngineSettings(snapshot_every=10.0)
    async with rig(clock, sandbox, watching(names), settings=settings) as r:
        status = r.engine.status
        async with clock.autojump(), anyio.create_task_group() as tg:
            tg.start_soon(r.engine.run)
            while status.snapshots < 7:  # a minute into the run: the budget is in use
                await clock.sleep(0.5)
            searches, since = status.searches, clock.now()
            listed = plant(sandbox, item, price=item.reference // 2).listed_at
            while clock.now() < listed + 60.0:
                await clock.sleep(0.5)
            tg.cancel_scope.cancel()
        requests = sandbox.ground_truth()["requests"]
    (purchase,) = purchases_of(sandbox)
    assert purchase["at"] - listed <= settings.snapshot_every + 1.0
    assert "GET /v2/search-items-by-name 429" not in requests
    # and the budget stayed in use: one search per 3 s, give or take one
    assert status.searches - searches >= (clock.now() - since) / 3.0 - 1


async def test_a_doppler_listing_flags_the_base_name_its_rule_watches(clock: VirtualClock) -> None:
    # The snapshot writes the phase into the name ("... Doppler Phase 2 (Factory New)");
    # the rule names, and the engine searches, the base name.
    sandbox = quiet_sandbox(clock)
    item = next(i for i in sandbox.market.items if i.phases and i.reference < 150_000)
    async with rig(clock, sandbox, rules_text(item.name)) as r:
        await r.engine.poll_snapshot()
        clock.advance(10.0)
        listing = plant(sandbox, item, price=item.reference // 2)
        listing.phase = item.phases[0]
        await r.engine.poll_snapshot()
        assert r.engine.schedule.hot_count == 1
        assert r.engine.schedule.next_batch() == (item.name,)


# -- when the snapshot is polled ---------------------------------------------------------


def building_sandbox(clock: VirtualClock, seconds: float) -> Sandbox:
    quiet = quiet_sandbox(clock).config
    return Sandbox(replace(quiet, snapshot_build_seconds=seconds), clock=clock)


async def test_a_snapshot_being_built_is_asked_again_soon_not_a_period_later(
    clock: VirtualClock,
) -> None:
    # Polled at the rebuild instant, a period later would be the rebuild instant again:
    # the engine would never see a snapshot.
    sandbox = building_sandbox(clock, 2.5)
    item = pick_item(sandbox)
    async with rig(clock, sandbox, rules_text(item.name)) as r:
        engine = r.engine
        start = clock.now()  # a rebuild instant
        for expected in (start + 1.0, start + 3.0):
            with pytest.raises(Unavailable):
                await engine.poll_snapshot()
            assert engine.next_snapshot_at == expected
            clock.jump_to(expected)
        await engine.poll_snapshot()
        assert engine.next_snapshot_at == start + 13.0
        clock.jump_to(start + 13.0)
        await engine.poll_snapshot()
        assert engine.status.snapshots == 2


async def test_a_snapshot_429_is_asked_again_after_the_wait_it_names(
    clock: VirtualClock,
) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    sandbox.inject("GET /v1/prices/snapshot", "rate_limit", count=1, retry_ms=1500)
    async with rig(clock, sandbox, rules_text(item.name)) as r:
        with pytest.raises(RateLimited):
            await r.engine.poll_snapshot()
        assert r.engine.next_snapshot_at == clock.now() + 1.5


@pytest.mark.parametrize(
    ("latency", "polls"),
    [
        # polls start at 0, 10, ..., 90: ten, not the eight of "10 s after each ended"
        (3.0, 10),
        # slower than half the period: rest as long as the poll took; 0, 12, ..., 84
        (6.0, 8),
    ],
)
async def test_snapshots_are_polled_every_period_unless_a_poll_is_slow(
    clock: VirtualClock, latency: float, polls: int
) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    sandbox.inject("GET /v1/prices/snapshot", "latency", probability=1.0, seconds=latency)
    # the rule names its game: one snapshot request a poll
    async with rig(clock, sandbox, rules_text(item.name, game="csgo")) as r, clock.autojump():
        await r.engine.run(duration=95.0)
    assert sandbox.ground_truth()["requests"]["GET /v1/prices/snapshot 200"] == polls


@pytest.mark.parametrize("paced_above", [-1, 21])
def test_the_lane_is_paced_within_the_window(paced_above: int) -> None:
    with pytest.raises(ValueError, match="paced_above"):
        SearchPacer(calls=20, paced_above=paced_above)
