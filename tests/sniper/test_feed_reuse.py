"""A rule that reads stickers' prices, fed by the live feed, without a search for what a
recent search already showed (``_known.py``): an update of a searched listing is decided
on its stickers, a listing whose known sticker prices cannot reach ``min_value`` costs no
search, and what is too old, unknown or changed is searched again before anything is
bought. Step by step on a virtual clock against the in-process sandbox."""

from __future__ import annotations

import pytest

from engine import VirtualClock
from engine.sandbox import Sandbox
from engine.sandbox._catalogue import CatalogueItem
from engine.sandbox._market import Listing as SandboxListing
from engine.sandbox._market import PlacedSticker
from engine.sniper import Engine, EngineSettings, FeedSettings
from engine.sniper._known import BEYOND_FOR

from .harness import Rig, plant, purchases_of, quiet_sandbox, rig, rules_text
from .test_feed_confirm import STICKERED, VALUABLE, search_when_due, sticker_item, stickered
from .test_feed_confirm import ready as ready_engine
from .test_feed_engine import SETTINGS, searches, told

CHEAP = PlacedSticker("Sticker | Cheap", "img", None, 1, 900)  # $0.90
UNSEEN = PlacedSticker("Sticker | Unseen", "img", None, 2, 900)


def reprice(sandbox: Sandbox, listing: SandboxListing, price: int) -> None:
    """The seller changes ``listing``'s price (the feed then tells an ``update``)."""
    listing.price = price
    listing.edits.append((sandbox.advance(), price))


async def ready(r: Rig, item: CatalogueItem) -> tuple[Engine, SandboxListing]:
    """The engine healed, and one confirming search made (for a deal it bought) that
    also showed ``dear``: stickered ($25 + $0.90), too dear for the rule (5% off)."""
    engine = await ready_engine(r)
    sandbox = r.sandbox
    dear = stickered(sandbox, item, item.reference * 95 // 100)
    dear.stickers = (*VALUABLE, CHEAP)
    deal = stickered(sandbox, item, item.reference // 2)
    await engine.on_feed_event(told(sandbox, dear))  # 5% off: no search for it
    await engine.on_feed_event(told(sandbox, deal))
    await search_when_due(r)
    assert str(deal.item_id) in {p.item_id for p in await r.ledger.purchases()}
    return engine, dear


async def test_an_update_of_a_searched_listing_is_bought_without_a_search(
    clock: VirtualClock,
) -> None:
    sandbox = quiet_sandbox(clock)
    item = sticker_item(sandbox)
    async with rig(
        clock, sandbox, rules_text(item.name, rule_extra=STICKERED), settings=SETTINGS
    ) as r:
        engine, dear = await ready(r, item)
        before = searches(sandbox)
        clock.advance(120.0)  # well within account.sticker_prices_for (300 s)
        reprice(sandbox, dear, item.reference // 2)  # now a deal
        await engine.on_feed_event(told(sandbox, dear, "update"))
        assert engine.schedule.hot_count == 0  # nothing waits for a search
        purchases = await r.ledger.purchases()
        view = await engine.view()
    assert searches(sandbox) == before
    assert str(dear.item_id) in {p.item_id for p in purchases}
    assert str(dear.item_id) in {str(p["item_id"]) for p in purchases_of(sandbox)}
    assert view.feed is not None
    assert view.feed.confirm_reused == 1
    assert str(dear.item_id) in engine.feedwatch.bought_items  # the feed saw it first


@pytest.mark.parametrize(
    ("settings", "wait", "why"),
    [
        (SETTINGS, 301.0, "its stickers' prices are older than sticker_prices_for"),
        (
            EngineSettings(
                feed=FeedSettings(
                    mode="on", audit_every=300.0, missed_limit=0, sticker_prices_for=0.0
                )
            ),
            1.0,
            "reuse is off",
        ),
    ],
    ids=["stale", "off"],
)
async def test_an_update_is_searched_again_when_what_was_shown_cannot_be_trusted(
    clock: VirtualClock, settings: EngineSettings, wait: float, why: str
) -> None:
    sandbox = quiet_sandbox(clock)
    item = sticker_item(sandbox)
    async with rig(
        clock, sandbox, rules_text(item.name, rule_extra=STICKERED), settings=settings
    ) as r:
        engine, dear = await ready(r, item)
        before = searches(sandbox)
        clock.advance(wait)
        reprice(sandbox, dear, item.reference // 2)
        await engine.on_feed_event(told(sandbox, dear, "update"))
        assert str(dear.item_id) not in {p.item_id for p in await r.ledger.purchases()}, why
        assert engine.schedule.hot_count == 1, why  # waits for its confirming search
        await search_when_due(r)
        purchases = await r.ledger.purchases()
    assert searches(sandbox) == before + 1
    assert str(dear.item_id) in {p.item_id for p in purchases}  # confirmed, then bought


async def test_a_searched_listing_whose_stickers_changed_is_searched_again(
    clock: VirtualClock,
) -> None:
    sandbox = quiet_sandbox(clock)
    item = sticker_item(sandbox)
    async with rig(
        clock, sandbox, rules_text(item.name, rule_extra=STICKERED), settings=SETTINGS
    ) as r:
        engine, dear = await ready(r, item)
        dear.stickers = (CHEAP,)  # the valuable one scraped, same item id
        reprice(sandbox, dear, item.reference // 2)
        await engine.on_feed_event(told(sandbox, dear, "update"))
        # its one name's price is known ($0.90): it cannot reach $20, no search either
        assert engine.schedule.hot_count == 0
        purchases = await r.ledger.purchases()
    assert str(dear.item_id) not in {p.item_id for p in purchases}
    assert engine.feedwatch.known.changed == 1


@pytest.mark.parametrize(
    ("stickers", "searched"),
    [
        ((), False),  # no sticker (the feed's null or []): no value at all
        ((CHEAP, CHEAP), False),  # prices a search showed: $1.80, below $20
        ((CHEAP, UNSEEN), True),  # a price never seen: only a search can tell
        ((*VALUABLE, CHEAP), True),  # could be enough: confirmed by a search first
    ],
    ids=["no-stickers", "known-too-cheap", "price-unknown", "could-be-enough"],
)
async def test_a_new_listing_is_searched_only_if_its_sticker_names_could_pass(
    clock: VirtualClock, stickers: tuple[PlacedSticker, ...], searched: bool
) -> None:
    sandbox = quiet_sandbox(clock)
    item = sticker_item(sandbox)
    async with rig(
        clock, sandbox, rules_text(item.name, rule_extra=STICKERED), settings=SETTINGS
    ) as r:
        engine, _ = await ready(r, item)
        listing = stickered(sandbox, item, item.reference // 2 - 1)
        listing.stickers = stickers
        await engine.on_feed_event(told(sandbox, listing))
        assert (engine.schedule.hot_count == 1) is searched
        assert str(listing.item_id) not in {p.item_id for p in await r.ledger.purchases()}
        if searched:
            await search_when_due(r)
        purchases = await r.ledger.purchases()
    bought = str(listing.item_id) in {p.item_id for p in purchases}
    assert bought is (stickers == (*VALUABLE, CHEAP))


async def test_a_listing_dearer_than_the_50_a_search_just_showed_costs_no_search(
    clock: VirtualClock,
) -> None:
    sandbox = quiet_sandbox(clock)
    item = sticker_item(sandbox)
    async with rig(
        clock, sandbox, rules_text(item.name, rule_extra=STICKERED), settings=SETTINGS
    ) as r:
        engine = await ready_engine(r)
        price = item.reference // 2
        for i in range(50):
            plant(sandbox, item, price=price // 2 + i)  # 50 cheaper listings of the name
        first = stickered(sandbox, item, price)
        await engine.on_feed_event(told(sandbox, first))
        await search_when_due(r)  # shows the 50 cheaper ones: first is beyond them
        before = searches(sandbox)
        second = stickered(sandbox, item, price + 1)
        await engine.on_feed_event(told(sandbox, second))
        assert engine.schedule.hot_count == 0  # its search could not show it either
        clock.advance(BEYOND_FOR + 1)
        third = stickered(sandbox, item, price + 2)
        await engine.on_feed_event(told(sandbox, third))
        assert engine.schedule.hot_count == 1  # that answer is too old to tell: searched
        view = await engine.view()
    assert searches(sandbox) == before
    assert view.feed is not None
    assert dict(view.feed.confirm_skipped) == {"beyond_cheapest": 2}
    assert purchases_of(sandbox) == []
