"""The live feed in recordings (format version 2): ``snipe record``'s recorder writes the
sandbox's feed events with their arrival times, and ``snipe backtest`` hands them to the
engine at those times, so a deal only the feed has told yet is bought from the feed, and
the report says so. Sandbox served by hypercorn on 127.0.0.1 (its feed is a websocket);
one virtual clock for the market, the recorder and the feed client (both backends)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import anyio
import httpx
import pytest
from sniper.harness import pick_item, plant

from engine import VirtualClock
from engine._limiter import DEFAULT_LIMITS, RateLimiter
from engine.backtest import (
    Recorder,
    RecorderSettings,
    RecordWriter,
    build_report,
    read_records,
)
from engine.client import Backoff, FeedClient, MarketClient
from engine.sandbox import FeedConfig, MarketConfig, Sandbox, SandboxConfig, served

from .support import TRADE_LINK, backtest

# A guard against a hang, not a measurement.
PATIENCE = 20.0


async def _until(done: Callable[[], bool]) -> None:
    """Let real time pass (the sockets') until ``done()``: the feed's frames come from
    another task with nothing to wait on but the condition."""
    with anyio.fail_after(PATIENCE):
        while True:
            if done():
                return
            await anyio.sleep(0.002)


def _rules(name: str, *, feed: str = "auto") -> object:
    from engine._plugins import make_plugin_host
    from engine.rules import load_rules_text

    text = f"""
version: 1
account: {{base_url: "http://replay", trade_link: "{TRADE_LINK}", feed: {feed}}}
budgets: {{per_day: "500.00", total: "500.00"}}
rules:
  - name: deals
    match: {{names: ["{name}"]}}
    discount: 20
    max_price: "200.00"
"""
    return load_rules_text(text, host=make_plugin_host(load_entry_points=False))


async def _record_with_feed(directory: Path) -> tuple[str, str, float]:
    """30 s of a quiet sandbox market recorded with its feed; a deal is planted 3 s after
    the second snapshot (the feed tells it at once; the next snapshot 7 s later). Returns
    the deal's name and item id and the time it was planted."""
    clock = VirtualClock(1_767_225_600.0)
    market = MarketConfig(size=300, deal_share=0.0, hold_share=0.0, mean_lifetime=10**9)
    config = SandboxConfig(seed=3, market=market, feed=FeedConfig(25.0, 20.0))
    sandbox = Sandbox(config, clock=clock)
    item = pick_item(sandbox)
    limiter = RateLimiter(clock, DEFAULT_LIMITS)
    async with (
        served(sandbox) as url,
        MarketClient(
            sandbox.api_key,
            base_url="http://sandbox",
            transport=httpx.ASGITransport(app=sandbox.app),
            limiter=limiter,
            clock=clock,
        ) as client,
    ):
        feed = FeedClient(url, games=["csgo"], clock=clock, backoff=Backoff(0.5, cap=1.0))
        with RecordWriter(directory, source=url) as writer:
            settings = RecorderSettings(feed="on", catalogue_pages=0)
            recorder = Recorder(client, writer, clock, limiter, settings=settings, feed=feed)
            async with anyio.create_task_group() as tg:
                tg.start_soon(recorder.record_feed)
                await _until(lambda: recorder.stats.feed_connects == 1)
                await recorder.step()
                clock.advance(10.0)
                await recorder.step()
                clock.advance(3.0)
                deal = plant(sandbox, item, price=item.reference // 2)
                planted = clock.now()
                await _until(lambda: recorder.stats.feed_events >= 1)
                for _ in range(3):
                    clock.advance(7.0 if clock.now() == planted else 10.0)
                    await recorder.step()
                tg.cancel_scope.cancel()
    return item.name, str(deal.item_id), planted


@pytest.fixture
async def feed_recording(tmp_path: Path) -> tuple[Path, str, str, float]:
    directory = tmp_path / "rec"
    name, item_id, planted = await _record_with_feed(directory)
    return directory, name, item_id, planted


async def test_a_deal_first_told_by_the_feed_is_bought_from_the_feed_in_replay(
    feed_recording: tuple[Path, str, str, float],
) -> None:
    directory, name, item_id, planted = feed_recording
    feed = [r for r in read_records(directory) if r.k == "feed"]
    told = [r for r in feed if r.body.get("item", {}).get("item_id") == item_id]
    assert [r.body["ev"] for r in told] == ["new"]
    assert told[0].t == planted  # its arrival time, on the recorder's clock
    run = await backtest(_rules(name), directory, race_factor=0.0)
    bought = [p for p in run.purchases if p["item_id"] == item_id]
    assert len(bought) == 1
    # bought on the event, before the snapshot that would have shown it (7 s later)
    assert planted <= bought[0]["created_at"] < planted + 7.0
    report = build_report(run)
    rows = [r for r in report.summary["purchases"] if r["project_id"] == bought[0]["project_id"]]
    assert rows[0]["seen_first"] == "feed"
    assert report.summary["totals"]["seen_first"]["feed"] == 1
    assert report.summary["recording"]["feed_events"] == len(feed)


async def test_with_the_feed_off_the_same_deal_is_found_later_by_polling(
    feed_recording: tuple[Path, str, str, float],
) -> None:
    """``account.feed: off``: the events are not handed over; the engine's own polling
    finds the deal later (the market still knows it from the feed, as a live search
    would have found it)."""
    directory, name, item_id, planted = feed_recording
    with_feed = await backtest(_rules(name), directory, race_factor=0.0)
    without = await backtest(_rules(name, feed="off"), directory, race_factor=0.0)
    first = [p["created_at"] for p in with_feed.purchases if p["item_id"] == item_id]
    later = [p["created_at"] for p in without.purchases if p["item_id"] == item_id]
    assert len(first) == len(later) == 1
    assert planted <= first[0] < later[0]
    assert without.seen_first[item_id] in ("search", "snapshot")


async def test_replayed_feed_is_healed_by_a_snapshot_then_trusted_as_live(
    feed_recording: tuple[Path, str, str, float],
) -> None:
    """The replayed feed's trust follows the live rules: connected at the first segment's
    head, healed by the first snapshot after it, then trusted (snapshot every audit
    period instead of every 10 s)."""
    directory, name, _, _ = feed_recording
    with_feed = await backtest(_rules(name), directory, race_factor=0.0)
    without = await backtest(_rules(name, feed="off"), directory, race_factor=0.0)
    assert without.snapshots == 5  # every 10 s over the 40 s recorded
    # the heal, and its second look 10 s later (the heal's snapshot may be of before the
    # connection); the next audit is 300 s after that
    assert with_feed.snapshots == 2


async def test_feed_auto_gives_up_on_a_feed_that_never_answers(tmp_path: Path) -> None:
    """``feed: auto`` as the engine applies it: after AUTO_ATTEMPTS connections without a
    handshake the recorder stops trying and says so; the recording goes on without it."""
    clock = VirtualClock(1_767_225_600.0)
    limiter = RateLimiter(clock, DEFAULT_LIMITS)
    errors: list[str] = []
    async with MarketClient("k", base_url="http://127.0.0.1:9", limiter=limiter) as client:
        feed = FeedClient("http://127.0.0.1:9", games=["csgo"], clock=clock)
        with RecordWriter(tmp_path / "rec") as writer:
            recorder = Recorder(client, writer, clock, limiter, feed=feed, on_error=errors.append)
            with anyio.fail_after(PATIENCE):
                async with clock.autojump():
                    await recorder.record_feed()
    assert recorder.stats.feed_unavailable
    assert recorder.stats.feed_connects == 0
    assert feed.health().attempts >= 3
    assert errors == [
        "the listing feed at http://127.0.0.1:9/socket.io/?EIO=4&transport=websocket does not "
        "answer (feed: auto): recording without it"
    ]
