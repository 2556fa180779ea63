"""Wire models: every variant wire-notes.md records parses into one typed, normalised form,
and bad values are refused with the field named.

Responses are parsed from JSON bytes with ``model_validate_json``, as the client does.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from engine.models import (
    BulkBuyResponse,
    BuyResult,
    CataloguePage,
    DepositsPage,
    HistoryPage,
    InventoryResponse,
    Listing,
    ProjectTradesResponse,
    SearchResponse,
    Snapshot,
    SnapshotRow,
    UserCreated,
    UserResponse,
    WebhookPage,
    WebhookResponse,
    parse_epoch,
)

BASE = "https://img.market.invalid/econ"
CONTEXT = {"image_base_url": BASE}
JAN_1 = 1_767_225_600  # 2026-01-01T00:00:00Z
JAN_8 = JAN_1 + 7 * 86_400


def wire(model: type[BaseModel], payload: Any, context: dict[str, Any] | None = None) -> Any:
    return model.model_validate_json(json.dumps(payload).encode(), context=context)


def listing(**fields: Any) -> Listing:
    payload = {"item_id": "1", "name": "AK-47 | Redline (Field-Tested)", "price": 1000}
    payload.update(fields)
    parsed: Listing = wire(Listing, payload, CONTEXT)
    return parsed


def rejection(model: type[BaseModel], payload: Any) -> dict[str, Any]:
    """The first error of a refused payload, as pydantic reports it."""
    with pytest.raises(ValidationError) as caught:
        wire(model, payload, CONTEXT)
    error: dict[str, Any] = caught.value.errors()[0]
    return error


# -- instants ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "epoch"),
    [
        (JAN_1, JAN_1),
        (float(JAN_1) + 0.75, JAN_1),
        (str(JAN_1), JAN_1),
        (f" {JAN_1} ", JAN_1),
        (f"{JAN_1}.9", JAN_1),
        ("2026-01-01T00:00:00Z", JAN_1),
        ("2026-01-01T00:00:00z", JAN_1),
        ("2026-01-01T00:00:00.250Z", JAN_1),
        ("2026-01-01T02:00:00+02:00", JAN_1),
        ("2025-12-31T19:00:00-05:00", JAN_1),
        ("2026-01-01T00:00:00+00:00", JAN_1),
        (None, None),
        ("", None),
    ],
)
def test_an_instant_in_any_wire_form_is_epoch_seconds(value: Any, epoch: int | None) -> None:
    assert parse_epoch(value) == epoch
    assert listing(unlock_at=value).unlock_at == epoch


@pytest.mark.parametrize(
    "value",
    [
        "tomorrow",
        "2026-01-01T00:00:00",  # no offset: which zone?
        "2026-13-01T00:00:00Z",
        "-1",
        "9" * 400,  # past a float's range
        True,
        [JAN_1],
        {"t": JAN_1},
    ],
)
@pytest.mark.parametrize("field", ["unlock_at", "send_until"])
def test_an_invalid_instant_is_refused_naming_the_field(value: Any, field: str) -> None:
    error = rejection(Listing, {"item_id": "1", "name": "n", "price": 1, field: value})
    assert error["loc"] == (field,)
    assert "time" in error["msg"]
    assert "{" not in error["msg"]  # the message template was filled in


def test_an_instant_too_large_for_a_float_is_refused_not_crashed() -> None:
    raw = b'{"item_id": "1", "name": "n", "price": 1, "unlock_at": 1e999}'
    with pytest.raises(ValidationError) as caught:
        Listing.model_validate_json(raw)
    assert caught.value.errors()[0]["loc"] == ("unlock_at",)


def test_an_invalid_instant_deep_in_a_search_names_the_whole_path() -> None:
    payload = {
        "success": True,
        "items": {"AK-47 | Redline (Field-Tested)": [{"item_id": 7, "name": "n", "price": 1}]},
    }
    payload["items"]["AK-47 | Redline (Field-Tested)"].append(
        {"item_id": 8, "name": "n", "price": 2, "unlock_at": "next week"}
    )
    error = rejection(SearchResponse, payload)
    assert error["loc"] == ("items", "AK-47 | Redline (Field-Tested)", 1, "unlock_at")
    assert "next week" in error["msg"]


# -- listings ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "attribute", "expected"),
    [
        ({"item_id": 123456789012}, "item_id", "123456789012"),
        ({"item_id": "123456789012"}, "item_id", "123456789012"),
        ({"phase": ""}, "phase", None),
        ({"phase": "Ruby"}, "phase", "Ruby"),
        ({}, "phase", None),
        ({"price": 5000}, "price", 5000),
        ({"price": "990000"}, "price", 990_000),
        ({"price": "000000027867"}, "price", 27_867),
        ({"price": 5000.0}, "price", 5000),
        ({"platform_price": 12_000}, "platform_price", 12_000),
        ({"platform_price_number": 12_000}, "platform_price", 12_000),
        ({"platform_price_number": "12000"}, "platform_price", 12_000),
        ({}, "platform_price", None),
        ({"float": 0.0712}, "float_value", 0.0712),
        ({"unlock_at": "2026-01-08T00:00:00Z"}, "trade_locked", True),
        ({}, "trade_locked", False),
        ({"image": "econ/abc.png"}, "image", f"{BASE}/econ/abc.png"),
        ({"image": "/econ/abc.png"}, "image", f"{BASE}/econ/abc.png"),
        ({"image": "https://cdn.example/abc.png"}, "image", "https://cdn.example/abc.png"),
        ({"image": "http://cdn.example/abc.png"}, "image", "http://cdn.example/abc.png"),
        ({"image": ""}, "image", None),
        ({}, "image", None),
    ],
)
def test_a_listing_normalises_every_wire_variant(
    fields: dict[str, Any], attribute: str, expected: Any
) -> None:
    assert getattr(listing(**fields), attribute) == expected


@pytest.mark.parametrize(
    "price", ["12 USD", None, "", "NaN", "-1.5", [5000], {"usd": 5}, True, False, -5, "-5"]
)
def test_a_price_that_is_not_a_number_is_refused_naming_the_field(price: Any) -> None:
    error = rejection(Listing, {"item_id": "1", "name": "n", "price": price})
    assert error["loc"] == ("price",)
    assert "price in USD x 1000" in error["msg"]


@pytest.mark.parametrize("missing", ["item_id", "name", "price"])
def test_a_listing_without_its_identity_is_refused_naming_the_field(missing: str) -> None:
    payload = {"item_id": "1", "name": "n", "price": 1}
    del payload[missing]
    assert rejection(Listing, payload)["loc"] == (missing,)


def test_unknown_fields_are_ignored_and_known_ones_stay_typed() -> None:
    parsed = listing(
        delivery={"avg": 120, "success_rate": 0.97},
        paintseed=661,
        paintindex=415,
        inspect="steam://rungame/730/...",
        auto=True,
        penalties=[{"kind": "late"}],
        something_new=None,
        price="2500",
    )
    assert parsed.price == 2500
    assert (parsed.paintseed, parsed.paintindex, parsed.auto) == (661, 415, True)
    assert parsed.inspect == "steam://rungame/730/..."
    assert parsed.delivery is None  # an object where p2p/bot is expected: dropped, not fatal
    assert not hasattr(parsed, "penalties")
    assert "something_new" not in parsed.model_dump()


@pytest.mark.parametrize("context", [None, {}, {"image_base_url": None}, {"other": 1}])
def test_without_an_image_base_a_relative_image_is_left_as_sent(
    context: dict[str, Any] | None,
) -> None:
    payload = {"item_id": "1", "name": "n", "price": 1, "image": "econ/abc.png"}
    payload["stickers"] = [{"name": "s", "image": "st/1.png"}]
    parsed = wire(Listing, payload, context)
    assert parsed.image == "econ/abc.png"
    assert parsed.stickers[0].image == "st/1.png"


def test_stickers_null_wear_missing_price_and_relative_images() -> None:
    parsed = listing(
        sticker_names=["Sticker | A", "Sticker | B", "Sticker | C"],
        stickers=[
            {"name": "Sticker | A", "image": "st/a.png", "wear": None, "slot": 0, "price": 1500},
            {"name": "Sticker | B", "image": "https://cdn.example/b.png", "wear": 0.25, "slot": 1},
            {"name": "Sticker | C", "image": "", "wear": "0.5", "slot": "2", "price": "250"},
        ],
    )
    a, b, c = parsed.stickers
    assert (a.wear, a.price, a.image) == (None, 1500, f"{BASE}/st/a.png")
    assert (b.wear, b.price, b.image) == (0.25, 0, "https://cdn.example/b.png")
    assert (c.wear, c.slot, c.price, c.image) == (0.5, 2, 250, None)
    assert parsed.sticker_names == ("Sticker | A", "Sticker | B", "Sticker | C")
    assert parsed.sticker_value == 1750


def test_a_base_url_with_a_trailing_slash_gives_one_slash() -> None:
    payload = {"item_id": "1", "name": "n", "price": 1, "image": "/a.png"}
    parsed = wire(Listing, payload, {"image_base_url": BASE + "/"})
    assert parsed.image == f"{BASE}/a.png"


def test_listings_are_immutable() -> None:
    parsed = listing()
    with pytest.raises(ValidationError, match="frozen"):
        parsed.price = 1  # type: ignore[misc]


# -- whole responses -----------------------------------------------------------------------


def test_a_v2_search_response_parses_per_name() -> None:
    payload = {
        "success": True,
        "items": {
            "★ Karambit | Doppler (Factory New)": [
                {"item_id": 111, "name": "★ Karambit | Doppler (Factory New)", "price": 900000,
                 "phase": "Ruby", "platform_price_number": "1100000", "image": "k.png"},
                {"item_id": "112", "name": "★ Karambit | Doppler (Factory New)",
                 "price": "950000", "phase": "Phase 2",
                 "unlock_at": "2026-01-08T00:00:00Z", "send_until": "2026-01-08T12:00:00Z"},
            ],
            "AK-47 | Redline (Field-Tested)": [],
        },
    }  # fmt: skip
    parsed = wire(SearchResponse, payload, CONTEXT)
    ruby, locked = parsed.items["★ Karambit | Doppler (Factory New)"]
    assert (ruby.item_id, ruby.price, ruby.phase, ruby.platform_price) == (
        "111", 900_000, "Ruby", 1_100_000,
    )  # fmt: skip
    assert ruby.image == f"{BASE}/k.png"
    assert (locked.item_id, locked.price, locked.trade_locked) == ("112", 950_000, True)
    assert (locked.unlock_at, locked.send_until) == (JAN_8, JAN_8 + 12 * 3600)
    assert parsed.items["AK-47 | Redline (Field-Tested)"] == ()


def test_a_429_search_body_parses_as_a_refusal() -> None:
    parsed = wire(SearchResponse, {"success": False, "msg": "Too many", "msBeforeNext": 1500})
    assert (parsed.success, parsed.msg, parsed.items) == (False, "Too many", {})


def test_a_catalogue_page_with_a_cursor_and_catalogue_fields() -> None:
    payload = {
        "success": True,
        "count": 2,
        "has_more": True,
        "next_cursor": "eyJwIjo5OTl9",
        "items": [
            {"item_id": 5, "name": "Glock-18 | Fade (Factory New)", "price": "000001500",
             "best_deals": -250, "discount": 12.5, "brand": "pistol", "type": "",
             "platform_price": 1750, "unlock_at": str(JAN_8)},
            {"item_id": 6, "name": "Sticker | Crown (Foil)", "price": 99000, "brand": "sticker"},
        ],
    }  # fmt: skip
    parsed = wire(CataloguePage, payload, CONTEXT)
    glock, sticker = parsed.items
    assert (parsed.count, parsed.has_more, parsed.next_cursor) == (2, True, "eyJwIjo5OTl9")
    assert (glock.price, glock.best_deals, glock.discount) == (1500, -250, 12.5)
    assert (glock.brand, glock.type, glock.unlock_at) == ("pistol", None, JAN_8)
    assert (sticker.item_id, sticker.brand) == ("6", "sticker")


@pytest.mark.parametrize("cursor", ["", None])
def test_the_last_catalogue_page_has_no_cursor(cursor: str | None) -> None:
    payload = {"success": True, "items": [], "count": 0, "has_more": False, "next_cursor": cursor}
    assert wire(CataloguePage, payload).next_cursor is None


# -- snapshots -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        (
            {"item_id": "31942112123", "name": "AK-47 | Redline (Field-Tested)",
             "price": "000000027867", "auto": "", "inspect": ""},
            ("31942112123", 27_867, None, None),
        ),
        (
            {"item_id": "31942112124", "name": "★ Karambit | Doppler Phase 2 (Factory New)",
             "price": "001250000", "auto": "1", "inspect": "steam://x",
             "unlock_at": "2026-01-08T00:00:00Z", "send_until": str(JAN_8 + 3600)},
            ("31942112124", 1_250_000, JAN_8, JAN_8 + 3600),
        ),
        (
            {"item_id": "7", "name": "X", "price": "5", "unlock_at": "", "send_until": ""},
            ("7", 5, None, None),
        ),
    ],
)  # fmt: skip
def test_a_csv_snapshot_row_reads_from_text_cells(
    row: dict[str, str], expected: tuple[str, int, int | None, int | None]
) -> None:
    parsed = SnapshotRow.model_validate(row)
    assert (parsed.item_id, parsed.price, parsed.unlock_at, parsed.send_until) == expected


@pytest.mark.parametrize(("cell", "value"), [("price", ""), ("price", "12.5"), ("unlock_at", "x")])
def test_a_bad_csv_cell_is_refused_naming_its_column(cell: str, value: str) -> None:
    row = {"item_id": "1", "name": "X", "price": "100", cell: value}
    with pytest.raises(ValidationError) as caught:
        SnapshotRow.model_validate(row)
    assert caught.value.errors()[0]["loc"] == (cell,)


def test_a_json_snapshot() -> None:
    payload = {
        "success": True,
        "timestamp": JAN_1,
        "items": [{"item_id": 1, "price": "27867", "name": "AK-47 | Redline (Field-Tested)"}],
    }
    parsed = wire(Snapshot, payload)
    assert parsed.timestamp == JAN_1
    assert (parsed.items[0].item_id, parsed.items[0].price) == ("1", 27_867)
    missing = wire(Snapshot, {"success": False, "msg": "No snapshot yet"})
    assert (missing.success, missing.msg, missing.items) == (False, "No snapshot yet", ())


# -- purchases -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        (
            {"success": True, "id": 30717149, "price": 5000},
            {"success": True, "id": 30717149, "price": 5000, "purchase_status": None},
        ),
        (
            {"success": True, "id": "30717150", "price": "5000", "purchase_status": "reserved",
             "unlock_at": "2026-01-08T00:00:00Z", "send_until": "2026-01-08T12:00:00Z"},
            {"id": 30717150, "price": 5000, "purchase_status": "reserved",
             "unlock_at": JAN_8, "send_until": JAN_8 + 12 * 3600},
        ),
        (
            {"success": False, "msg": "Price changed", "new_price": "990000"},
            {"success": False, "msg": "Price changed", "new_price": 990_000, "id": None},
        ),
        (
            {"success": False, "msg": "Price changed", "new_price": 990000},
            {"new_price": 990_000},
        ),
        ({"success": False, "msg": "Item sold"}, {"msg": "Item sold", "new_price": None}),
        ({"success": False, "msg": "System busy"}, {"success": False, "price": None}),
    ],
)  # fmt: skip
def test_a_buy_result_in_every_shape_seen(payload: Any, expected: dict[str, Any]) -> None:
    parsed = wire(BuyResult, payload)
    assert {name: getattr(parsed, name) for name in expected} == expected


def test_a_bulk_buy_answer_per_the_working_shape() -> None:
    payload = {
        "success": True,
        "msg": None,
        "items": [
            {"item_id": 1, "success": True, "id": 1, "price": 12000, "project_id": "p-1"},
            {"item_id": "2", "success": False, "msg": "Price changed", "new_price": "13000",
             "project_id": "p-2"},
        ],
    }  # fmt: skip
    bought, refused = wire(BulkBuyResponse, payload).items
    assert (bought.item_id, bought.success, bought.price, bought.project_id) == (
        "1", True, 12_000, "p-1",
    )  # fmt: skip
    assert (refused.item_id, refused.success, refused.new_price) == ("2", False, 13_000)


# -- resolving purchases: check-many-project-id --------------------------------------------


def test_check_many_project_id_trades() -> None:
    payload = {
        "success": True,
        "msg": None,
        "trades": [
            {"id": 9001, "project_id": "snipe-0001", "price": 5000, "name": "AK-47",
             "status": 4, "done": False, "trade_id": "7712", "reason": "",
             "for_platformid64": 76561198000000000, "send_until": str(JAN_1 + 900),
             "last_updated": JAN_1, "counter": 1, "penalties": [], "unknown": {"x": 1}},
            {"id": "9002", "project_id": 12345, "price": "6000", "name": "M4A1-S",
             "status": "6", "done": True, "reason": "Buyer failed to accept",
             "escrow_status": "failed", "is_released": False,
             "release_date": "2026-01-08T00:00:00Z"},
            {"id": 9003, "project_id": "snipe-0003", "status": 5, "escrow_status": None},
        ],
    }  # fmt: skip
    sent, refunded, completed = wire(ProjectTradesResponse, payload).trades
    assert (sent.project_id, sent.status, sent.final, sent.reason) == ("snipe-0001", 4, False, None)
    assert (sent.send_until, sent.last_updated) == (JAN_1 + 900, JAN_1)
    assert sent.for_platformid64 == "76561198000000000"
    assert (refunded.id, refunded.project_id, refunded.price, refunded.final) == (
        9002, "12345", 6000, True,
    )  # fmt: skip
    assert (refunded.reason, refunded.escrow_status, refunded.release_date) == (
        "Buyer failed to accept", "failed", JAN_8,
    )  # fmt: skip
    assert (completed.final, completed.escrow_status) == (True, None)


def test_check_many_project_id_asking_to_retry() -> None:
    parsed = wire(ProjectTradesResponse, {"success": False, "msg": "Please try again"})
    assert (parsed.success, parsed.msg, parsed.trades) == (False, "Please try again", ())


def test_a_trade_without_its_status_is_refused() -> None:
    payload = {"success": True, "trades": [{"id": 1, "project_id": "p"}]}
    assert rejection(ProjectTradesResponse, payload)["loc"] == ("trades", 0, "status")


# -- history -------------------------------------------------------------------------------


def test_my_history_rows() -> None:
    payload = {
        "success": True,
        "data": {
            "trades": [
                {"id": 1, "item_id": 31942112123, "name": "AK-47", "price": "5000",
                 "give_amount": 4750, "status": 5, "created": "2026-01-01T00:00:00Z",
                 "action": "buy"},
                {"id": "2", "item_id": "31942112124", "name": "M4A1-S", "price": 6000,
                 "status": "6", "created": str(JAN_8), "action": "sell", "extra": True},
            ],
            "transactions": [{"id": 77, "amount": -5000}],
        },
    }  # fmt: skip
    bought, sold = wire(HistoryPage, payload).data.trades
    assert (bought.item_id, bought.price, bought.give_amount, bought.created, bought.action) == (
        "31942112123", 5000, 4750, JAN_1, "buy",
    )  # fmt: skip
    assert (sold.id, sold.status, sold.created, sold.action) == (2, 6, JAN_8, "sell")


# -- merchant ------------------------------------------------------------------------------


def test_merchant_deposits() -> None:
    payload = {
        "status": "success",
        "start_from": "1002",
        "deposits": [
            {"transaction_id": "1001", "deposit_id": "order-17", "merchant": "shop",
             "platform_id": 76561198000000000, "trade_url_token": "AbCdEf12", "currency": "USD",
             "min_amount": 1000, "max_amount": "250000", "widget": True, "platform_trade": 3,
             "created": "2026-01-01T00:00:00Z", "items": [31942112123, "31942112124"],
             "platform_trade_data": {
                 "trade_id": 5521, "done": True, "reason": "", "created": JAN_1,
                 "proccessed_time": str(JAN_1 + 60),
                 "user": {"name": "someone", "avatar": "avatars/ab.jpg",
                          "platform_id": "76561198000000000"},
                 "items": [{"item_id": 31942112123, "name": "AK-47", "price": "5000",
                            "give_amount": 4750, "status": 5}],
             }},
        ],
    }  # fmt: skip
    page = wire(DepositsPage, payload, CONTEXT)
    (deposit,) = page.deposits
    assert page.start_from == 1002
    assert (deposit.transaction_id, deposit.platform_id, deposit.max_amount) == (
        1001, "76561198000000000", 250_000,
    )  # fmt: skip
    assert deposit.items == ("31942112123", "31942112124")
    assert deposit.created == JAN_1
    trade = deposit.platform_trade_data
    assert trade is not None
    assert trade.user is not None
    assert (trade.trade_id, trade.reason, trade.proccessed_time) == ("5521", None, JAN_1 + 60)
    assert trade.user.avatar == f"{BASE}/avatars/ab.jpg"
    assert (trade.items[0].item_id, trade.items[0].price) == ("31942112123", 5000)


@pytest.mark.parametrize("transaction_id", [1001, "1001"])
def test_merchant_webhook_records(transaction_id: Any) -> None:
    record = {
        "transaction_id": transaction_id,
        "deposit_id": "order-17",
        "platform_trade": 3,
        "status": "completed",
        "status_code": 200,
        "created_at": "2026-01-01T00:00:00Z",
        "updated_at": str(JAN_1 + 5),
        "attempts": [{"attempt": 1, "status_code": "500", "created_at": JAN_1}],
    }
    page = wire(WebhookPage, {"status": "success", "data": [record], "start_from": 55})
    single = wire(WebhookResponse, {"status": "success", "data": record})
    for parsed in (page.data[0], single.data):
        assert parsed is not None
        assert (parsed.transaction_id, parsed.created_at, parsed.updated_at) == (
            1001, JAN_1, JAN_1 + 5,
        )  # fmt: skip
        assert (parsed.attempts[0].attempt, parsed.attempts[0].status_code) == (1, 500)


def test_merchant_inventory_joins_relative_icons() -> None:
    payload = {
        "status": "success",
        "items": [
            {"item_id": 31942112123, "icon_url": "-9a81dlWLwJ2UUGcVs", "name": "AK-47",
             "type": "Rifle", "limit": 2, "instant_price": "4500",
             "platform_price": {"name": "AK-47", "average": 5000, "current": "5100",
                                "img": "https://cdn.example/ak.png", "lowest_price": 4900}},
            {"item_id": "31942112124", "icon_url": "https://cdn.example/m4.png",
             "limit": 0, "instant_price": 3000},
        ],
    }  # fmt: skip
    ak, m4 = wire(InventoryResponse, payload, CONTEXT).items
    assert ak.icon_url == f"{BASE}/-9a81dlWLwJ2UUGcVs"
    assert ak.platform_price is not None
    assert (ak.platform_price.current, ak.platform_price.img) == (
        5100,
        "https://cdn.example/ak.png",
    )
    assert (ak.instant_price, ak.depositable) == (4500, True)
    assert (m4.icon_url, m4.depositable) == ("https://cdn.example/m4.png", False)


# -- account -------------------------------------------------------------------------------


def test_the_account_wallet_is_money() -> None:
    payload = {
        "success": True,
        "user": {"wallet": "125000", "can_p2p": True, "tradelink": "https://t.example/?partner=1",
                 "id": 42, "name": "me", "sell_fees": 0.94, "steam_level": 10},
    }  # fmt: skip
    user = wire(UserResponse, payload).user
    assert user is not None
    assert (user.wallet, user.can_p2p, user.id, user.sell_fees) == (125_000, True, "42", 0.94)


def test_a_created_account_key_never_shows_in_repr_or_str() -> None:
    payload = {"success": True, "data": {"api": "K3Y-SECRET", "isNew": True}, "exp": str(JAN_1)}
    created = wire(UserCreated, payload)
    assert created.data is not None
    assert created.data.api == "K3Y-SECRET"
    assert created.exp == JAN_1
    for shown in (repr(created), str(created), repr(created.data), str(created.data)):
        assert "K3Y-SECRET" not in shown
        assert "***" in shown


@pytest.mark.parametrize(
    ("sent", "read"),
    [
        (5100, 5100),
        ("5100", 5100),
        ("12.5", 13),  # a fraction of a thousandth: rounded up, as any price snipe may pay
        (12.5, 13),
        (" 7 ", 7),
        (-1, None),  # not a price: "not said", the refusal stays a refusal
        ("-1", None),
        ("abc", None),
        ("NaN", None),
        ("", None),
        (True, None),
        ({"usd": 5}, None),
        (None, None),
    ],
)
def test_the_new_price_of_a_refusal_is_read_leniently(sent: object, read: int | None) -> None:
    answer = BuyResult.model_validate({"success": False, "msg": "Price changed", "new_price": sent})
    assert answer.new_price == read


@pytest.mark.parametrize(
    ("best_deals", "read"), [(-250, -250), ("-250", -250), (-2.5, -3), (1750, 1750), ("12", 12)]
)
def test_a_catalogue_difference_may_be_below_zero(best_deals: Any, read: int) -> None:
    item = {"item_id": 5, "name": "Glock-18 | Fade (Factory New)", "price": 1500}
    page = wire(CataloguePage, {"success": True, "items": [{**item, "best_deals": best_deals}]})
    assert page.items[0].best_deals == read
