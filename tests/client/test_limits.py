"""Documented limits are checked before sending: a clear InvalidRequest and no request."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from client_support import Recorder

from engine import InvalidRequest
from engine.client import BulkItem, MarketClient

Call = Callable[[MarketClient], Awaitable[Any]]
T = "AbCdEfGh"
PID = "76561198000000001"


def buy(**kw: Any) -> Call:
    args: dict[str, Any] = {
        "item_id": "1",
        "price": 100,
        "partner": "1",
        "token": T,
        "project_id": "p",
    }
    args.update(kw)
    return lambda c: c.buy_one_p2p(**args)


def bulk(items: Any, **kw: Any) -> Call:
    args: dict[str, Any] = {"partner": "1", "token": T}
    args.update(kw)
    return lambda c: c.buy(items, **args)


BAD: list[tuple[str, Call, str]] = [
    ("51 names", lambda c: c.search_items_by_name([f"n{i}" for i in range(51)]), "at most 50"),
    ("no names", lambda c: c.search_items_by_name([]), "at least one"),
    ("name as str", lambda c: c.search_items_by_name("AK"), "not a single string"),
    ("empty name", lambda c: c.search_items_by_name(["A", " "]), "name[1]"),
    ("v1 51 names", lambda c: c.search_items_by_name_v1(["n"] * 51), "at most 50"),
    ("bad game", lambda c: c.search_items_by_name(["A"], game="cs2"), "game must be one of"),
    ("bad minified", lambda c: c.search_items_by_name(["A"], minified=2), "minified"),
    ("limit 0", lambda c: c.get_items_list(limit=0), "limit must be at least 1"),
    ("limit 101", lambda c: c.get_items_list(limit=101), "limit must be at most 100"),
    ("skip 5001", lambda c: c.get_items_list(skip=5001), "skip must be at most 5000"),
    ("skip -1", lambda c: c.get_items_list_v1(skip=-1), "skip must be at least 0"),
    ("skip float", lambda c: c.get_items_list(skip=1.0), "skip must be an int"),
    ("bad order", lambda c: c.get_items_list(order="ASC"), "order must be one of"),
    ("bad order_by", lambda c: c.get_items_list(order_by="name"), "order_by must be one of"),
    ("bad exterior", lambda c: c.get_items_list(exterior="fn"), "exterior must be one of"),
    ("bad sort", lambda c: c.get_items_list(sort="asc"), "sort must be one of"),
    ("sort and order", lambda c: c.get_items_list(sort="ASC", order="asc"), "alias"),
    ("float price", lambda c: c.get_items_list(max_price=12.5), "must be an int"),
    ("bool price", lambda c: c.get_items_list(min_price=True), "must be an int"),
    ("negative price", lambda c: c.get_items_list(min_price=-1), "negative"),
    ("min above max", lambda c: c.get_items_list(min_price=5, max_price=4), "above"),
    ("cursor and pair", lambda c: c.get_items_list(cursor="x", cursor_price=1), "not both"),
    ("half pair", lambda c: c.get_items_list(cursor_item_id="1"), "go together"),
    ("skip with cursor", lambda c: c.get_items_list(cursor="x", skip=10), "skip is ignored"),
    ("platform items game", lambda c: c.get_platform_items(game=None), "game"),
    ("buy float price", buy(price=50.0), "price must be an int"),
    ("buy bool price", buy(price=False), "price must be an int"),
    ("buy negative price", buy(price=-5), "negative"),
    ("buy no item", buy(item_id=""), "item_id must not be empty"),
    ("project_id 51", buy(project_id="p" * 51), "51 characters long; at most 50"),
    ("project_id empty", buy(project_id=""), "project_id"),
    ("token 7", buy(token="AbCdEfG"), "token"),
    ("token 9", buy(token="AbCdEfGhI"), "token"),
    ("partner text", buy(partner="abc"), "partner"),
    ("allow_trade_locked int", buy(allow_trade_locked=1), "allow_trade_locked"),
    (
        "by name long project_id",
        lambda c: c.buy_one_p2p_name(name="A", price=1, partner="1", token=T, project_id="x" * 51),
        "at most 50",
    ),
    ("bulk empty", bulk([]), "at least one"),
    ("bulk float price", bulk([BulkItem("1", 1.5, "p")]), "items[0].price"),  # type: ignore[arg-type]
    ("bulk dup item", bulk([BulkItem("1", 1, "a"), BulkItem("1", 1, "b")]), "twice"),
    ("bulk dup project", bulk([BulkItem("1", 1, "a"), BulkItem("2", 1, "a")]), "twice"),
    ("bulk long project", bulk([BulkItem("1", 1, "a" * 51)]), "at most 50"),
    ("bulk not item", bulk([("1", 1, "a")]), "must be a BulkItem"),
    ("bulk bad token", bulk([BulkItem("1", 1, "a")], token="short"), "token"),
    ("bulk all int", bulk([BulkItem("1", 1, "a")], all_or_none=1), "all_or_none"),
    ("101 project ids", lambda c: c.check_many_project_id([str(i) for i in range(101)]), "100"),
    ("long project id", lambda c: c.check_many_project_id(["x" * 51]), "at most 50"),
    ("no project ids", lambda c: c.check_many_project_id([]), "at least one"),
    ("history skip", lambda c: c.my_history(skip=-1), "skip"),
    ("history sort", lambda c: c.my_history(sort="desc"), "sort"),
    ("force check id", lambda c: c.force_check_trade(0), "trade_id"),
    (
        "buy order amount",
        lambda c: c.create_buy_order(name="A", amount=0, price=1, game="csgo"),
        "amount",
    ),
    (
        "buy order price",
        lambda c: c.create_buy_order(name="A", amount=1, price=1.0, game="csgo"),
        "price",
    ),
    (
        "buy order game",
        lambda c: c.create_buy_order(name="A", amount=1, price=1, game="CSGO"),
        "game",
    ),
    ("remove no ids", lambda c: c.remove_buy_order([]), "at least one"),
    ("platform_api empty", lambda c: c.set_platform_api(""), "platform_api"),
    ("ready empty", lambda c: c.ready_to_transfer_p2p(" "), "platform_api"),
    ("token empty", lambda c: c.set_platform_token(""), "token"),
    ("update empty", lambda c: c.update_account({}), "fields"),
    (
        "platform_id 16",
        lambda c: c.merchant_platform_inventory(
            merchant="m", game="csgo", platform_id=PID[:-1], trade_url_token=T
        ),
        "17 digits",
    ),
    (
        "platform_id letters",
        lambda c: c.merchant_platform_inventory(
            merchant="m", game="csgo", platform_id="7656119800000000x", trade_url_token=T
        ),
        "17 digits",
    ),
    (
        "trade_url_token 7",
        lambda c: c.merchant_platform_inventory(
            merchant="m", game="csgo", platform_id=PID, trade_url_token="AbCdEfG"
        ),
        "trade_url_token",
    ),
    (
        "deposits bad date",
        lambda c: c.merchant_deposits(merchant="m", start="2026-13-01", end="2026-01-02"),
        "start must be a date",
    ),
    (
        "deposits platform_id",
        lambda c: c.merchant_deposits(
            merchant="m", start="2026-01-01", end="2026-01-02", platform_id="1"
        ),
        "17 digits",
    ),
    ("webhook neither", lambda c: c.merchant_webhook(merchant="m"), "exactly one"),
    (
        "webhook both",
        lambda c: c.merchant_webhook(merchant="m", deposit_id="d", transaction_id=1),
        "exactly one",
    ),
    (
        "webhook long deposit_id",
        lambda c: c.merchant_webhook(merchant="m", deposit_id="d" * 51),
        "at most 50",
    ),
    (
        "resend both",
        lambda c: c.merchant_webhook_resend(merchant="m", deposit_id="d", transaction_id=1),
        "exactly one",
    ),
    (
        "resend long deposit_id",
        lambda c: c.merchant_webhook_resend(merchant="m", deposit_id="d" * 51),
        "at most 50",
    ),
    ("tron empty", lambda c: c.rent_tron_energy(""), "address"),
]


@pytest.mark.parametrize(("call", "says"), [(c, s) for _, c, s in BAD], ids=[i for i, _, _ in BAD])
async def test_limit_checked_before_sending(
    call: Call, says: str, client: MarketClient, recorder: Recorder
) -> None:
    with pytest.raises(InvalidRequest) as info:
        await call(client)
    assert recorder.requests == []
    assert says in str(info.value)
    assert "nothing was sent" in str(info.value)


GOOD: list[tuple[str, Call]] = [
    ("50 names", lambda c: c.search_items_by_name([f"n{i}" for i in range(50)])),
    ("limit 1", lambda c: c.get_items_list(limit=1)),
    ("limit 100 skip 5000", lambda c: c.get_items_list(limit=100, skip=5000)),
    ("project_id 50", buy(project_id="p" * 50)),
    ("price 0", buy(price=0)),
    ("100 project ids", lambda c: c.check_many_project_id([str(i) for i in range(100)])),
    (
        "deposit_id 50",
        lambda c: c.merchant_webhook(merchant="m", deposit_id="d" * 50),
    ),
]


@pytest.mark.parametrize("call", [c for _, c in GOOD], ids=[i for i, _ in GOOD])
async def test_limit_edges_are_sent(call: Call, client: MarketClient, recorder: Recorder) -> None:
    recorder.json({"success": True, "status": "success", "id": 1})
    await call(client)
    assert len(recorder.requests) == 1
