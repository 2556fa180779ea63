"""The live listing feed driving the engine (issue 17 points 2, 3, 6), step by step on a
virtual clock against the in-process sandbox: events are handed to
``Engine.on_feed_event`` as the feed runner (or a backtest) hands them."""

from __future__ import annotations

import math

from engine import VirtualClock
from engine.client import (
    FeedClient,
    FeedConnected,
    FeedDisconnected,
    FeedListingEvent,
    FeedRemovalEvent,
)
from engine.hookspecs import hookimpl
from engine.metrics import EngineMetrics
from engine.models import FeedListing, FeedRemoval
from engine.rules import Compiled, Criterion, RuleContext, evaluate
from engine.sandbox import Sandbox
from engine.sandbox._catalogue import CatalogueItem
from engine.sandbox._feed import listing_payload, removed_payload
from engine.sandbox._market import Listing as SandboxListing
from engine.sandbox._market import PlacedSticker
from engine.sniper import Engine, EngineSettings, FeedSettings
from engine.sniper._feedwatch import SNAPSHOT_REBUILT_EVERY

from .harness import Rig, pick_item, plant, purchases_of, quiet_sandbox, rig, rules_text

SETTINGS = EngineSettings(feed=FeedSettings(mode="on", audit_every=300.0, missed_limit=0))
FULL_ONLY = EngineSettings(
    feed=FeedSettings(mode="on", audit_every=300.0, full_audit_every=300.0, missed_limit=0)
)
"""Every audit a full snapshot (the cheap tier off): the full audit's own tests."""


def told(sandbox: Sandbox, listing: SandboxListing, kind: str = "new") -> FeedListingEvent:
    """The feed's event for ``listing``, written as the sandbox's feed writes it."""
    now = sandbox.advance()
    payload = listing_payload(listing, listing.price, now)
    return FeedListingEvent(kind, FeedListing.model_validate(payload), now, 1)  # type: ignore[arg-type]


def connected(clock: VirtualClock, generation: int) -> FeedConnected:
    return FeedConnected(generation, clock.now(), f"sid{generation}", ("csgo",), 25.0, 20.0)


def searches(sandbox: Sandbox) -> int:
    requests: dict[str, int] = sandbox.ground_truth()["requests"]
    # counted per endpoint, and per endpoint and status: the first kind only
    return sum(n for key, n in requests.items() if "search-item" in key and key[-1].isalpha())


def feed_on(r: Rig) -> Engine:
    """The engine with a feed client attached (never run here: the events are handed in)."""
    r.engine.feedwatch.client = FeedClient("http://127.0.0.1:9", games=["csgo"], clock=r.clock)
    return r.engine


async def heal(r: Rig, generation: int = 1) -> None:
    """Connect (generation ``generation``) and let the snapshot step heal the gap."""
    engine = r.engine
    await engine.on_feed_event(connected(r.clock, generation))
    assert engine.next_due("snapshot") <= r.clock.now()
    await engine.step("snapshot")


async def test_a_deal_told_by_the_feed_is_bought_at_once_without_a_search(
    clock: VirtualClock,
) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    async with rig(clock, sandbox, rules_text(item.name), settings=SETTINGS) as r:
        engine = feed_on(r)
        await engine.start()
        await heal(r)
        searched_before = searches(sandbox)
        deal = plant(sandbox, item, price=item.reference // 2)
        await engine.on_feed_event(told(sandbox, deal))
        (purchase,) = await r.ledger.purchases()
        view = await engine.view()
    assert [str(p["item_id"]) for p in purchases_of(sandbox)] == [str(deal.item_id)]
    assert purchase.item_id == str(deal.item_id)
    assert searches(sandbox) == searched_before  # bought by item id, no search first
    assert view.feed is not None
    assert (view.feed.state, view.feed.bought, view.feed.gaps_healed) == ("trusted", 1, 1)


async def test_a_listing_the_rules_reject_is_not_bought(clock: VirtualClock) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    async with rig(clock, sandbox, rules_text(item.name), settings=SETTINGS) as r:
        engine = feed_on(r)
        await engine.start()
        dear = plant(sandbox, item, price=item.reference * 95 // 100)  # 5% off, rule: 20%
        await engine.on_feed_event(told(sandbox, dear))
        assert await r.ledger.purchases() == []
        assert engine.schedule.hot_count == 0  # nothing to confirm either
    assert purchases_of(sandbox) == []


async def test_turned_down_feed_events_count_the_reasons_the_rules_give(
    clock: VirtualClock,
) -> None:
    # An event no rule's checks pass is decided without a decision built per rule (its
    # reasons are worked out when the counts are read): the counts and the examples are
    # still those of the rules' own evaluation of the same listings.
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    async with rig(clock, sandbox, rules_text(item.name), settings=SETTINGS) as r:
        engine = feed_on(r)
        await engine.start()
        listings = []
        for percent in (95, 90, 97):  # the rule wants 20% off
            event = told(sandbox, plant(sandbox, item, price=item.reference * percent // 100))
            listings.append(event.listing)
            await engine.on_feed_event(event)
        context = engine.eval_context(listings, clock.now(), "csgo")
        turned_down = [d for d in evaluate(engine.ruleset, listings, context) if not d.accepted]
        reasons = [reason for d in turned_down for reason in d.reasons]
        assert len(turned_down) == 3
        assert sum(engine.status.skip_by_rule.values()) == len(reasons)
        assert reasons[-1] in engine.status.skip_examples.values()  # the latest, with its why
        assert await r.ledger.purchases() == []


async def test_a_listing_no_rule_passes_costs_no_ledger_read_and_keeps_its_skip_reasons(
    clock: VirtualClock,
) -> None:
    # At the feed's rate a ledger read per event was most of the engine's time: the budget
    # is read only when a rule's checks pass, which the decisions cannot tell apart.
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    async with rig(clock, sandbox, rules_text(item.name), settings=SETTINGS) as r:
        engine = feed_on(r)
        await engine.start()
        reads: list[str] = []
        for name in ("committed_by_rule", "order_exposure"):
            method = getattr(r.ledger, name)

            async def counted(
                *args: object, _m: object = method, _n: str = name, **kwargs: object
            ) -> object:
                reads.append(_n)
                return await _m(*args, **kwargs)  # type: ignore[operator]

            setattr(r.ledger, name, counted)
        dear = plant(sandbox, item, price=item.reference * 95 // 100)  # 5% off, rule: 20%
        await engine.on_feed_event(told(sandbox, dear))
        assert reads == []
        assert sum(engine.status.skip_by_rule.values()) == 1  # still counted, with its why
        deal = plant(sandbox, item, price=item.reference // 2)
        await engine.on_feed_event(told(sandbox, deal))
        assert reads  # a rule's checks pass: the caps are checked against the ledger
        (purchase,) = await r.ledger.purchases()
    assert purchase.item_id == str(deal.item_id)


def _sticker_wear_rule(clock: VirtualClock) -> tuple[Sandbox, CatalogueItem, str]:
    """A quiet sandbox, an item that takes stickers, and a rule reading their wear (which
    the feed does not tell: its listings are confirmed by a search)."""
    sandbox = quiet_sandbox(clock)
    item = next(
        i
        for i in sandbox.market.items
        if i.takes_stickers and not i.phases and 5_000 < i.reference < 150_000
    )
    return (
        sandbox,
        item,
        rules_text(item.name, rule_extra="    stickers: {min_count: 1, max_wear: 0.5}"),
    )


async def test_a_rule_reading_sticker_wear_confirms_with_one_search_first(
    clock: VirtualClock,
) -> None:
    sandbox, item, rules = _sticker_wear_rule(clock)
    async with rig(clock, sandbox, rules, settings=SETTINGS) as r:
        engine = feed_on(r)
        await engine.start()
        await heal(r)
        assert r.ruleset.rules[0].needs_search
        deal = plant(sandbox, item, price=item.reference // 2)
        deal.stickers = (PlacedSticker("Sticker | Test", "img", 0.1, 0, 1_000),)
        searched_before = searches(sandbox)
        await engine.on_feed_event(told(sandbox, deal))
        assert await r.ledger.purchases() == []  # the feed does not tell sticker wear
        assert engine.schedule.hot_count == 1  # the name waits in the priority lane
        assert engine.next_due("search") <= clock.now() + 60.0
        clock.advance(max(0.0, engine.next_due("search") - clock.now()))
        await engine.step("search")
        (purchase,) = await r.ledger.purchases()
    assert searches(sandbox) == searched_before + 1
    assert purchase.item_id == str(deal.item_id)


class AnythingPlugin:
    """A third-party criterion that does not say what it reads: judged on a search."""

    @hookimpl
    def snipe_register_criteria(self) -> list[Criterion]:
        return [Criterion("anything", bool, self.compile, "passes everything")]

    def compile(self, value: bool, rule: RuleContext) -> Compiled:
        return Compiled(predicate=lambda listing, view, ctx: None)


async def test_an_undeclared_plugin_criterion_is_confirmed_by_a_search(
    clock: VirtualClock,
) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    rules = rules_text(item.name, rule_extra="    anything: true")
    plugins = [("anything", AnythingPlugin())]
    async with rig(clock, sandbox, rules, settings=SETTINGS, plugins=plugins) as r:
        engine = feed_on(r)
        await engine.start()
        deal = plant(sandbox, item, price=item.reference // 2)
        await engine.on_feed_event(told(sandbox, deal))
        assert await r.ledger.purchases() == []
        assert engine.schedule.hot_count == 1


async def test_removals_never_teach_the_references(clock: VirtualClock) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    async with rig(clock, sandbox, rules_text(item.name), settings=SETTINGS) as r:
        engine = feed_on(r)
        await engine.start()
        await heal(r)
        before = engine.references.quotes([], engine.ruleset.view, clock.now())
        learned = len(engine.references.book)
        for listing in list(sandbox.market.listings.values())[:50]:
            removal = FeedRemoval.model_validate(removed_payload(listing, listing.price // 3))
            await engine.on_feed_event(FeedRemovalEvent(removal, clock.now(), 1))
        assert len(engine.references.book) == learned
        assert engine.references.quotes([], engine.ruleset.view, clock.now()) == before
        view = await engine.view()
    assert view.feed is not None
    assert view.feed.events == 50
    assert purchases_of(sandbox) == []


async def test_a_deal_listed_during_a_disconnect_is_bought_once_after_the_heal(
    clock: VirtualClock,
) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    async with rig(clock, sandbox, rules_text(item.name), settings=SETTINGS) as r:
        engine = feed_on(r)
        await engine.start()
        await heal(r)
        # the heal may have read a snapshot of before the connection: a second look once
        # it has been rebuilt, then the audit's pace
        assert engine.next_due("snapshot") == clock.now() + SNAPSHOT_REBUILT_EVERY
        clock.advance(SNAPSHOT_REBUILT_EVERY)
        await engine.step("snapshot")
        assert engine.next_due("snapshot") >= clock.now() + 299.0  # trusted: audit pace
        clock.advance(30.0)
        await engine.on_feed_event(FeedDisconnected(1, clock.now(), "closed", "bye"))
        assert engine.next_due("snapshot") <= clock.now()  # the snapshot takes over
        clock.advance(2.0)
        gap_deal = plant(sandbox, item, price=item.reference // 2)  # never told
        clock.advance(10.0)  # the snapshot is rebuilt
        await heal(r, generation=2)
        # the heal's diff flagged the name: the search buys it
        clock.advance(max(0.0, engine.next_due("search") - clock.now()))
        await engine.step("search")
        # the same listing told again afterwards (duplicated, out of order) is not bought
        await engine.on_feed_event(told(sandbox, gap_deal, "update"))
        view = await engine.view()
        purchases = await r.ledger.purchases()
    assert [p.item_id for p in purchases] == [str(gap_deal.item_id)]
    assert [str(p["item_id"]) for p in purchases_of(sandbox)] == [str(gap_deal.item_id)]
    assert view.feed is not None
    assert (view.feed.reconnects, view.feed.gaps_healed, view.feed.state) == (1, 2, "trusted")


async def test_the_audit_counts_a_listing_the_feed_never_told_and_falls_back(
    clock: VirtualClock,
) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    async with rig(clock, sandbox, rules_text(item.name), settings=FULL_ONLY) as r:
        engine = feed_on(r)
        await engine.start()
        await heal(r)
        await engine.step("snapshot")  # not due: nothing
        clock.advance(engine.next_due("snapshot") - clock.now())
        await engine.step("snapshot")  # the audit's base: built after the connection
        told_deal = plant(sandbox, item, price=item.reference * 95 // 100)
        await engine.on_feed_event(told(sandbox, told_deal))
        plant(sandbox, item, price=item.reference * 96 // 100)  # the feed says nothing
        clock.advance(engine.next_due("snapshot") - clock.now())
        await engine.step("snapshot")
        view = await engine.view()
        metrics = EngineMetrics(engine)
        await metrics.refresh()
        text = metrics.render().decode()
    assert view.feed is not None
    assert view.feed.missed == 1
    assert view.feed.state == "distrusted"  # over the limit (0): snapshot polling again
    assert engine.next_due("snapshot") <= clock.now() + FULL_ONLY.snapshot_every
    assert "snipe_feed_missed_total 1.0" in text
    assert "snipe_feed_connected 1.0" in text
    assert "snipe_feed_gaps_healed_total 1.0" in text


async def test_a_listing_of_just_before_the_connection_is_not_counted_as_missed(
    clock: VirtualClock,
) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    async with rig(clock, sandbox, rules_text(item.name), settings=FULL_ONLY) as r:
        engine = feed_on(r)
        await engine.start()
        clock.advance(10.0 - clock.now() % 10.0 + 1.0)  # just after a rebuild
        sandbox.snapshot()  # built now: the heal below reads it
        plant(sandbox, item, price=item.reference * 95 // 100)  # before the connection
        clock.advance(2.0)
        await heal(r)  # its snapshot was built before the listing: not in it
        for _ in range(2):  # the base (shows the listing as new), then an audit
            clock.advance(engine.next_due("snapshot") - clock.now())
            await engine.step("snapshot")
        view = await engine.view()
    assert view.feed is not None
    assert view.feed.missed == 0
    assert view.feed.state == "trusted"


async def test_the_feed_is_credited_only_with_purchases_that_went_through(
    clock: VirtualClock,
) -> None:
    """``bought_items`` (the demo's "seen first by the live feed") and the feed's
    ``bought`` (status, the backtest report) count what the service bought, not what the
    rules accepted: a deal the feed told that someone else bought before our request is
    refused by the service, and is no purchase of the feed's."""
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    async with rig(clock, sandbox, rules_text(item.name), settings=SETTINGS) as r:
        engine = feed_on(r)
        await engine.start()
        await heal(r)
        gone = plant(sandbox, item, price=item.reference // 2)
        event = told(sandbox, gone)
        sandbox.market.remove(gone.item_id)  # sold to another buyer first
        await engine.on_feed_event(event)
        deal = plant(sandbox, item, price=item.reference // 2)
        await engine.on_feed_event(told(sandbox, deal))
        states = {p.item_id: p.state.value for p in await r.ledger.purchases()}
        view = await engine.view()
    # the rules accepted both, the feed started both purchases; the service sold one
    assert states == {str(gone.item_id): "FAILED", str(deal.item_id): "BOUGHT"}
    assert [str(p["item_id"]) for p in purchases_of(sandbox)] == [str(deal.item_id)]
    assert engine.feedwatch.bought_items == {str(deal.item_id)}
    assert view.feed is not None
    assert view.feed.bought == 1


async def test_a_deal_listed_just_before_a_reconnection_is_bought_within_seconds(
    clock: VirtualClock,
) -> None:
    # The heal reads a snapshot the service built before the connection came back: a
    # deal listed in those seconds is in neither that snapshot nor the feed. The next
    # snapshot poll comes once the snapshot has been rebuilt since the connection (not an
    # audit_every later) and its diff flags the name for the search that buys the deal.
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    async with rig(clock, sandbox, rules_text(item.name), settings=SETTINGS) as r:
        engine = feed_on(r)
        await engine.start()
        await heal(r)
        clock.advance(max(0.0, engine.next_due("search") - clock.now()))
        await engine.step("search")  # the heal's flags: searched, so the feed trusted
        assert engine.next_due("search") == math.inf  # searches only what is flagged
        await engine.on_feed_event(FeedDisconnected(1, clock.now(), "closed", "bye"))
        clock.advance(30.0 - clock.now() % 10.0 + 1.0)  # just after a rebuild
        sandbox.snapshot()  # built now: the heal below reads it
        clock.advance(1.0)
        deal = plant(sandbox, item, price=item.reference // 2)  # the feed is down: untold
        clock.advance(3.0)
        back = clock.now()
        await heal(r, generation=2)  # its snapshot was built before the deal: not in it
        assert await r.ledger.purchases() == []
        assert engine.next_due("snapshot") <= back + SNAPSHOT_REBUILT_EVERY
        while not await r.ledger.purchases() and clock.now() < back + 600.0:
            clock.advance(max(0.0, engine.next_due() - clock.now()))
            await engine.step()
        bought_at = clock.now()
        (purchase,) = await r.ledger.purchases()
        view = await engine.view()
    assert purchase.item_id == str(deal.item_id)
    assert [str(p["item_id"]) for p in purchases_of(sandbox)] == [str(deal.item_id)]
    assert bought_at - back <= SNAPSHOT_REBUILT_EVERY + 5.0  # the poll, then one search
    assert view.feed is not None
    assert (view.feed.state, view.feed.gaps_healed, view.feed.missed) == ("trusted", 2, 0)


async def test_the_next_due_time_follows_the_feed_between_steps(clock: VirtualClock) -> None:
    # A backtest's driver asks next_due() after every feed event, and it is kept until a
    # step or a wake: a flag or a lost feed must still make the search or the snapshot due.
    sandbox, item, rules = _sticker_wear_rule(clock)
    async with rig(clock, sandbox, rules, settings=SETTINGS) as r:
        engine = feed_on(r)

        def earliest() -> float:
            return min(engine.next_due(kind) for kind in engine.step_kinds())

        await engine.start()
        await heal(r)
        clock.advance(max(0.0, engine.next_due("search") - clock.now()))
        await engine.step("search")  # the heal's flags searched: the feed trusted
        await engine.step()  # the other kinds due at start
        assert engine.next_due("search") == math.inf
        quiet = engine.next_due()
        assert quiet == earliest() > clock.now()
        assert engine.next_due() == quiet  # asked again: the same
        deal = plant(sandbox, item, price=item.reference // 2)
        deal.stickers = (PlacedSticker("Sticker | Test", "img", 0.1, 0, 1_000),)
        await engine.on_feed_event(told(sandbox, deal))  # to confirm: its name flagged
        assert engine.next_due() == earliest() == engine.next_due("search") < quiet
        clock.advance(max(0.0, engine.next_due() - clock.now()))
        await engine.step()
        assert engine.next_due() == earliest() > clock.now()
        await engine.on_feed_event(FeedDisconnected(1, clock.now(), "closed", "bye"))
        assert engine.next_due() == earliest() == clock.now()  # the snapshot takes over
