"""The feed's audit in two tiers (issue 17 point 3, the 5 GB/day target): while the feed
is trusted, every ``audit_every`` a cheap audit (``GET /v1/prices`` against what the feed
told) and a full snapshot audit only every ``full_audit_every``. Step by step on a
virtual clock against the in-process sandbox (both backends); the feed's events are
handed to ``Engine.on_feed_event`` as the feed runner hands them, either a perfect feed
(the sandbox market's own change log, every change told) or one that leaves some out."""

from __future__ import annotations

import math

from engine import VirtualClock
from engine.client import FeedEvent, FeedListingEvent, FeedRemovalEvent
from engine.metrics import EngineMetrics
from engine.models import FeedListing, FeedRemoval
from engine.sandbox import Sandbox
from engine.sandbox._feed import listing_payload, removed_payload
from engine.sniper import Engine, EngineSettings, FeedSettings

from .harness import Rig, pick_item, plant, purchases_of, quiet_sandbox, rig, rules_text
from .test_feed_engine import feed_on, heal, searches

SETTINGS = EngineSettings(feed=FeedSettings(mode="on", audit_every=300.0, full_audit_every=3600.0))


class PerfectFeed:
    """Every change of the sandbox market since it was made, as the feed's events."""

    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox
        self.cursor = sandbox.market.changes.cursor

    def events(self) -> list[FeedEvent]:
        self.sandbox.advance()
        changes, self.cursor, lost = self.sandbox.market.changes.read(self.cursor)
        assert lost == 0
        out: list[FeedEvent] = []
        for change in changes:
            if change.kind == "removed":
                removal = FeedRemoval.model_validate(removed_payload(change.listing, change.price))
                out.append(FeedRemovalEvent(removal, change.at, 1))
            else:
                payload = listing_payload(change.listing, change.price, change.at)
                listing = FeedListing.model_validate(payload)
                out.append(FeedListingEvent(change.kind, listing, change.at, 1))
        return out

    async def tell(self, engine: Engine) -> int:
        events = self.events()
        for event in events:
            await engine.on_feed_event(event)
        return len(events)


async def audit(r: Rig) -> None:
    """Move the clock to the next snapshot step (an audit while trusted) and take it."""
    r.clock.advance(max(0.0, r.engine.next_due("snapshot") - r.clock.now()))
    await r.engine.step("snapshot")


async def cheap_audit(r: Rig, feed: PerfectFeed | None = None) -> None:
    """A cheap audit: its request at the next audit slot, then its judgement a few seconds
    later (the perfect feed, if any, tells what happened meanwhile)."""
    snapshots, fetched = r.engine.status.snapshots, r.engine.feedwatch.audit_bytes
    await audit(r)
    assert r.engine.feedwatch.audit_bytes > fetched
    if feed is not None:
        await feed.tell(r.engine)
    fetched = r.engine.feedwatch.audit_bytes
    await audit(r)
    assert r.engine.feedwatch.audit_bytes == fetched  # judged: no request
    assert r.engine.status.snapshots == snapshots  # GET /v1/prices, not the snapshot


async def settle(r: Rig) -> None:
    """Connect, heal, and take the full poll after the heal (the first after a heal is
    always full: the base of the full audit to come); the cheap audits follow."""
    await heal(r)
    snapshots = r.engine.status.snapshots
    await audit(r)
    assert r.engine.status.snapshots == snapshots + 1
    while r.engine.schedule.never_searched():  # the first search of every watched name
        r.clock.advance(max(0.0, r.engine.next_due("search") - r.clock.now()))
        await r.engine.step("search")


async def test_a_deal_the_feed_never_told_is_found_by_the_cheap_audit_and_bought_once(
    clock: VirtualClock,
) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    async with rig(clock, sandbox, rules_text(item.name), settings=SETTINGS) as r:
        engine = feed_on(r)
        await engine.start()
        await settle(r)
        watch = engine.feedwatch
        snapshots, searched = engine.status.snapshots, searches(sandbox)
        assert engine.next_due("search") == math.inf  # trusted: no background search
        clock.advance(60.0)
        deal = plant(sandbox, item, price=item.reference // 2)  # the feed never tells it
        feed = PerfectFeed(sandbox)  # ... but tells all that follows
        await cheap_audit(r)
        assert engine.status.snapshots == snapshots
        assert (watch.audits_cheap, watch.suspects) == (1, 1)
        assert purchases_of(sandbox) == []  # the audit buys nothing itself: a search does
        clock.advance(max(0.0, engine.next_due("search") - clock.now()))
        await engine.step("search")
        assert searches(sandbox) == searched + 1
        # the next audits: nothing suspect any more, nothing bought again
        for _ in range(2):
            await feed.tell(engine)  # the purchase took the listing off: "removed"
            await cheap_audit(r, feed)
            assert engine.next_due("search") == math.inf
        view = await engine.view()
        purchases = await r.ledger.purchases()
        metrics = EngineMetrics(engine)
        await metrics.refresh()
        text = metrics.render().decode()
    assert [p.item_id for p in purchases] == [str(deal.item_id)]
    assert [str(p["item_id"]) for p in purchases_of(sandbox)] == [str(deal.item_id)]
    assert searches(sandbox) == searched + 1
    assert view.feed is not None
    assert (view.feed.missed, view.feed.missed_cheap, view.feed.missed_full) == (1, 1, 0)
    assert (view.feed.audits_cheap, view.feed.suspects, view.feed.state) == (3, 1, "trusted")
    assert view.feed.audit_bytes > 0
    assert "snipe_feed_missed_total 1.0" in text
    assert 'snipe_feed_audits_total{tier="cheap"} 3.0' in text


async def test_no_name_is_suspect_when_the_feed_told_everything(clock: VirtualClock) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    async with rig(clock, sandbox, rules_text(item.name), settings=SETTINGS) as r:
        engine = feed_on(r)
        feed = PerfectFeed(sandbox)
        await engine.start()
        await settle(r)
        searched = searches(sandbox)
        market = sandbox.market
        for round_ in range(3):
            clock.advance(100.0)
            # new listings (none a deal), a price cut and a removal of the watched name
            fresh = [plant(sandbox, item, price=item.reference * p // 100) for p in (95, 97)]
            fresh[0].price = item.reference * 93 // 100
            fresh[0].edits.append((market.now, fresh[0].price))
            market.changes.record("update", market.now, fresh[0], fresh[0].price)
            if round_:
                market.remove(fresh[1].item_id)
            assert await feed.tell(engine) >= 3
            clock.advance(100.0)
            await feed.tell(engine)  # the market's own changes meanwhile
            # listed just before the request, its event only after the answer (the feed's
            # delay): the judgement waits for it
            plant(sandbox, item, price=item.reference * (90 - round_) // 100)
            await cheap_audit(r, feed)
        view = await engine.view()
    assert view.feed is not None
    assert (view.feed.audits_cheap, view.feed.suspects, view.feed.missed) == (3, 0, 0)
    assert searches(sandbox) == searched  # no suspect: not one search
    assert purchases_of(sandbox) == []


async def test_the_full_audit_still_runs_at_its_period(clock: VirtualClock) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    async with rig(clock, sandbox, rules_text(item.name), settings=SETTINGS) as r:
        engine = feed_on(r)
        feed = PerfectFeed(sandbox)
        await engine.start()
        await heal(r)
        healed_at = clock.now()
        full: list[float] = []
        fetched: list[float] = []
        for _ in range(2 + 2 * 22):  # two hours: 2 full audits and 22 cheap ones (2 steps)
            snapshots, audit_bytes = engine.status.snapshots, engine.feedwatch.audit_bytes
            at = engine.next_due("snapshot")
            clock.advance(max(0.0, at - clock.now()) / 2)
            await feed.tell(engine)
            await audit(r)
            if engine.status.snapshots > snapshots:
                full.append(clock.now() - healed_at)
            if engine.feedwatch.audit_bytes > audit_bytes:
                fetched.append(clock.now() - healed_at)
        view = await engine.view()
    # the poll after the heal (its base: 10 s after it, the snapshot rebuilt since the
    # connection), then every hour from it; one request every 5 min
    assert full == [10.0, 3610.0]
    assert fetched == [10.0 + 300.0 * k for k in range(24)]
    assert view.feed is not None
    assert (view.feed.audits_full, view.feed.audits_cheap) == (1, 22)
    assert (view.feed.missed, view.feed.suspects, view.feed.state) == (0, 0, "trusted")


async def test_too_many_listings_proven_missed_fall_back_to_snapshot_polling(
    clock: VirtualClock,
) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    settings = EngineSettings(
        feed=FeedSettings(mode="on", audit_every=300.0, full_audit_every=3600.0, missed_limit=2)
    )
    async with rig(clock, sandbox, rules_text(item.name), settings=settings) as r:
        engine = feed_on(r)
        await engine.start()
        await settle(r)
        snapshots = engine.status.snapshots
        clock.advance(60.0)
        # three listings the feed never tells, none a deal: the count gives them away
        for p in (95, 96, 97):
            plant(sandbox, item, price=item.reference * p // 100)
        await cheap_audit(r)
        assert engine.feedwatch.suspects == 1
        clock.advance(max(0.0, engine.next_due("search") - clock.now()))
        await engine.step("search")
        view = await engine.view()
        # the snapshot takes over at once; a full audit that finds the feed whole (what
        # the search proved is not counted again) trusts it again
        assert engine.next_due("snapshot") <= clock.now()
        await engine.step("snapshot")
        assert engine.status.snapshots == snapshots + 1
        after = await engine.view()
    assert view.feed is not None
    assert (view.feed.missed_cheap, view.feed.state) == (3, "distrusted")
    assert after.feed is not None
    assert (after.feed.missed, after.feed.missed_full, after.feed.audits_full) == (3, 0, 1)
    assert after.feed.state == "trusted"
    assert purchases_of(sandbox) == []
