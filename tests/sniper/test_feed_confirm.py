"""Feed listings of a rule that needs a search (issue 17 point 2): confirmed by one search
of their name in the priority lane, by item id, before anything is bought; the rest of
the feed costs no search. Step by step on a virtual clock against the in-process
sandbox, events handed to ``Engine.on_feed_event`` as the feed runner hands them."""

from __future__ import annotations

import math
from collections.abc import Callable
from itertools import pairwise
from typing import Any

import pytest

from engine import VirtualClock
from engine._limiter import Lane
from engine.client import FeedRemovalEvent
from engine.models import FeedRemoval
from engine.sandbox import Sandbox
from engine.sandbox._catalogue import CatalogueItem
from engine.sandbox._feed import removed_payload
from engine.sandbox._market import Listing as SandboxListing
from engine.sandbox._market import PlacedSticker
from engine.sniper import Engine
from engine.sniper._confirm import BEYOND, GONE, REMOVED
from engine.sniper._status import reason_kind

from .harness import Rig, plant, purchases_of, quiet_sandbox, rig, rules_text
from .test_feed_engine import SETTINGS, feed_on, heal, searches, told

STICKERED = '    stickers: {min_value: "20.00"}'
"""Added to the rule ``deals`` (20% off, at most $200, which the feed can tell): sticker
value, which it cannot (no sticker prices on the feed), so the rule needs a search."""
VALUABLE = (PlacedSticker("Sticker | Test", "img", None, 0, 25_000),)  # $25


def sticker_item(sandbox: Sandbox) -> CatalogueItem:
    return next(
        i
        for i in sandbox.market.items
        if i.game == "csgo" and i.takes_stickers and not i.phases and 5_000 < i.reference < 150_000
    )


def stickered(sandbox: Sandbox, item: CatalogueItem, price: int) -> SandboxListing:
    listing = plant(sandbox, item, price=price)
    listing.stickers = VALUABLE
    return listing


def lanes_of(engine: Engine) -> list[tuple[tuple[str, ...], Lane]]:
    """Every search request's names and lane, as the engine sends them."""
    sent: list[tuple[tuple[str, ...], Lane]] = []
    search = engine.client.search_items_by_name

    async def recorded(names: Any, **kwargs: Any) -> Any:
        sent.append((tuple(names), kwargs["lane"]))
        return await search(names, **kwargs)

    engine.client.search_items_by_name = recorded  # type: ignore[method-assign]
    return sent


async def search_when_due(r: Rig) -> None:
    """Move the clock to the search step's due time (at most a minute off) and step it."""
    due = r.engine.next_due("search")
    assert due <= r.clock.now() + 60.0
    r.clock.advance(max(0.0, due - r.clock.now()))
    await r.engine.step("search")


async def ready(r: Rig) -> Engine:
    """The engine started with a feed, its gap healed, the heal's flags searched and
    every watched name searched once (what was listed before the feed connected)."""
    engine = feed_on(r)
    await engine.start()
    await heal(r)
    while engine.schedule.hot_count or engine.schedule.never_searched():
        await search_when_due(r)
    return engine


def skips(engine: Engine, reason: str) -> int:
    wanted = reason_kind(reason)
    return sum(n for (_, kind), n in engine.status.skip_by_rule.items() if kind == wanted)


async def test_a_stickered_deal_is_confirmed_by_one_priority_search_and_bought_once(
    clock: VirtualClock,
) -> None:
    sandbox = quiet_sandbox(clock)
    item = sticker_item(sandbox)
    async with rig(
        clock, sandbox, rules_text(item.name, rule_extra=STICKERED), settings=SETTINGS
    ) as r:
        engine = await ready(r)
        sent = lanes_of(engine)
        before = searches(sandbox)
        deal = stickered(sandbox, item, item.reference // 2)
        await engine.on_feed_event(told(sandbox, deal))
        assert await r.ledger.purchases() == []  # the feed tells no sticker prices
        assert engine.next_due("search") <= clock.now()  # the priority lane: at once
        await search_when_due(r)
        # the same listing told again (duplicated, an update) after its purchase
        await engine.on_feed_event(told(sandbox, deal, "update"))
        assert engine.schedule.hot_count == 0  # already bought: nothing to confirm
        purchases = await r.ledger.purchases()
        view = await engine.view()
    assert sent == [((item.name,), Lane.BUY)]
    assert searches(sandbox) == before + 1
    assert [p.item_id for p in purchases] == [str(deal.item_id)]
    assert [str(p["item_id"]) for p in purchases_of(sandbox)] == [str(deal.item_id)]
    assert view.feed is not None
    assert (view.feed.confirm_searches, view.feed.confirm_found) == (1, 1)
    assert engine.feedwatch.bought_items == {str(deal.item_id)}  # the feed saw it first


@pytest.mark.parametrize(
    ("why", "listing_of"),
    [
        ("over max_price", lambda item: dict(price=250_000)),
        ("5% off, the rule wants 20%", lambda item: dict(price=item.reference * 95 // 100)),
        ("trade-locked", lambda item: dict(price=item.reference // 2, unlock_in=86_400.0)),
    ],
)
async def test_a_feed_listing_failing_a_check_the_feed_tells_costs_no_search(
    clock: VirtualClock, why: str, listing_of: Callable[[CatalogueItem], dict[str, Any]]
) -> None:
    sandbox = quiet_sandbox(clock)
    item = sticker_item(sandbox)
    async with rig(
        clock, sandbox, rules_text(item.name, rule_extra=STICKERED), settings=SETTINGS
    ) as r:
        engine = await ready(r)
        before = searches(sandbox)
        listing = plant(sandbox, item, **listing_of(item))
        listing.stickers = VALUABLE
        for kind in ("new", "update", "update"):
            await engine.on_feed_event(told(sandbox, listing, kind))
        assert engine.schedule.hot_count == 0, why
        assert len(engine.feedwatch.confirm) == 0
        clock.advance(60.0)  # a background search may go, never in the priority lane
        sent = lanes_of(engine)
        await engine.step("search")
    assert all(lane is Lane.BACKGROUND for _, lane in sent)
    assert searches(sandbox) <= before + 1
    assert purchases_of(sandbox) == []


async def _missing(sandbox: Sandbox, item: CatalogueItem, how: str) -> SandboxListing:
    """A stickered deal of ``item`` that a search will not show, ``how``."""
    price = item.reference // 2
    if how == "beyond the 50 cheapest":
        for i in range(50):
            plant(sandbox, item, price=price // 2 + i)  # 50 cheaper listings of the name
    deal = stickered(sandbox, item, price)
    return deal


@pytest.mark.parametrize(
    ("how", "reason"),
    [("sold", GONE), ("beyond the 50 cheapest", BEYOND), ("removed", REMOVED)],
)
async def test_a_candidate_missing_from_its_confirming_answer_is_skipped_not_bought(
    clock: VirtualClock, how: str, reason: str
) -> None:
    sandbox = quiet_sandbox(clock)
    item = sticker_item(sandbox)
    async with rig(
        clock, sandbox, rules_text(item.name, rule_extra=STICKERED), settings=SETTINGS
    ) as r:
        engine = await ready(r)
        deal = await _missing(sandbox, item, how)
        await engine.on_feed_event(told(sandbox, deal))
        assert len(engine.feedwatch.confirm) == 1
        if how == "sold":
            sandbox.market.remove(deal.item_id)  # another buyer, before the search
        if how == "removed":
            sandbox.market.remove(deal.item_id)
            payload = removed_payload(deal, deal.price)
            await engine.on_feed_event(
                FeedRemovalEvent(FeedRemoval.model_validate(payload), clock.now(), 1)
            )
            assert len(engine.feedwatch.confirm) == 0
            # nothing left to confirm: the name left the priority lane, no search is sent
            assert engine.schedule.hot_count == 0
            assert engine.next_due("search") == math.inf
        else:
            await search_when_due(r)
        purchases = await r.ledger.purchases()
        view = await engine.view()
    assert str(deal.item_id) not in {p.item_id for p in purchases}
    assert str(deal.item_id) not in {str(p["item_id"]) for p in purchases_of(sandbox)}
    assert skips(engine, reason) == 1  # counted with the engine's skips, its reason said
    assert view.feed is not None
    kind = {GONE: "gone", BEYOND: "beyond_cheapest", REMOVED: "removed"}[reason]
    assert dict(view.feed.confirm_skipped) == {kind: 1}


async def test_a_burst_of_one_names_events_costs_one_search(clock: VirtualClock) -> None:
    sandbox = quiet_sandbox(clock)
    item = sticker_item(sandbox)
    async with rig(
        clock, sandbox, rules_text(item.name, rule_extra=STICKERED), settings=SETTINGS
    ) as r:
        engine = await ready(r)
        sent = lanes_of(engine)
        before = searches(sandbox)
        burst = [stickered(sandbox, item, item.reference // 2 + i) for i in range(30)]
        for listing in burst:
            await engine.on_feed_event(told(sandbox, listing))
            await engine.on_feed_event(told(sandbox, listing, "update"))
        assert engine.schedule.hot_count == 1
        await search_when_due(r)
        assert engine.schedule.hot_count == 0  # nothing left to confirm
        purchases = await r.ledger.purchases()
        view = await engine.view()
    assert sent == [((item.name,), Lane.BUY)]
    assert searches(sandbox) == before + 1
    assert view.feed is not None
    assert view.feed.confirm_found == 30
    # the budget ($500 a day) decides how many, as for any search's listings
    assert purchases
    assert {p.item_id for p in purchases} <= {str(x.item_id) for x in burst}


async def test_a_listing_told_while_its_search_is_on_the_way_waits_for_the_next(
    clock: VirtualClock,
) -> None:
    sandbox = quiet_sandbox(clock)
    item = sticker_item(sandbox)
    async with rig(
        clock, sandbox, rules_text(item.name, rule_extra=STICKERED), settings=SETTINGS
    ) as r:
        engine = await ready(r)
        first = stickered(sandbox, item, item.reference // 2)
        await engine.on_feed_event(told(sandbox, first))
        late: list[SandboxListing] = []
        search = engine.client.search_items_by_name

        async def told_meanwhile(names: Any, **kwargs: Any) -> Any:
            answer = await search(names, **kwargs)
            # listed and told after the service answered: not in this answer
            late.append(stickered(sandbox, item, item.reference // 2 + 1))
            await engine.on_feed_event(told(sandbox, late[0]))
            return answer

        engine.client.search_items_by_name = told_meanwhile  # type: ignore[method-assign]
        await search_when_due(r)
        engine.client.search_items_by_name = search  # type: ignore[method-assign]
        assert engine.schedule.hot_count == 1  # flagged again for the late one
        assert len(engine.feedwatch.confirm) == 1
        await search_when_due(r)
        purchases = await r.ledger.purchases()
    assert sorted(p.item_id for p in purchases) == sorted(
        [str(first.item_id), str(late[0].item_id)]
    )
    assert skips(engine, GONE) == 0


async def test_with_the_feed_a_busy_priority_lane_is_spaced_not_spent_in_a_burst(
    clock: VirtualClock,
) -> None:
    # candidates told one after another: a search each at once would spend the window's
    # 20 in seconds and leave the next ones waiting most of a minute
    sandbox = quiet_sandbox(clock)
    item = sticker_item(sandbox)
    async with rig(
        clock, sandbox, rules_text(item.name, rule_extra=STICKERED), settings=SETTINGS
    ) as r:
        engine = await ready(r)
        sent: list[float] = []
        for i in range(8):
            listing = stickered(sandbox, item, item.reference // 2 + i)
            await engine.on_feed_event(told(sandbox, listing))
            clock.advance(max(0.0, engine.next_due("search") - clock.now()))
            sent.append(clock.now())
            await engine.step("search")
        purchases = await r.ledger.purchases()
    gaps = [b - a for a, b in pairwise(sent)]
    assert gaps[-1] == pytest.approx(3.0)  # 60 s / 20, once the lane is busy
    assert max(gaps) <= 3.0 + 1e-6
    assert len(purchases) >= 1


async def test_a_confirmed_deal_sold_before_our_request_is_not_credited_to_the_feed(
    clock: VirtualClock,
) -> None:
    """The search confirms the stickered deal and the rules accept it, but another buyer
    takes it before our purchase request: the service refuses it, and the feed is not
    credited with a purchase ("seen first by the live feed" counts what was bought)."""
    sandbox = quiet_sandbox(clock)
    item = sticker_item(sandbox)
    async with rig(
        clock, sandbox, rules_text(item.name, rule_extra=STICKERED), settings=SETTINGS
    ) as r:
        engine = await ready(r)
        deal = stickered(sandbox, item, item.reference // 2)
        buy = engine.client.buy_one_p2p

        async def beaten(**kwargs: Any) -> Any:
            sandbox.market.remove(deal.item_id)  # sold to another buyer in between
            return await buy(**kwargs)

        engine.client.buy_one_p2p = beaten  # type: ignore[method-assign]
        await engine.on_feed_event(told(sandbox, deal))
        await search_when_due(r)
        purchases = await r.ledger.purchases()
        view = await engine.view()
    assert [(p.item_id, p.state.value) for p in purchases] == [(str(deal.item_id), "FAILED")]
    assert purchases_of(sandbox) == []
    assert view.feed is not None
    assert (view.feed.confirm_searches, view.feed.confirm_found) == (1, 1)
    assert engine.feedwatch.bought_items == set()


async def test_a_deal_told_while_its_names_search_is_on_its_way_is_decided_by_its_answer(
    clock: VirtualClock,
) -> None:
    # The search was sent before the event came, but the service served it after the
    # listing appeared: its answer shows the listing (stickers and all) and decides it,
    # so the name is not searched again for it.
    sandbox = quiet_sandbox(clock)
    item = sticker_item(sandbox)
    async with rig(
        clock, sandbox, rules_text(item.name, rule_extra=STICKERED), settings=SETTINGS
    ) as r:
        engine = await ready(r)
        first = stickered(sandbox, item, item.reference // 2)
        await engine.on_feed_event(told(sandbox, first))
        second = stickered(sandbox, item, item.reference // 2 + 1)
        search = engine.client.search_items_by_name

        async def told_meanwhile(names: Any, **kwargs: Any) -> Any:
            await engine.on_feed_event(told(sandbox, second))  # listed before the answer
            return await search(names, **kwargs)

        engine.client.search_items_by_name = told_meanwhile  # type: ignore[method-assign]
        await search_when_due(r)
        engine.client.search_items_by_name = search  # type: ignore[method-assign]
        waiting = engine.feedwatch.confirm.waiting(item.name)
        flagged = engine.schedule.hot_count
        purchases = {p.item_id for p in await r.ledger.purchases()}
    assert purchases == {str(first.item_id), str(second.item_id)}  # both, by the answer
    assert (waiting, flagged) == (False, 0)  # nothing left to confirm: no second search
    assert engine.feedwatch.confirm_searches == 1


async def test_a_deal_told_while_a_search_is_on_its_way_and_not_in_its_answer_waits_flagged(
    clock: VirtualClock,
) -> None:
    # Listed after the service served the search: the answer cannot show it, and taking
    # the name's flag with it must not leave the listing waiting unflagged.
    sandbox = quiet_sandbox(clock)
    item = sticker_item(sandbox)
    async with rig(
        clock, sandbox, rules_text(item.name, rule_extra=STICKERED), settings=SETTINGS
    ) as r:
        engine = await ready(r)
        first = stickered(sandbox, item, item.reference // 2)
        await engine.on_feed_event(told(sandbox, first))
        search = engine.client.search_items_by_name
        later: list[SandboxListing] = []

        async def listed_after(names: Any, **kwargs: Any) -> Any:
            answer = await search(names, **kwargs)
            later.append(stickered(sandbox, item, item.reference // 2 + 1))
            await engine.on_feed_event(told(sandbox, later[0]))
            return answer

        engine.client.search_items_by_name = listed_after  # type: ignore[method-assign]
        await search_when_due(r)
        engine.client.search_items_by_name = search  # type: ignore[method-assign]
        assert engine.feedwatch.confirm.waiting(item.name)
        assert engine.schedule.hot_count == 1  # flagged: its search comes next
        await search_when_due(r)
        purchases = {p.item_id for p in await r.ledger.purchases()}
    assert purchases == {str(first.item_id), str(later[0].item_id)}
    assert engine.feedwatch.confirm_searches == 2
