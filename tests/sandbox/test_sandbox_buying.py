"""Buying over HTTP: purchases, refusals, trades on market time, bulk purchases, buy
orders, project ids, history (raw requests, both backends)."""

from __future__ import annotations

import dataclasses

import pytest
from sandbox_support import Api, locked_listing, regular_listing

from engine import VirtualClock
from engine.sandbox import MarketConfig, Sandbox, SandboxConfig, TradingConfig


def _sandbox(clock: VirtualClock, **trading: object) -> Sandbox:
    config = SandboxConfig(
        seed=11,
        market=MarketConfig(size=1200),
        trading=TradingConfig(**trading),  # type: ignore[arg-type]
    )
    return Sandbox(config, clock=clock)


async def test_price_is_a_ceiling_and_the_listing_price_is_charged(
    api: Api, sandbox: Sandbox
) -> None:
    listing = regular_listing(sandbox, min_price=2000)
    before = sandbox.default_account.balance
    body = await api.buy(listing, price=listing.price + 500, project_id="order-1")
    assert body["success"] is True
    assert body["price"] == listing.price
    assert isinstance(body["id"], int)
    assert "purchase_status" not in body
    assert sandbox.default_account.balance == before - listing.price
    assert listing.item_id not in sandbox.market.listings
    truth = sandbox.ground_truth()
    assert [p["project_id"] for p in truth["purchases"]] == ["order-1"]
    assert truth["charges"][0]["amount"] == listing.price


async def test_buying_a_sold_item_says_item_sold(api: Api, sandbox: Sandbox) -> None:
    listing = regular_listing(sandbox)
    assert (await api.buy(listing))["success"] is True
    body = await api.buy(listing)
    assert body == {"success": False, "msg": "Item sold"}
    assert len(sandbox.ground_truth()["purchases"]) == 1


async def test_below_the_asking_price_says_price_changed_with_new_price(
    api: Api, sandbox: Sandbox
) -> None:
    listing = regular_listing(sandbox, min_price=1000)
    body = await api.buy(listing, price=listing.price - 1)
    assert body["success"] is False
    assert body["msg"] == "Price changed"
    assert int(body["new_price"]) == listing.price
    assert listing.item_id in sandbox.market.listings


async def test_insufficient_balance_is_refused(api: Api, sandbox: Sandbox) -> None:
    listing = regular_listing(sandbox, min_price=5000)
    sandbox.default_account.balance = listing.price - 1
    body = await api.buy(listing)
    assert body["success"] is False
    assert "balance" in body["msg"]
    assert sandbox.default_account.balance == listing.price - 1


@pytest.mark.parametrize(
    ("params", "fragment"),
    [
        ({"project_id": "x" * 51}, "project_id"),
        ({"price": "12.50"}, "price"),
        ({"partner": "abc"}, "trade link"),
        ({"token": "short"}, "trade link"),
    ],
)
async def test_bad_purchase_parameters_are_refused_before_anything_happens(
    api: Api, sandbox: Sandbox, params: dict[str, str], fragment: str
) -> None:
    listing = regular_listing(sandbox)
    query = {"item_id": str(listing.item_id), "price": listing.price, **api.link, **params}
    body = await api.get("/v1/buy-one-p2p", **query)
    assert body["success"] is False
    assert fragment in body["msg"]
    assert sandbox.ground_truth()["purchases"] == []


async def test_trade_locked_needs_allow_trade_locked_then_is_reserved(
    api: Api, sandbox: Sandbox
) -> None:
    listing = locked_listing(sandbox)
    refused = await api.buy(listing)
    assert refused["success"] is False
    assert "allow_trade_locked=1" in refused["msg"]
    body = await api.buy(listing, allow_trade_locked=1)
    assert body["success"] is True
    assert body["purchase_status"] == "reserved"
    assert body["unlock_at"].endswith("Z")
    assert body["send_until"] > body["unlock_at"]


async def test_buy_by_name_takes_the_cheapest_regular_listing(api: Api, sandbox: Sandbox) -> None:
    listing = regular_listing(sandbox, min_price=1000)
    cheapest = sandbox.market.cheapest(listing.name, include_hold=False)[0]
    body = await api.get(
        "/v1/buy-one-p2p-name", name=listing.name, price=cheapest.price, **api.link
    )
    assert body["success"] is True
    assert body["item_id"] == str(cheapest.item_id)
    assert body["price"] == cheapest.price


async def test_system_busy_and_disabled_game(clock: VirtualClock) -> None:
    import httpx

    for trading, msg in (
        ({"busy_probability": 1.0}, "System busy"),
        ({"disabled_games": frozenset({"csgo"})}, "buy_csgo"),
    ):
        sandbox = _sandbox(clock, **trading)
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=sandbox.app), base_url="http://s"
        ) as http:
            api = Api(http, sandbox)
            listing = next(
                li
                for li in sandbox.market.listings.values()
                if li.game == "csgo" and not li.locked(clock.now())
            )
            body = await api.buy(listing)
        assert body == {"success": False, "msg": msg}
        assert sandbox.ground_truth()["purchases"] == []


async def _with(sandbox: Sandbox):  # type: ignore[no-untyped-def]
    import httpx

    return httpx.AsyncClient(transport=httpx.ASGITransport(app=sandbox.app), base_url="http://s")


async def test_a_trade_moves_0_1_2_4_5_on_market_time(clock: VirtualClock) -> None:
    sandbox = _sandbox(clock, trade_failure_rate=0.0, project_id_delay=0.0)
    async with await _with(sandbox) as http:
        api = Api(http, sandbox)
        assert (await api.buy(regular_listing(sandbox), project_id="p"))["success"]
        seen = []
        for _ in range(60):
            trades = (await api.get("/v1/check-many-project-id", id="p"))["trades"]
            status = trades[0]["status"]
            if not seen or seen[-1] != status:
                seen.append(status)
            if trades[0]["done"]:
                break
            clock.advance(15.0)
    assert seen == [0, 1, 2, 4, 5]
    assert trades[0]["trade_id"]
    assert trades[0]["reason"] is None
    assert sandbox.ground_truth()["refunds"] == []


async def test_a_failed_trade_goes_to_6_with_a_reason_and_is_refunded(clock: VirtualClock) -> None:
    sandbox = _sandbox(clock, trade_failure_rate=1.0, project_id_delay=0.0)
    async with await _with(sandbox) as http:
        api = Api(http, sandbox)
        listing = regular_listing(sandbox, min_price=1000)
        before = sandbox.default_account.balance
        assert (await api.buy(listing, project_id="f"))["success"]
        assert sandbox.default_account.balance == before - listing.price
        clock.advance(3600.0)
        trade = (await api.get("/v1/check-many-project-id", id="f"))["trades"][0]
    assert trade["status"] == 6
    assert trade["done"] is True
    assert trade["reason"]
    assert sandbox.default_account.balance == before
    assert sandbox.ground_truth()["refunds"][0]["amount"] == listing.price


@pytest.mark.parametrize(("fails", "final"), [(False, 5), (True, 6)])
async def test_a_hold_purchase_waits_at_stage_11_then_is_delivered_or_refunded(
    clock: VirtualClock, fails: bool, final: int
) -> None:
    sandbox = _sandbox(clock, hold_failure_rate=1.0 if fails else 0.0, project_id_delay=0.0)
    async with await _with(sandbox) as http:
        api = Api(http, sandbox)
        listing = locked_listing(sandbox)
        assert listing.unlock_at is not None
        assert listing.send_until is not None
        before = sandbox.default_account.balance
        body = await api.buy(listing, project_id="hold", allow_trade_locked=1)
        assert body["purchase_status"] == "reserved"
        trade = (await api.get("/v1/check-many-project-id", id="hold"))["trades"][0]
        assert (trade["stage"], trade["status"], trade["escrow_status"]) == (
            11,
            0,
            "awaiting_unlock",
        )
        assert trade["unlock_at"] == int(listing.unlock_at)
        clock.jump_to(listing.unlock_at - 1)
        trade = (await api.get("/v1/check-many-project-id", id="hold"))["trades"][0]
        assert trade["stage"] == 11, "still locked a second before unlock"
        assert sandbox.default_account.balance == before - listing.price
        clock.jump_to(listing.unlock_at + 600)
        trade = (await api.get("/v1/check-many-project-id", id="hold"))["trades"][0]
        assert trade["stage"] != 11
        assert trade["escrow_status"] in {"sending", "trade_sent"}
        clock.jump_to(listing.send_until + 1)
        trade = (await api.get("/v1/check-many-project-id", id="hold"))["trades"][0]
    assert trade["status"] == final
    refunded = sandbox.default_account.balance == before
    assert refunded is fails
    assert trade["escrow_status"] == ("failed" if fails else "completed")


async def test_check_many_project_id_leaves_unknown_ids_out_and_shows_after_a_delay(
    api: Api, sandbox: Sandbox, clock: VirtualClock
) -> None:
    assert (await api.buy(regular_listing(sandbox), project_id="known"))["success"]
    assert (await api.get("/v1/check-many-project-id", id=["known", "never"]))["trades"] == []
    clock.advance(sandbox.trading.config.project_id_delay)
    body = await api.get("/v1/check-many-project-id", id=["known", "never"])
    assert [t["project_id"] for t in body["trades"]] == ["known"]
    trade = body["trades"][0]
    assert isinstance(trade["send_until"], str)
    assert trade["send_until"].isdigit()
    too_many = await api.get("/v1/check-many-project-id", id=[str(n) for n in range(101)])
    assert too_many["success"] is False


def _bulk(api: Api, items: list[tuple[object, int, str]], **flags: object) -> dict[str, object]:
    return {
        "items": [{"item_id": str(i), "price": p, "project_id": pid} for i, p, pid in items],
        **api.link,
        **flags,
    }


async def test_bulk_purchase_without_all_buys_what_it_can(api: Api, sandbox: Sandbox) -> None:
    a, b = sorted(
        (li for li in sandbox.market.listings.values() if not li.locked(sandbox.now())),
        key=lambda li: li.item_id,
    )[:2]
    body = await api.post(
        "/v1/buy",
        _bulk(api, [(a.item_id, a.price, "a"), (b.item_id, b.price - 1, "b"), (1, 5, "c")]),
    )
    results = {r["project_id"]: r for r in body["items"]}
    assert body["success"] is True
    assert results["a"]["success"] is True
    assert results["a"]["price"] == a.price
    assert results["b"]["msg"] == "Price changed"
    assert results["c"]["msg"] == "Item sold"
    assert [p["project_id"] for p in sandbox.ground_truth()["purchases"]] == ["a"]


@pytest.mark.parametrize("second_ok", [True, False])
async def test_bulk_purchase_with_all_buys_everything_or_nothing(
    api: Api, sandbox: Sandbox, second_ok: bool
) -> None:
    a, b = sorted(
        (li for li in sandbox.market.listings.values() if not li.locked(sandbox.now())),
        key=lambda li: li.item_id,
    )[:2]
    second_price = b.price if second_ok else b.price - 1
    body = await api.post(
        "/v1/buy", _bulk(api, [(a.item_id, a.price, "a"), (b.item_id, second_price, "b")], all=True)
    )
    bought = [p["project_id"] for p in sandbox.ground_truth()["purchases"]]
    assert body["success"] is second_ok
    assert bought == (["a", "b"] if second_ok else [])
    assert all(r["success"] is second_ok for r in body["items"])


async def test_bulk_all_counts_the_balance_over_every_item(api: Api, sandbox: Sandbox) -> None:
    a, b = sorted(
        (li for li in sandbox.market.listings.values() if not li.locked(sandbox.now())),
        key=lambda li: li.item_id,
    )[:2]
    sandbox.default_account.balance = a.price + b.price - 1
    body = await api.post(
        "/v1/buy", _bulk(api, [(a.item_id, a.price, "a"), (b.item_id, b.price, "b")], all=True)
    )
    assert body["success"] is False
    assert sandbox.ground_truth()["purchases"] == []


async def test_buy_order_fills_now_and_when_a_matching_listing_appears(
    api: Api, sandbox: Sandbox, clock: VirtualClock
) -> None:
    name = "Revolution Case"
    cheapest = sandbox.market.cheapest(name, include_hold=False)
    ceiling = cheapest[1].price
    body = await api.post("/v1/create-buy-order", name=name, amount=5, price=ceiling, game="csgo")
    assert body["success"] is True
    assert body["filled"] == 2
    orders = (await api.get("/v1/buy-orders"))["offers"]
    assert [(o["name"], o["amount"], o["filled"]) for o in orders] == [(name, 5, 2)]
    again = await api.post("/v1/create-buy-order", name=name, amount=5, price=10**7, game="csgo")
    assert again["id"] == body["id"], "one order per name: the second call edits it"
    assert again["filled"] == 5
    assert (await api.get("/v1/buy-orders"))["offers"] == []
    busy = max(
        (
            n
            for n in sandbox.market.by_name
            if n != name and sandbox.market.items_by_name[n].game == "csgo"
        ),
        key=lambda n: len(sandbox.market.by_name[n]),
    )
    sandbox.default_account.balance = 10**9
    order = await api.post("/v1/create-buy-order", name=busy, amount=500, price=10**6, game="csgo")
    filled_now = order["filled"]
    clock.advance(6 * 3600.0)
    assert (await api.get("/v1/buy-orders"))["offers"][0]["filled"] > filled_now
    sources = {p["source"] for p in sandbox.ground_truth()["purchases"]}
    assert sources == {"buy-order"}


async def test_remove_buy_order(api: Api) -> None:
    order = await api.post(
        "/v1/create-buy-order", name="Kilowatt Case", amount=1, price=1, game="csgo"
    )
    bad = await api.get("/v1/remove-buy-order", id="abc")
    assert bad["success"] is False
    assert "numeric" in bad["msg"]
    body = await api.get("/v1/remove-buy-order", id=[str(order["id"]), "999999"])
    assert body == {"success": True, "msg": None, "removed": 1}


async def test_buy_order_actions_are_limited_to_60_per_minute(api: Api) -> None:
    for _ in range(60):
        assert (await api.get("/v1/remove-buy-order", id="1"))["success"] is True
    await api.post("/v1/create-buy-order", name="Kilowatt Case", amount=1, price=1, game="csgo")
    assert api.last is not None
    assert api.last.status_code == 429


async def test_history_lists_buys_and_money_movements(
    api: Api, sandbox: Sandbox, clock: VirtualClock
) -> None:
    first = regular_listing(sandbox)
    await api.buy(first, project_id="h1")
    clock.advance(5.0)
    await api.buy(regular_listing(sandbox), project_id="h2")
    body = await api.post("/v2/my-history", {"skip": 0, "sort": "DESC"})
    trades = body["data"]["trades"]
    assert [t["project_id"] for t in trades] == ["h2", "h1"]
    assert trades[1]["price"] == first.price
    assert trades[1]["action"] == "buy"
    assert [t["type"] for t in body["data"]["transactions"]] == ["purchase", "purchase"]
    asc = await api.post("/v1/my-history", {"sort": "ASC", "skip": 1})
    assert [t["project_id"] for t in asc["data"]["trades"]] == ["h2"]


async def test_force_check_once_per_hour_per_trade(
    api: Api, sandbox: Sandbox, clock: VirtualClock
) -> None:
    body = await api.buy(regular_listing(sandbox))
    early = await api.post("/v1/force-check-trade", {"id": body["id"]})
    assert early["success"] is False
    assert "hour" in early["msg"]
    clock.advance(2 * 3600.0)
    assert (await api.post("/v1/force-check-trade", {"id": body["id"]}))["success"] is True
    assert (await api.post("/v1/force-check-trade", {"id": body["id"]}))["success"] is False
    assert (await api.post("/v1/force-check-trade", {"id": 1}))["msg"] == "Trade not found"


def test_trading_config_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        TradingConfig().busy_probability = 1.0  # type: ignore[misc]


async def test_concurrent_purchases_of_one_listing_sell_it_once(api: Api, sandbox: Sandbox) -> None:
    import anyio

    listing = regular_listing(sandbox)
    answers: list[dict[str, object]] = []

    async def buy(n: int) -> None:
        answers.append(await api.buy(listing, project_id=f"race-{n}"))

    async with anyio.create_task_group() as tg:
        for n in range(8):
            tg.start_soon(buy, n)
    assert sum(1 for a in answers if a["success"]) == 1
    assert len(sandbox.ground_truth()["purchases"]) == 1
    assert sandbox.default_account.balance == sandbox.config.balance - listing.price


async def test_same_seed_same_requests_same_answers(clock: VirtualClock) -> None:
    import httpx

    async def session() -> list[object]:
        own_clock = VirtualClock(clock.now())
        sandbox = _sandbox(own_clock)
        transport = httpx.ASGITransport(app=sandbox.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://s") as http:
            api = Api(http, sandbox)
            api.key = "fixed"  # the default key is random; use a second, named account
            sandbox.add_account("fixed", balance=10**7)
            seen: list[object] = []
            for _ in range(5):
                own_clock.advance(900.0)
                page = await api.get("/v2/get-items-list", limit=20, order_by="discount")
                seen.append(page)
                cheapest = page["items"][-1]
                seen.append(
                    await api.get(
                        "/v1/buy-one-p2p", item_id=cheapest["item_id"], price=cheapest["price"],
                        partner="123", token="abcdefgh", project_id="d",
                    )
                )  # fmt: skip
            own_clock.advance(3600.0)
            seen.append(await api.get("/v1/check-many-project-id", id="d"))
            return seen

    first = await session()
    assert first == await session()
    bought = [a for a in first if isinstance(a, dict) and a.get("success") and "id" in a]
    assert bought, "the session bought something, so trades were compared too"
    assert first[-1]["trades"]  # type: ignore[index]
