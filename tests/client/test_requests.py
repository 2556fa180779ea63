"""Every client method: the request it sends and how its answer is parsed."""

from __future__ import annotations

import datetime as dt
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from client_support import KEY, Recorder

from engine.client import BulkItem, MarketClient, Secret

TOKEN = "AbCdEfGh"
PARTNER = "123456"
PLATFORM_ID = "76561198000000001"


@dataclass
class Case:
    id: str
    call: Callable[[MarketClient], Awaitable[Any]]
    method: str
    path: str
    params: list[tuple[str, str]] = field(default_factory=list)
    body: Any = None
    answer: Any = field(default_factory=lambda: {"success": True})
    check: Callable[[Any], bool] = lambda result: True
    auth: bool = True
    secret_params: dict[str, str] = field(default_factory=dict)


CASES = [
    Case(
        "get_user",
        lambda c: c.get_user(),
        "GET",
        "/v1/user",
        answer={"success": True, "user": {"wallet": "125000", "can_p2p": True, "x": 1}},
        check=lambda r: r.user.wallet == 125000 and r.user.can_p2p is True,
    ),
    Case(
        "update_account",
        lambda c: c.update_account({"tradelink": "https://t/x", "token": Secret("tok-1")}),
        "POST",
        "/v1/update-account",
        body={"tradelink": "https://t/x", "token": "tok-1"},
        check=lambda r: r.success,
    ),
    Case(
        "create_user",
        lambda c: c.create_user("YmFzZTY0"),
        "POST",
        "/v1/user",
        body={"token": "YmFzZTY0"},
        answer={"success": True, "msg": "", "data": {"api": "new-key", "isNew": True}, "exp": 5},
        check=lambda r: r.data.api == "new-key" and r.data.isNew and r.exp == 5,
    ),
    Case(
        "set_platform_token",
        lambda c: c.set_platform_token("YmFzZTY0"),
        "POST",
        "/v1/user/platform-token",
        body={"token": "YmFzZTY0"},
        answer={"success": True, "msg": "ok", "exp": "1767225600"},
        check=lambda r: r.exp == 1767225600,
    ),
    Case(
        "set_platform_api",
        lambda c: c.set_platform_api("PLATFORM-KEY-9"),
        "GET",
        "/v1/set-my-platformapi",
        secret_params={"platform_api": "PLATFORM-KEY-9"},
        check=lambda r: r.success,
    ),
    Case(
        "check_tradelink",
        lambda c: c.check_tradelink("https://t/?partner=1&token=AbCdEfGh"),
        "POST",
        "/v1/check-tradelink",
        body={"tradelink": "https://t/?partner=1&token=AbCdEfGh"},
        answer={"success": True, "platformid64": "76561198000000001", "platformid32": 1},
        check=lambda r: r.platformid64 == 76561198000000001,
    ),
    Case(
        "search_v2",
        lambda c: c.search_items_by_name(
            ["A", "B"], game="csgo", minified=False, delivery_details=True, include_hold=True
        ),
        "GET",
        "/v2/search-items-by-name",
        params=[
            ("game", "csgo"),
            ("name", "A"),
            ("name", "B"),
            ("minified", "0"),
            ("delivery_details", "1"),
            ("include_hold", "1"),
        ],
        answer={"success": True, "items": {"A": [{"item_id": 1, "name": "A", "price": 5}]}},
        check=lambda r: r.items["A"][0].item_id == "1",
    ),
    Case(
        "search_v1",
        lambda c: c.search_items_by_name_v1(["A"], game="rust"),
        "GET",
        "/v1/search-items-by-name",
        params=[("game", "rust"), ("names", "A")],
        answer={"success": True, "items": [{"item_id": 7, "name": "A", "price": 10}]},
        check=lambda r: [x.item_id for x in r.items["A"]] == ["7"],
    ),
    Case(
        "items_list_v2",
        lambda c: c.get_items_list(
            game="csgo",
            search="ak",
            brand="rifle",
            order_by="profit",
            exterior="FN",
            min_price=0,
            max_price=5000,
            limit=100,
            cursor="abc",
            sort="ASC",
            include_hold=True,
        ),
        "GET",
        "/v2/get-items-list",
        params=[
            ("game", "csgo"),
            ("search", "ak"),
            ("brand", "rifle"),
            ("order_by", "profit"),
            ("exterior", "FN"),
            ("min_price", "0"),
            ("max_price", "5000"),
            ("limit", "100"),
            ("cursor", "abc"),
            ("sort", "ASC"),
            ("include_hold", "1"),
        ],
        answer={
            "success": True,
            "items": [{"item_id": "9", "name": "X", "price": "000000027867"}],
            "count": 1,
            "has_more": True,
            "next_cursor": "next",
        },
        check=lambda r: r.items[0].price == 27867 and r.next_cursor == "next" and r.has_more,
    ),
    Case(
        "items_list_v2_cursor_pair",
        lambda c: c.get_items_list(cursor_price=1000, cursor_item_id="77", order="desc"),
        "GET",
        "/v2/get-items-list",
        params=[
            ("order", "desc"),
            ("cursor_price", "1000"),
            ("cursor_item_id", "77"),
        ],
        answer={"success": True, "items": [], "count": 0, "has_more": False},
        check=lambda r: r.next_cursor is None and not r.has_more,
    ),
    Case(
        "items_list_v1",
        lambda c: c.get_items_list_v1(game="dota2", skip=5000, order="asc"),
        "GET",
        "/v1/get-items-list",
        params=[("game", "dota2"), ("order", "asc"), ("skip", "5000")],
        answer={"success": True, "items": [], "count": 0, "has_more": False},
    ),
    Case(
        "list_items_platform",
        lambda c: c.list_items_platform(game="tf2"),
        "GET",
        "/v1/list-items-platform",
        params=[("game", "tf2")],
        answer={"success": True, "items": [{"item_id": 3, "price": "100", "date": "17"}]},
        check=lambda r: r.items[0].item_id == "3" and r.items[0].date == 17,
    ),
    Case(
        "get_platform_items",
        lambda c: c.get_platform_items(game="csgo"),
        "GET",
        "/v1/get-platform-items",
        params=[("game", "csgo")],
        answer={"success": True, "items": [{"name": "N", "average": 10, "ru_name": ""}]},
        check=lambda r: r.items[0].average == 10 and r.items[0].ru_name is None,
    ),
    Case(
        "snapshot_json",
        lambda c: c.snapshot(game="csgo", compact=True),
        "GET",
        "/v1/prices/snapshot",
        params=[("game", "csgo"), ("compact", "1")],
        answer={
            "success": True,
            "timestamp": 1767225600,
            "items": [{"item_id": "1", "price": "000000027867", "name": "N"}],
        },
        check=lambda r: r.items[0].price == 27867 and r.timestamp == 1767225600,
        auth=False,
    ),
    Case(
        "buy_one_p2p",
        lambda c: c.buy_one_p2p(
            item_id="555",
            price=5000,
            partner=PARTNER,
            token=TOKEN,
            project_id="p-1",
            allow_trade_locked=True,
        ),
        "GET",
        "/v1/buy-one-p2p",
        params=[
            ("item_id", "555"),
            ("price", "5000"),
            ("partner", PARTNER),
            ("project_id", "p-1"),
            ("allow_trade_locked", "1"),
        ],
        secret_params={"token": TOKEN},
        answer={
            "success": True,
            "id": 30717149,
            "price": 4900,
            "purchase_status": "reserved",
            "unlock_at": "2026-01-02T00:00:00Z",
            "send_until": "2026-01-09T00:00:00Z",
        },
        check=lambda r: (
            (r.id, r.price, r.purchase_status, r.unlock_at)
            == (30717149, 4900, "reserved", 1767312000)
        ),
    ),
    Case(
        "buy_one_p2p_regular",
        lambda c: c.buy_one_p2p(
            item_id="555", price=0, partner=PARTNER, token=TOKEN, project_id="p-2"
        ),
        "GET",
        "/v1/buy-one-p2p",
        params=[
            ("item_id", "555"),
            ("price", "0"),
            ("partner", PARTNER),
            ("project_id", "p-2"),
        ],
        secret_params={"token": TOKEN},
        answer={"success": True, "id": 1, "price": 5000},
        check=lambda r: r.purchase_status is None and r.price == 5000,
    ),
    Case(
        "buy_one_p2p_name",
        lambda c: c.buy_one_p2p_name(
            name="AK", price=100, partner=PARTNER, token=TOKEN, project_id="p-3", game="csgo"
        ),
        "GET",
        "/v1/buy-one-p2p-name",
        params=[
            ("name", "AK"),
            ("price", "100"),
            ("partner", PARTNER),
            ("project_id", "p-3"),
            ("game", "csgo"),
        ],
        secret_params={"token": TOKEN},
        answer={"success": True, "id": 2, "price": "100"},
        check=lambda r: r.price == 100,
    ),
    Case(
        "bulk_buy",
        lambda c: c.buy(
            [BulkItem("1", 100, "p-a"), BulkItem("2", 200, "p-b")],
            partner=PARTNER,
            token=TOKEN,
            all_or_none=True,
        ),
        "POST",
        "/v1/buy",
        body={
            "items": [
                {"item_id": "1", "price": 100, "project_id": "p-a"},
                {"item_id": "2", "price": 200, "project_id": "p-b"},
            ],
            "token": TOKEN,
            "partner": PARTNER,
            "all": True,
            "allow_trade_locked": False,
        },
        answer={
            "success": True,
            "items": [
                {"item_id": "1", "success": True, "id": 1, "price": 90, "project_id": "p-a"},
                {"item_id": 2, "success": True, "id": 2, "price": "200"},
            ],
        },
        check=lambda r: [x.charged for x in r.bought] == [90, 200],
    ),
    Case(
        "create_buy_order",
        lambda c: c.create_buy_order(name="AK", amount=2, price=1500, game="csgo"),
        "POST",
        "/v1/create-buy-order",
        params=[("name", "AK"), ("amount", "2"), ("price", "1500"), ("game", "csgo")],
        body={},
        answer={"success": True, "msg": "Placed order", "filled": 2, "id": 2007},
        check=lambda r: (r.filled, r.id) == (2, 2007),
    ),
    Case(
        "remove_buy_order",
        lambda c: c.remove_buy_order(["1", 2]),
        "GET",
        "/v1/remove-buy-order",
        params=[("id", "1"), ("id", "2")],
        answer={"success": True, "removed": 2},
        check=lambda r: r.removed == 2,
    ),
    Case(
        "buy_orders",
        lambda c: c.buy_orders(),
        "GET",
        "/v1/buy-orders",
        answer={
            "success": True,
            "offers": [{"id": 1, "name": "AK", "price": "990000", "amount": 3, "filled": 1}],
        },
        check=lambda r: r.offers[0].price == 990000,
    ),
    Case(
        "remove_all",
        lambda c: c.remove_all(game="rust"),
        "GET",
        "/v1/remove-all",
        params=[("game", "rust")],
        answer={"success": True, "count": 4},
        check=lambda r: r.count == 4,
    ),
    Case(
        "check_many_project_id",
        lambda c: c.check_many_project_id(["p-1", "p-2"]),
        "GET",
        "/v1/check-many-project-id",
        params=[("id", "p-1"), ("id", "p-2")],
        answer={
            "success": True,
            "msg": None,
            "trades": [
                {
                    "id": 1,
                    "project_id": "p-1",
                    "status": 4,
                    "send_until": "1767225600",
                    "last_updated": 1767225500,
                    "escrow_status": None,
                    "penalties": [],
                }
            ],
        },
        check=lambda r: r.trades[0].send_until == 1767225600 and r.trades[0].status == 4,
    ),
    Case(
        "my_history",
        lambda c: c.my_history(skip=100, start=dt.date(2026, 1, 1), end="2026-01-31"),
        "POST",
        "/v2/my-history",
        body={"skip": 100, "start": "2026-01-01", "end": "2026-01-31", "sort": "DESC"},
        answer={
            "success": True,
            "data": {"trades": [{"id": 5, "price": "900", "action": "buy"}], "transactions": []},
        },
        check=lambda r: r.data.trades[0].price == 900,
    ),
    Case(
        "force_check_trade",
        lambda c: c.force_check_trade(42),
        "POST",
        "/v1/force-check-trade",
        body={"id": 42},
    ),
    Case(
        "ready_to_transfer",
        lambda c: c.ready_to_transfer_p2p("PLATFORM-KEY-9"),
        "GET",
        "/v1/ready-to-transfer-p2p",
        secret_params={"platform_api": "PLATFORM-KEY-9"},
        auth=False,
        answer={
            "success": True,
            "trades": [{"id": 1, "unlock_at": None, "send_until": "1767225600", "stage": 11}],
        },
        check=lambda r: r.trades[0].stage == 11 and r.trades[0].send_until == 1767225600,
    ),
    Case(
        "merchant_inventory",
        lambda c: c.merchant_platform_inventory(
            merchant="m1", game="csgo", platform_id=PLATFORM_ID, trade_url_token=TOKEN
        ),
        "POST",
        "/v2/merchant/platform-inventory",
        body={
            "merchant": "m1",
            "game": "csgo",
            "platform_id": PLATFORM_ID,
            "trade_url_token": TOKEN,
        },
        answer={
            "status": "success",
            "items": [{"item_id": "1", "icon_url": "icons/a.png", "limit": 1, "instant_price": 5}],
        },
        check=lambda r: r.items[0].icon_url == "https://img.market.test/icons/a.png",
    ),
    Case(
        "merchant_deposits",
        lambda c: c.merchant_deposits(
            merchant="m1",
            start=dt.date(2026, 1, 1),
            end="2026-01-02",
            platform_id=PLATFORM_ID,
            start_from=7,
        ),
        "GET",
        "/v2/merchant/deposits",
        params=[
            ("merchant", "m1"),
            ("platform_id", PLATFORM_ID),
            ("start", "2026-01-01"),
            ("end", "2026-01-02"),
            ("start_from", "7"),
        ],
        answer={"status": "ok", "deposits": [{"transaction_id": "12"}], "start_from": 12},
        check=lambda r: r.deposits[0].transaction_id == 12,
    ),
    Case(
        "merchant_webhooks",
        lambda c: c.merchant_webhooks(merchant="m1", status="pending", start_from=3),
        "GET",
        "/v2/merchant/webhooks",
        params=[("merchant", "m1"), ("status", "pending"), ("start_from", "3")],
        answer={"status": "success", "data": [{"transaction_id": "5", "attempts": []}]},
        check=lambda r: r.data[0].transaction_id == 5,
    ),
    Case(
        "merchant_webhook_by_deposit",
        lambda c: c.merchant_webhook(merchant="m1", deposit_id="d-1"),
        "GET",
        "/v2/merchant/webhook",
        params=[("merchant", "m1"), ("deposit_id", "d-1")],
        answer={"status": "success", "data": {"transaction_id": 5, "status": "completed"}},
        check=lambda r: r.data.status == "completed",
    ),
    Case(
        "merchant_webhook_by_transaction",
        lambda c: c.merchant_webhook(merchant="m1", transaction_id=5),
        "GET",
        "/v2/merchant/webhook",
        params=[("merchant", "m1"), ("transaction_id", "5")],
        answer={"status": "success", "data": None},
    ),
    Case(
        "merchant_resend",
        lambda c: c.merchant_webhook_resend(merchant="m1", transaction_id=5),
        "POST",
        "/v2/merchant/webhook/resend",
        body={"merchant": "m1", "transaction_id": 5},
        answer={"status": "success"},
    ),
    Case(
        "merchant_resend_by_deposit",
        lambda c: c.merchant_webhook_resend(merchant="m1", deposit_id="d-1"),
        "POST",
        "/v2/merchant/webhook/resend",
        body={"merchant": "m1", "deposit_id": "d-1"},
        answer={"status": "success"},
    ),
    Case(
        "rent_tron_energy",
        lambda c: c.rent_tron_energy("TXYZ"),
        "POST",
        "/v1/payment/tron-energy/rent",
        body={"address": "TXYZ"},
        answer={"success": True, "address": "TXYZ", "total_cost": 123.5},
        check=lambda r: r.total_cost == 123.5,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
async def test_request_and_answer(case: Case, client: MarketClient, recorder: Recorder) -> None:
    recorder.json(case.answer)
    result = await case.call(client)
    assert len(recorder.requests) == 1
    sent = recorder.last
    assert (sent.method, sent.url.path) == (case.method, case.path)
    expected_params = list(case.params) + list(case.secret_params.items())
    assert recorder.params() == expected_params
    assert sent.url.params.get_list("api") == ([KEY] if case.auth else [])
    assert recorder.body() == case.body
    if case.method == "POST":
        assert sent.headers["content-type"] == "application/json"
    assert case.check(result)


async def test_every_public_method_is_covered() -> None:
    public = {
        name
        for name in dir(MarketClient)
        if not name.startswith("_") and callable(getattr(MarketClient, name))
    }
    covered = {
        "get_user",
        "update_account",
        "create_user",
        "set_platform_token",
        "set_platform_api",
        "check_tradelink",
        "search_items_by_name",
        "search_items_by_name_v1",
        "get_items_list",
        "get_items_list_v1",
        "list_items_platform",
        "get_platform_items",
        "snapshot",
        "snapshot_csv",  # test_snapshot_csv.py
        "prices",  # test_price_list.py
        "buy_one_p2p",
        "buy_one_p2p_name",
        "buy",
        "create_buy_order",
        "remove_buy_order",
        "buy_orders",
        "remove_all",
        "check_many_project_id",
        "my_history",
        "force_check_trade",
        "ready_to_transfer_p2p",
        "merchant_platform_inventory",
        "merchant_deposits",
        "merchant_webhooks",
        "merchant_webhook",
        "merchant_webhook_resend",
        "rent_tron_energy",
        "aclose",
    }
    assert public == covered


async def test_a_cookie_the_service_sets_is_sent_back(
    client: MarketClient, recorder: Recorder
) -> None:
    # answers without Set-Cookie skip httpx's cookie machinery: one that sets one is kept
    recorder.json({"success": True, "user": {"wallet": "1"}})
    await client.get_user()
    assert "cookie" not in recorder.last.headers
    recorder.json(
        {"success": True, "user": {"wallet": "1"}}, headers={"set-cookie": "session=abc; Path=/"}
    )
    await client.get_user()
    await client.get_user()
    assert recorder.last.headers["cookie"] == "session=abc"


def test_the_cookie_jar_skips_answers_without_set_cookie() -> None:
    # the client replaces httpx's private jar attribute; an httpx that renamed it would
    # silently go back to reading every answer through urllib's cookie machinery
    from engine.client._core import _SetCookiesOnly

    client = MarketClient("k", base_url="http://127.0.0.1:9")
    assert type(client._http.cookies) is _SetCookiesOnly
