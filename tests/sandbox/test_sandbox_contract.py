"""Contract tests: the project's own client (engine.client.MarketClient) against the
sandbox, for every endpoint, on both backends. Ground truth (what the sandbox really did)
is compared with what the client reports."""

from __future__ import annotations

import base64
import gzip
from collections.abc import AsyncIterator

import httpx
import pytest
from sandbox_support import locked_listing, regular_listing

from engine import (
    KeyRejected,
    OutcomeUnknown,
    PurchaseRefusal,
    PurchaseRefused,
    RateLimited,
    Unavailable,
    VirtualClock,
)
from engine.client import BulkItem, BulkStatus, MarketClient
from engine.sandbox import MarketConfig, Sandbox, SandboxConfig, TradingConfig

MERCHANT = "contract-shop"


@pytest.fixture
def sandbox(clock: VirtualClock) -> Sandbox:
    config = SandboxConfig(
        seed=21,
        market=MarketConfig(size=1500),
        trading=TradingConfig(trade_failure_rate=0.0, hold_failure_rate=0.0),
    )
    return Sandbox(config, clock=clock)


def _client(sandbox: Sandbox, clock: VirtualClock, key: str | None = None) -> MarketClient:
    return MarketClient(
        key or sandbox.api_key,
        base_url="http://sandbox",
        transport=httpx.ASGITransport(app=sandbox.app),
        clock=clock,
        timeout=30.0,
    )


@pytest.fixture
async def client(sandbox: Sandbox, clock: VirtualClock) -> AsyncIterator[MarketClient]:
    async with _client(sandbox, clock) as market:
        yield market


def _link(sandbox: Sandbox) -> dict[str, str]:
    account = sandbox.default_account
    return {"partner": account.partner, "token": account.token}


async def test_account_endpoints(client: MarketClient, sandbox: Sandbox) -> None:
    user = await client.get_user()
    assert user.user is not None
    assert user.user.wallet == sandbox.config.balance
    token = base64.b64encode(b"contract-token").decode()
    created = await client.create_user(token)
    assert created.data is not None
    assert created.data.isNew is True
    assert (await client.set_platform_token(token)).success is True
    assert (await client.set_platform_api("F" * 32)).success is True
    link = "https://platform.invalid/tradeoffer/new/?partner=4242&token=abcdEFGH"
    checked = await client.check_tradelink(link)
    assert checked.platformid32 == 4242
    assert checked.token == "abcdEFGH"
    assert (await client.update_account({"tradelink": link})).success is True
    polled = await client.ready_to_transfer_p2p("F" * 32)
    assert polled.trades == ()


async def test_a_wrong_key_is_key_rejected(sandbox: Sandbox, clock: VirtualClock) -> None:
    async with _client(sandbox, clock, key="a-key-the-sandbox-never-issued") as client:
        with pytest.raises(KeyRejected):
            await client.get_user()


async def test_search_v1_and_v2(client: MarketClient, sandbox: Sandbox) -> None:
    name = max(sandbox.market.by_name, key=lambda n: len(sandbox.market.by_name[n]))
    found = await client.search_items_by_name([name], include_hold=True)
    listings = found.items[name]
    assert 0 < len(listings) <= 50
    assert [li.price for li in listings] == sorted(li.price for li in listings)
    assert all(isinstance(li.item_id, str) and li.phase is None for li in listings)
    assert all(li.platform_price for li in listings)  # platform_price_number accepted too
    v1 = await client.search_items_by_name_v1([name])
    assert v1.items[name]
    assert all(not li.trade_locked for li in v1.items[name])


async def test_the_21st_search_in_a_window_gets_429_with_ms_before_next(
    client: MarketClient, clock: VirtualClock
) -> None:
    for _ in range(20):
        await client.search_items_by_name(["Revolution Case"])
        clock.advance(0.5)
    with pytest.raises(RateLimited) as info:
        await client.search_items_by_name_v1(["Revolution Case"])
    assert info.value.retry_after == pytest.approx(50.0)
    clock.advance(info.value.retry_after)
    assert (await client.search_items_by_name(["Revolution Case"])).success


async def test_cursor_walk_over_a_changing_market_returns_each_listing_at_most_once(
    client: MarketClient, sandbox: Sandbox, clock: VirtualClock
) -> None:
    seen: list[str] = []
    page = await client.get_items_list(limit=100, order="asc", include_hold=True)
    pages = 1
    while True:
        seen += [listing.item_id for listing in page.items]
        if not page.has_more:
            assert page.next_cursor is None
            break
        assert page.next_cursor is not None
        clock.advance(300.0)  # arrivals, departures and price edits between pages
        page = await client.get_items_list(
            limit=100, order="asc", include_hold=True, cursor=page.next_cursor
        )
        pages += 1
    assert pages >= 15
    assert len(seen) == len(set(seen))
    assert sandbox.market.departed > 0


async def test_catalogue_v1_and_alternative_cursor(client: MarketClient) -> None:
    v1 = await client.get_items_list_v1(game="csgo", exterior="FN", order="asc", skip=100)
    assert v1.count == len(v1.items) == 100
    assert all(li.name.endswith("(Factory New)") for li in v1.items)
    first = await client.get_items_list(limit=5, order_by="price", order="asc")
    last = first.items[-1]
    second = await client.get_items_list(
        limit=5, order="asc", cursor_price=last.price, cursor_item_id=last.item_id
    )
    assert not {li.item_id for li in first.items} & {li.item_id for li in second.items}


async def test_own_listings_platform_items_and_remove_all(client: MarketClient) -> None:
    own = await client.list_items_platform()
    assert len(own.items) == 4
    assert own.items[0].platform_price is not None
    items = await client.get_platform_items(game="dota2")
    assert items.items
    assert all(i.game_id == 570 for i in items.items)
    assert (await client.remove_all()).count == 4


async def test_snapshot_json_and_gzip_csv(client: MarketClient, sandbox: Sandbox) -> None:
    snapshot = await client.snapshot()
    assert snapshot.success
    assert len(snapshot.items) > 1000
    assert all(isinstance(row.price, int) for row in snapshot.items)
    async with client.snapshot_csv(include_hold=True) as stream:
        raw = b"".join([chunk async for chunk in stream])
    lines = gzip.decompress(raw).decode().splitlines()
    assert lines[0].endswith(",unlock_at,send_until")
    assert len(lines) - 1 == len(sandbox.market.listings)


async def test_buy_one_charges_at_most_the_ceiling(client: MarketClient, sandbox: Sandbox) -> None:
    listing = regular_listing(sandbox, min_price=1500)
    result = await client.buy_one_p2p(
        item_id=str(listing.item_id), price=listing.price + 100, project_id="c-1", **_link(sandbox)
    )
    assert result.success
    assert result.price == listing.price
    truth = sandbox.ground_truth()
    assert [(p["project_id"], p["price"]) for p in truth["purchases"]] == [("c-1", listing.price)]
    assert truth["balances"][truth["default_account"]] == sandbox.config.balance - listing.price


@pytest.mark.parametrize(
    ("case", "reason"),
    [
        ("sold", PurchaseRefusal.ITEM_SOLD),
        ("cheaper", PurchaseRefusal.PRICE_CHANGED),
        ("locked", PurchaseRefusal.TRADE_LOCKED),
        ("poor", PurchaseRefusal.INSUFFICIENT_BALANCE),
    ],
)
async def test_refusals_are_typed(
    client: MarketClient, sandbox: Sandbox, case: str, reason: PurchaseRefusal
) -> None:
    listing = (
        locked_listing(sandbox) if case == "locked" else regular_listing(sandbox, min_price=900)
    )
    price = listing.price
    if case == "sold":
        sandbox.market.remove(listing.item_id)
    elif case == "cheaper":
        price -= 1
    elif case == "poor":
        sandbox.default_account.balance = 0
    with pytest.raises(PurchaseRefused) as info:
        await client.buy_one_p2p(
            item_id=str(listing.item_id), price=price, project_id=f"r-{case}", **_link(sandbox)
        )
    assert info.value.reason is reason
    if case == "cheaper":
        assert info.value.new_price == listing.price
    assert sandbox.ground_truth()["purchases"] == []


async def test_buy_by_name(client: MarketClient, sandbox: Sandbox) -> None:
    listing = regular_listing(sandbox, min_price=1000)
    cheapest = sandbox.market.cheapest(listing.name, include_hold=False)[0]
    result = await client.buy_one_p2p_name(
        name=listing.name, price=cheapest.price, project_id="by-name", **_link(sandbox)
    )
    assert result.price == cheapest.price
    assert sandbox.ground_truth()["purchases"][0]["item_id"] == str(cheapest.item_id)


async def test_a_hold_purchase_from_reservation_to_delivery(
    client: MarketClient, sandbox: Sandbox, clock: VirtualClock
) -> None:
    listing = locked_listing(sandbox)
    assert listing.unlock_at is not None
    result = await client.buy_one_p2p(
        item_id=str(listing.item_id), price=listing.price, project_id="hold-1",
        allow_trade_locked=True, **_link(sandbox),
    )  # fmt: skip
    assert result.purchase_status == "reserved"
    assert result.unlock_at == int(listing.unlock_at)
    clock.advance(10.0)
    trade = (await client.check_many_project_id(["hold-1"])).trades[0]
    assert trade.status == 0
    assert trade.escrow_status == "awaiting_unlock"
    assert not trade.final
    clock.jump_to(listing.unlock_at + 4 * 3600)
    trade = (await client.check_many_project_id(["hold-1"])).trades[0]
    assert trade.final
    assert trade.status == 5
    assert trade.escrow_status == "completed"
    assert sandbox.ground_truth()["refunds"] == []


async def test_a_hold_purchase_not_delivered_is_refunded(clock: VirtualClock) -> None:
    config = SandboxConfig(
        seed=5, market=MarketConfig(size=800), trading=TradingConfig(hold_failure_rate=1.0)
    )
    sandbox = Sandbox(config, clock=clock)
    async with _client(sandbox, clock) as client:
        listing = locked_listing(sandbox)
        assert listing.send_until is not None
        await client.buy_one_p2p(
            item_id=str(listing.item_id), price=listing.price, project_id="hold-2",
            allow_trade_locked=True, **_link(sandbox),
        )  # fmt: skip
        clock.jump_to(listing.send_until + 1)
        trade = (await client.check_many_project_id(["hold-2"])).trades[0]
        user = await client.get_user()
    assert trade.status == 6
    assert trade.reason
    assert user.user is not None
    assert user.user.wallet == sandbox.config.balance
    assert sandbox.ground_truth()["refunds"][0]["amount"] == listing.price


@pytest.mark.parametrize("all_or_none", [False, True])
async def test_bulk_purchase_with_and_without_all(
    client: MarketClient, sandbox: Sandbox, all_or_none: bool
) -> None:
    now = sandbox.now()
    a, b = sorted(
        (li for li in sandbox.market.listings.values() if not li.locked(now)),
        key=lambda li: li.item_id,
    )[:2]
    items = [
        BulkItem(item_id=str(a.item_id), price=a.price, project_id="bulk-a"),
        BulkItem(item_id=str(b.item_id), price=b.price - 1, project_id="bulk-b"),
    ]
    result = await client.buy(items, all_or_none=all_or_none, **_link(sandbox))
    statuses = [r.status for r in result.results]
    bought = [p["project_id"] for p in sandbox.ground_truth()["purchases"]]
    if all_or_none:
        assert statuses == [BulkStatus.REFUSED, BulkStatus.REFUSED]
        assert bought == []
    else:
        assert statuses == [BulkStatus.BOUGHT, BulkStatus.REFUSED]
        assert bought == ["bulk-a"]
        assert result.results[0].charged == a.price
    assert result.results[1].refusal is PurchaseRefusal.PRICE_CHANGED


async def test_a_purchase_whose_answer_was_lost_is_found_by_its_project_id(
    client: MarketClient, sandbox: Sandbox, clock: VirtualClock
) -> None:
    sandbox.inject("GET /v1/buy-one-p2p", "timeout_after_commit", count=1)
    listing = regular_listing(sandbox)
    with pytest.raises(OutcomeUnknown) as info:
        await client.buy_one_p2p(
            item_id=str(listing.item_id), price=listing.price, project_id="lost", **_link(sandbox)
        )
    assert info.value.project_ids == ("lost",)
    assert (await client.check_many_project_id(["lost"])).trades == ()  # not visible yet
    clock.advance(60.0)
    found = (await client.check_many_project_id(["lost", "never-sent"])).trades
    assert [(t.project_id, t.price) for t in found] == [("lost", listing.price)]
    assert len(sandbox.ground_truth()["purchases"]) == 1


@pytest.mark.parametrize("kind", ["drop_connection", "html_200", "http_error"])
async def test_a_broken_answer_to_a_purchase_is_unknown_never_refused(
    client: MarketClient, sandbox: Sandbox, kind: str
) -> None:
    sandbox.inject("GET /v1/buy-one-p2p", kind, count=1, commit=True)
    listing = regular_listing(sandbox)
    with pytest.raises(OutcomeUnknown):
        await client.buy_one_p2p(
            item_id=str(listing.item_id), price=listing.price, project_id=kind, **_link(sandbox)
        )
    assert [p["project_id"] for p in sandbox.ground_truth()["purchases"]] == [kind]


async def test_a_broken_answer_elsewhere_is_unavailable(
    client: MarketClient, sandbox: Sandbox
) -> None:
    sandbox.inject("GET /v1/user", "html_200", count=1)
    with pytest.raises(Unavailable):
        await client.get_user()
    sandbox.inject("GET /v1/user", "http_error", count=1, status=503)
    with pytest.raises(Unavailable):
        await client.get_user()


async def test_system_busy_is_a_typed_refusal(client: MarketClient, sandbox: Sandbox) -> None:
    sandbox.inject("GET /v1/buy-one-p2p", "system_busy", count=1)
    listing = regular_listing(sandbox)
    with pytest.raises(PurchaseRefused) as info:
        await client.buy_one_p2p(
            item_id=str(listing.item_id), price=listing.price, project_id="busy", **_link(sandbox)
        )
    assert info.value.reason is PurchaseRefusal.SYSTEM_BUSY


async def test_history_and_force_check(
    client: MarketClient, sandbox: Sandbox, clock: VirtualClock
) -> None:
    listing = regular_listing(sandbox)
    bought = await client.buy_one_p2p(
        item_id=str(listing.item_id), price=listing.price, project_id="hist", **_link(sandbox)
    )
    history = await client.my_history(sort="DESC")
    assert [(t.id, t.price, t.action) for t in history.data.trades] == [
        (bought.id, listing.price, "buy")
    ]
    clock.advance(2 * 3600.0)
    assert bought.id is not None
    assert (await client.force_check_trade(bought.id)).success is True


async def test_buy_orders(client: MarketClient, sandbox: Sandbox) -> None:
    name = "Revolution Case"
    ceiling = sandbox.market.cheapest(name, include_hold=False)[0].price
    created = await client.create_buy_order(name=name, amount=3, price=ceiling, game="csgo")
    assert created.success
    assert created.filled == 1
    assert created.id is not None
    orders = await client.buy_orders()
    assert [(o.name, o.amount, o.filled) for o in orders.offers] == [(name, 3, 1)]
    assert (await client.remove_buy_order([created.id])).removed == 1
    assert (await client.buy_orders()).offers == ()


async def test_merchant_endpoints(client: MarketClient) -> None:
    inventory = await client.merchant_platform_inventory(
        merchant=MERCHANT, game="csgo", platform_id="76561198000000042", trade_url_token="abcd1234"
    )
    assert inventory.items
    assert any(item.depositable for item in inventory.items)
    deposits = await client.merchant_deposits(
        merchant=MERCHANT, start="2025-01-01", end="2027-01-01"
    )
    assert len(deposits.deposits) == 200
    assert deposits.start_from is not None
    more = await client.merchant_deposits(
        merchant=MERCHANT, start="2025-01-01", end="2027-01-01", start_from=deposits.start_from
    )
    assert more.deposits[0].transaction_id > deposits.deposits[-1].transaction_id
    hooks = await client.merchant_webhooks(merchant=MERCHANT, status="completed")
    assert hooks.data
    assert all(h.status == "completed" for h in hooks.data)
    one = await client.merchant_webhook(
        merchant=MERCHANT, transaction_id=hooks.data[0].transaction_id
    )
    assert one.data is not None
    assert one.data.deposit_id == hooks.data[0].deposit_id
    resent = await client.merchant_webhook_resend(
        merchant=MERCHANT, deposit_id=hooks.data[0].deposit_id
    )
    assert resent.status == "success"


async def test_tron_energy_rent(client: MarketClient, sandbox: Sandbox) -> None:
    result = await client.rent_tron_energy("T" + "A" * 33)
    assert result.success
    assert result.total_cost
    assert sandbox.default_account.balance < sandbox.config.balance


async def test_a_filled_order_leaves_the_list_and_its_name_gets_a_new_order(
    client: MarketClient, sandbox: Sandbox
) -> None:
    name = "Revolution Case"
    ceiling = sandbox.market.cheapest(name, include_hold=False)[0].price
    first = await client.create_buy_order(name=name, amount=1, price=ceiling, game="csgo")
    assert (first.filled, (await client.buy_orders()).offers) == (1, ())  # filled up: gone
    assert (await client.remove_buy_order([first.id or 0])).removed == 0
    history = (await client.my_history(sort="ASC")).data.trades
    assert [(t.name, t.price, t.project_id) for t in history] == [(name, ceiling, None)]
    second = await client.create_buy_order(name=name, amount=2, price=1, game="csgo")
    assert second.id not in (None, first.id)
    assert [(o.id, o.filled) for o in (await client.buy_orders()).offers] == [(second.id, 0)]
