"""The client against the sandbox service (in process, through httpx.ASGITransport): the two
sides of the wire agree on the calls the engine makes most."""

from __future__ import annotations

import gzip
from collections.abc import AsyncIterator

import httpx
import pytest

from engine import PurchaseRefusal, PurchaseRefused, RateLimiter, VirtualClock
from engine.client import BulkItem, BulkStatus, MarketClient
from engine.sandbox import Sandbox, SandboxConfig


@pytest.fixture
async def market(clock: VirtualClock) -> AsyncIterator[tuple[MarketClient, Sandbox]]:
    sandbox = Sandbox(SandboxConfig(seed=7), clock=clock)
    async with MarketClient(
        sandbox.api_key,
        base_url="http://sandbox",
        transport=httpx.ASGITransport(app=sandbox.app),
        limiter=RateLimiter(clock),
        clock=clock,
    ) as client:
        yield client, sandbox


async def test_search_buy_and_resolve_by_project_id(
    market: tuple[MarketClient, Sandbox], clock: VirtualClock
) -> None:
    client, sandbox = market
    account = sandbox.default_account
    page = await client.get_items_list(limit=20, order_by="price", sort="ASC")
    name = page.items[0].name
    found = await client.search_items_by_name([name])
    listing = next(li for li in found.items[name] if not li.trade_locked)
    bought = await client.buy_one_p2p(
        item_id=listing.item_id,
        price=listing.price,
        partner=account.partner,
        token=account.token,
        project_id="e2e-1",
    )
    assert bought.success
    assert bought.price is not None
    assert bought.price <= listing.price
    with pytest.raises(PurchaseRefused) as info:  # the same listing again: it is gone
        await client.buy_one_p2p(
            item_id=listing.item_id,
            price=listing.price,
            partner=account.partner,
            token=account.token,
            project_id="e2e-2",
        )
    assert info.value.reason is PurchaseRefusal.ITEM_SOLD
    clock.advance(120)
    checked = await client.check_many_project_id(["e2e-1", "e2e-never"])
    assert [t.project_id for t in checked.trades] == ["e2e-1"]


async def test_bulk_buy_and_csv_snapshot(market: tuple[MarketClient, Sandbox]) -> None:
    client, sandbox = market
    account = sandbox.default_account
    page = await client.get_items_list(limit=3, order_by="price", sort="ASC")
    items = [BulkItem(li.item_id, li.price, f"bulk-{i}") for i, li in enumerate(page.items)]
    result = await client.buy(items, partner=account.partner, token=account.token)
    assert {r.status for r in result.results} <= {BulkStatus.BOUGHT, BulkStatus.REFUSED}
    assert result.bought
    async with client.snapshot_csv(include_hold=True) as stream:
        body = b"".join([chunk async for chunk in stream])
    header = gzip.decompress(body).split(b"\n", 1)[0]
    assert header.split(b",")[:3] == [b"item_id", b"name", b"price"]
    assert b"unlock_at" in header


async def test_a_prefiltered_search_keeps_exactly_the_listings_within_the_ceilings(
    market: tuple[MarketClient, Sandbox],
) -> None:
    client, _ = market
    page = await client.get_items_list(limit=100, order_by="price", sort="ASC")
    names = sorted({x.name for x in page.items})[:20]
    full = await client.search_items_by_name(names)
    watched = names[::2]
    ceilings = {n: sorted(x.price for x in full.items.get(n, ()))[:3][-1:] for n in watched}
    limits = {n: p[0] for n, p in ceilings.items() if p}
    lazy = await client.search_items_by_name(names, prefilter=limits)
    want = {
        key: tuple(x for x in found if x.name in limits and x.price <= limits[x.name])
        for key, found in full.items.items()
    }
    assert lazy.items == want
    assert any(want.values())
    assert lazy.passed_over == sum(map(len, full.items.values())) - sum(map(len, want.values()))
