"""End to end: the sandbox's CSV snapshot, streamed through the client, into the tracker."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from engine import RateLimiter, VirtualClock
from engine.client import MarketClient
from engine.sandbox import Sandbox, SandboxConfig
from engine.snapshot import NewListing, PriceDrop, Snapshot, SnapshotTracker, aparse_csv_snapshot


@pytest.fixture
async def market(clock: VirtualClock) -> AsyncIterator[tuple[MarketClient, Sandbox]]:
    sandbox = Sandbox(SandboxConfig(seed=11), clock=clock)
    async with MarketClient(
        sandbox.api_key,
        base_url="http://sandbox",
        transport=httpx.ASGITransport(app=sandbox.app),
        limiter=RateLimiter(clock),
        clock=clock,
    ) as client:
        yield client, sandbox


async def _fetch(client: MarketClient, *, include_hold: bool = True) -> Snapshot:
    async with client.snapshot_csv(include_hold=include_hold) as stream:
        return await aparse_csv_snapshot(stream)


async def test_csv_stream_agrees_with_the_json_snapshot(
    market: tuple[MarketClient, Sandbox],
) -> None:
    client, _ = market
    snapshot = await _fetch(client, include_hold=False)
    answer = await client.snapshot()  # without include_hold, as the CSV here
    assert len(snapshot) == len(answer.items) > 0
    assert {(row.item_id, row.price, row.name) for row in snapshot} == {
        (item.item_id, item.price, item.name) for item in answer.items
    }
    assert not snapshot.has_hold
    with_hold = await _fetch(client)
    assert with_hold.has_hold
    assert any(row.unlock_at for row in with_hold)


async def test_tracker_reports_what_the_market_did(
    market: tuple[MarketClient, Sandbox], clock: VirtualClock
) -> None:
    client, _ = market
    tracker = SnapshotTracker()
    before = await _fetch(client)
    tracker.update(before)
    clock.advance(600)
    after = await _fetch(client)
    changes = await tracker.aupdate(after)
    events = list(changes)
    assert events, "ten minutes of sandbox market made no new listing or price drop"
    for event in events:
        now = after.get(event.item_id)
        assert now is not None
        assert now.price == event.price
        if isinstance(event, NewListing):
            assert event.item_id not in before or before.get(event.item_id).price is None  # type: ignore[union-attr]
        else:
            assert isinstance(event, PriceDrop)
            assert before.get(event.item_id).price == event.old_price  # type: ignore[union-attr]
    assert changes.new + changes.dropped == len(events)
    assert changes.removed == sum(1 for row in before if row.item_id not in after)
