"""Every answer variant public clients and recorded fixtures have seen (issue 10), read on
the model level (sync, table-driven) and through the client (MockTransport, both anyio
backends). The answers are written for these tests in the shapes docs/wire.md records.

The rule under test: one odd listing or trade is set aside with its field and reason, the
others are kept; only a broken envelope fails the answer; a purchase answer stays strict.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import httpx
import pytest
from client_support import Recorder
from pydantic import ValidationError

from engine import MalformedResponse, OutcomeUnknown, Refused
from engine.client import BulkItem, MarketClient
from engine.models import (
    BulkBuyResponse,
    BuyOrdersResponse,
    BuyResult,
    CataloguePage,
    HistoryPage,
    Listing,
    ProjectTradesResponse,
    SearchResponse,
    SearchResponseV1,
    SetAside,
    TradeLinkCheck,
    TradesResponse,
    UserResponse,
    decode_per_item,
)

AK = "AK-47 | Redline (Field-Tested)"
M4 = "M4A1-S | Decimator (Minimal Wear)"
TRADE_LINK = "https://steamcommunity.com/tradeoffer/new/?partner=123456789&token=AbCdEfGh"


def body(value: Any) -> bytes:
    return json.dumps(value).encode()


DROP = object()
"""As a field's value in :func:`listing`: leave the field out."""


def listing(n: int, name: str = AK, **fields: Any) -> dict[str, Any]:
    """A v2 search listing as the live feed writes one."""
    entry: dict[str, Any] = {
        "name": name,
        "price": 12_500 + n,
        "image": f"-9a81dlWLwJ2UUGcVs_nsVtzdOEdtWwKGZZLQHTxDZ7I56KU0Zwwo4NUX4oFJZEHLbXH5ApeO{n}/",
        "item_id": 31942112120 + n,
        "phase": "",
        "float": 0.2431 + n / 1000,
        "platform_price": 15_100,
        "sticker_names": ["Sticker | Natus Vincere | Katowice 2019"],
        "stickers": [
            {
                "name": "Sticker | Natus Vincere | Katowice 2019",
                "image": "https://cdn.example/sticker.png",
                "wear": None,
                "slot": 0,
                "price": 310,
            }
        ],
        "paintseed": 412,
        "paintindex": 282,
    }
    entry.update(fields)
    return {key: value for key, value in entry.items() if value is not DROP}


def v2_search(*listings: dict[str, Any]) -> bytes:
    by_name: dict[str, list[dict[str, Any]]] = {}
    for entry in listings:
        by_name.setdefault(entry["name"], []).append(entry)
    return body({"success": True, "items": by_name})


def only_listing(answer: SearchResponse) -> Listing:
    (found,) = [x for xs in answer.items.values() for x in xs]
    return found


# -- listings: variants that are read -------------------------------------------------------

READ = [
    ("sticker_names null", {"sticker_names": None}, lambda x: x.sticker_names == ()),
    ("stickers null", {"stickers": None}, lambda x: x.stickers == () and x.sticker_value == 0),
    (
        "sticker price null counts as 0",
        {
            "stickers": [
                {"name": "S", "price": None, "wear": 0.1, "slot": 1},
                {"name": "T", "price": 90},
            ]
        },
        lambda x: [s.price for s in x.stickers] == [0, 90] and x.sticker_value == 90,
    ),
    ("fractional price string: rounded up", {"price": "27867.5"}, lambda x: x.price == 27_868),
    ("fractional price number: rounded up", {"price": 27867.25}, lambda x: x.price == 27_868),
    ("whole price string", {"price": "27867"}, lambda x: x.price == 27_867),
    ("zero-padded price", {"price": "000000027867"}, lambda x: x.price == 27_867),
    (
        "fractional reference: rounded down",
        {"platform_price": "43794.9"},
        lambda x: x.platform_price == 43_794,
    ),
    (
        "fractional sticker price: rounded down",
        {"stickers": [{"name": "S", "price": "150.5"}]},
        lambda x: x.sticker_value == 150,
    ),
    (
        "platform_price object next to platform_price_number",
        {"platform_price": {"average": 40100, "current": 41000}, "platform_price_number": 43794},
        lambda x: x.platform_price == 43_794,
    ),
    (
        "platform_price null, platform_price_number present",
        {"platform_price": None, "platform_price_number": 43794},
        lambda x: x.platform_price == 43_794,
    ),
    (
        "platform_price_number null, platform_price present",
        {"platform_price": 43794, "platform_price_number": None},
        lambda x: x.platform_price == 43_794,
    ),
    (
        "both present: platform_price first",
        {"platform_price": 43794, "platform_price_number": 40000},
        lambda x: x.platform_price == 43_794,
    ),
    (
        "platform_price object alone: no reference",
        {"platform_price": {"average": 40100}},
        lambda x: x.platform_price is None,
    ),
    (
        "both null: no reference",
        {"platform_price": None, "platform_price_number": None},
        lambda x: x.platform_price is None,
    ),
    ("delivery p2p", {"delivery": "p2p"}, lambda x: x.delivery == "p2p"),
    ("delivery BOT", {"delivery": "BOT"}, lambda x: x.delivery == "bot"),
    ("delivery object: dropped", {"delivery": {"avg": 120}}, lambda x: x.delivery is None),
    (
        "inspect link",
        {"inspect": "steam://rungame/730/76561202255233023/+csgo_econ_action_preview%20S1A2D3"},
        lambda x: x.inspect is not None and x.inspect.endswith("S1A2D3"),
    ),
    ("auto true", {"auto": True}, lambda x: x.auto is True),
    ("auto as 0", {"auto": 0}, lambda x: x.auto is False),
    ("auto odd: dropped", {"auto": {"x": 1}}, lambda x: x.auto is None),
    ("paint_index spelling", {"paintindex": DROP, "paint_index": 44}, lambda x: x.paintindex == 44),
    ("paintseed odd: dropped", {"paintseed": "n/a"}, lambda x: x.paintseed is None),
]


@pytest.mark.parametrize(("fields", "check"), [r[1:] for r in READ], ids=[r[0] for r in READ])
def test_a_listing_variant_is_read_not_set_aside(fields: dict[str, Any], check: Any) -> None:
    answer = decode_per_item(SearchResponse, v2_search(listing(1, **fields)))
    assert answer.set_aside == ()
    assert check(only_listing(answer))


@pytest.mark.parametrize(("fields", "check"), [r[1:] for r in READ], ids=[r[0] for r in READ])
def test_a_listing_variant_is_read_the_same_beside_a_set_aside_one(
    fields: dict[str, Any], check: Any
) -> None:
    # a listing set aside sends the answer down the slower, item-by-item path: the kept
    # listing must read exactly as on the fast path
    raw = {"success": True, "items": {AK: [listing(1, **fields), listing(2, price="12 USD")]}}
    answer = decode_per_item(SearchResponse, body(raw))
    assert [x.path for x in answer.set_aside] == [f"items.{AK}.1"]
    assert check(only_listing(answer))


# -- listings: what is set aside, and the rest kept -----------------------------------------

SET_ASIDE = [
    ("price not a number", {"price": "12 USD"}, "price"),
    ("price null", {"price": None}, "price"),
    ("no item_id", {"item_id": None}, "item_id"),
    ("no name", {"name": None}, "name"),
    ("unreadable hold time", {"unlock_at": "next week"}, "unlock_at"),
    ("sticker without a name", {"stickers": [{"price": 5}]}, "stickers.name"),
    ("reference not a number", {"platform_price": "ask"}, "platform_price"),
]


@pytest.mark.parametrize(
    ("fields", "field"), [r[1:] for r in SET_ASIDE], ids=[r[0] for r in SET_ASIDE]
)
def test_one_bad_listing_is_set_aside_and_the_others_kept(
    fields: dict[str, Any], field: str
) -> None:
    bad = listing(2, **fields)
    name = bad["name"] if isinstance(bad["name"], str) else AK
    raw = {"success": True, "items": {AK: [listing(1), listing(3)], M4: [listing(4, M4)]}}
    raw["items"].setdefault(name, []).insert(1, bad)
    answer = decode_per_item(SearchResponse, body(raw))
    assert [x.item_id for x in answer.items[AK]] == ["31942112121", "31942112123"]
    assert [x.item_id for x in answer.items[M4]] == ["31942112124"]
    (aside,) = answer.set_aside
    assert aside.field == field
    assert aside.path == f"items.{name}.1"
    assert aside.reason
    if fields.get("item_id", 0) is not None:
        assert aside.key == "item_id=31942112122"


def test_a_listing_that_is_not_an_object_is_set_aside() -> None:
    raw = {"success": True, "items": {AK: [listing(1), "sold", listing(3)]}}
    answer = decode_per_item(SearchResponse, body(raw))
    assert len(answer.items[AK]) == 2
    assert answer.set_aside == (SetAside(f"items.{AK}.1", "(item)", answer.set_aside[0].reason),)


def test_a_2500_listing_answer_with_a_few_bad_ones_keeps_the_rest() -> None:
    names = [f"Item {n}" for n in range(50)]
    raw: dict[str, Any] = {
        "success": True,
        "items": {
            name: [listing(i * 50 + j, name) for j in range(50)] for i, name in enumerate(names)
        },
    }
    raw["items"]["Item 7"][3]["sticker_names"] = None  # read
    raw["items"]["Item 9"][0]["price"] = "27867.5"  # read
    raw["items"]["Item 20"][49]["price"] = "free"  # set aside
    raw["items"]["Item 31"][10]["item_id"] = None  # set aside
    answer = decode_per_item(SearchResponse, body(raw))
    assert sum(len(xs) for xs in answer.items.values()) == 2498
    assert [(s.path, s.field) for s in answer.set_aside] == [
        ("items.Item 20.49", "price"),
        ("items.Item 31.10", "item_id"),
    ]


BROKEN = [
    ("success unreadable", {"success": "perhaps", "items": {}}),
    ("items not an object", {"success": True, "items": "none"}),
    ("a name's listings not a list", {"success": True, "items": {AK: {"0": listing(1)}}}),
    ("not an object", ["success"]),
]


@pytest.mark.parametrize("raw", [r[1] for r in BROKEN], ids=[r[0] for r in BROKEN])
def test_a_broken_envelope_fails_the_whole_answer(raw: Any) -> None:
    with pytest.raises(ValidationError):
        decode_per_item(SearchResponse, body(raw))


def test_an_answer_that_is_not_json_fails() -> None:
    with pytest.raises(ValidationError):
        decode_per_item(SearchResponse, b"<html>challenge</html>")


# -- v1 search: one array ---------------------------------------------------------------------


def test_v1_search_reads_an_array_and_groups_it_by_name_cheapest_first() -> None:
    raw = {
        "success": True,
        "items": [
            {"name": AK, "price": 13_000, "item_id": "11", "image": "a.png"},
            {"name": M4, "price": "9000", "item_id": 12},
            {"name": AK, "price": 12_000, "item_id": 13},
            {"name": AK, "price": "n/a", "item_id": 14},
        ],
    }
    v1 = decode_per_item(SearchResponseV1, body(raw))
    grouped = SearchResponse.from_v1(v1)
    assert {name: [x.item_id for x in xs] for name, xs in grouped.items.items()} == {
        AK: ["13", "11"],
        M4: ["12"],
    }
    assert [(s.path, s.field, s.key) for s in grouped.set_aside] == [
        ("items.3", "price", "item_id=14")
    ]


def test_catalogue_page_sets_aside_one_listing() -> None:
    raw = {
        "success": True,
        "items": [listing(1), listing(2, price={"usd": 1}), listing(3, best_deals="250.5")],
        "count": 3,
        "has_more": True,
        "next_cursor": "eyJwIjoxfQ",
    }
    page = decode_per_item(CataloguePage, body(raw))
    assert [x.item_id for x in page.items] == ["31942112121", "31942112123"]
    assert page.items[1].best_deals == 250
    assert (page.has_more, page.next_cursor) == (True, "eyJwIjoxfQ")
    assert [s.field for s in page.set_aside] == ["price"]


# -- check-many-project-id -----------------------------------------------------------------------


def trade(pid: str | None, status: Any = 4, **fields: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "id": 30717149,
        "price": 12_500,
        "name": AK,
        "status": status,
        "done": False,
        "trade_id": "6573920127",
        "reason": "",
        "for_platformid64": "76561198000000000",
        "send_until": "1767312900",
        "last_updated": "1767312000",
        "counter": 1,
    }
    if pid is not None:
        entry["project_id"] = pid
    entry.update(fields)
    return entry


TRADES_READ = [
    ("non-numeric trade id: status kept", {"id": "A-30717149"}, lambda t: t.id is None),
    ("numeric-string trade id", {"id": "30717149"}, lambda t: t.id == 30_717_149),
    ("fractional charged price: up", {"price": "12500.4"}, lambda t: t.price == 12_501),
    ("status as text", {"status": "5"}, lambda t: t.status == 5 and t.final),
]


@pytest.mark.parametrize(
    ("fields", "check"), [r[1:] for r in TRADES_READ], ids=[r[0] for r in TRADES_READ]
)
def test_a_trade_variant_is_read(fields: dict[str, Any], check: Any) -> None:
    answer = decode_per_item(
        ProjectTradesResponse, body({"success": True, "trades": [trade("p-1", **fields)]})
    )
    assert answer.set_aside == ()
    (found,) = answer.trades
    assert found.project_id == "p-1"
    assert check(found)


UNSETTLED = [
    # (the answer's trades, asked ids, expected unsettled ids)
    ("all readable", [trade("p-1"), trade("p-2")], ["p-1", "p-2", "p-3"], set()),
    (
        "a trade without project_id: every id not found is unsettled",
        [trade("p-1"), trade(None)],
        ["p-1", "p-2", "p-3"],
        {"p-2", "p-3"},
    ),
    (
        "a trade with an unreadable status names its id",
        [trade("p-1"), trade("p-2", status="sent")],
        ["p-1", "p-2", "p-3"],
        {"p-2"},
    ),
    (
        "an unreadable trade's id that was not asked for",
        [trade("p-9", status=None)],
        ["p-1"],
        set(),
    ),
]


@pytest.mark.parametrize(
    ("trades", "asked", "unsettled"), [r[1:] for r in UNSETTLED], ids=[r[0] for r in UNSETTLED]
)
def test_check_many_unreadable_trades_leave_their_ids_not_learned(
    trades: list[dict[str, Any]], asked: list[str], unsettled: set[str]
) -> None:
    answer = decode_per_item(ProjectTradesResponse, body({"success": True, "trades": trades}))
    assert answer.unsettled(asked) == unsettled
    assert len(answer.trades) + len(answer.set_aside) == len(trades)


def test_check_many_keeps_99_trades_when_one_is_unreadable() -> None:
    trades = [trade(f"p-{n}") for n in range(100)]
    trades[42] = trade("p-42", status="pending")
    answer = decode_per_item(ProjectTradesResponse, body({"success": True, "trades": trades}))
    assert len(answer.trades) == 99
    assert [(s.field, s.project_id) for s in answer.set_aside] == [("status", "p-42")]
    assert answer.unsettled([f"p-{n}" for n in range(100)]) == {"p-42"}


# -- history, buy orders, ready-to-transfer -----------------------------------------------------


def test_history_keeps_the_completion_date_and_sets_aside_a_bad_row() -> None:
    raw = {
        "success": True,
        "data": {
            "trades": [
                {"id": 88121, "item_id": "31942112121", "name": AK, "price": "12500",
                 "give_amount": 11875, "status": 5, "created": "2026-01-01T10:00:00Z",
                 "date": "2026-01-01T10:42:00Z", "action": "buy", "project_id": "p-1"},
                {"id": "not-a-number", "name": AK, "price": 9000, "status": 5,
                 "action": "buy", "project_id": "p-2"},
                {"id": 88123, "name": M4, "price": "9000.5", "status": 6,
                 "created": 1767261600, "date": "1767262200", "action": "buy"},
            ],
            "transactions": [],
        },
    }  # fmt: skip
    page = decode_per_item(HistoryPage, body(raw))
    first, third = page.data.trades
    assert (first.created, first.date, first.project_id) == (1767261600, 1767264120, "p-1")
    assert (third.price, third.date) == (9001, 1767262200)
    assert [(s.path, s.field, s.project_id) for s in page.set_aside] == [
        ("data.trades.1", "id", "p-2")
    ]


def test_buy_orders_set_aside_one_order() -> None:
    raw = {
        "success": True,
        "offers": [
            {"id": 2007, "name": "Kilowatt Case", "price": 850, "amount": 20, "filled": 2,
             "game": "csgo"},
            {"id": 2008, "name": "Revolution Case", "price": "cheap", "amount": 5},
            {"id": "2009", "name": "Fracture Case", "price": "410.5", "amount": 1},
        ],
    }  # fmt: skip
    answer = decode_per_item(BuyOrdersResponse, body(raw))
    assert [(o.id, o.price) for o in answer.offers] == [(2007, 850), (2009, 411)]
    assert [(s.field, s.key) for s in answer.set_aside] == [("price", "id=2008")]


def bare_trade(trade_id: Any = 918273) -> dict[str, Any]:
    return {
        "id": trade_id,
        "costum_id": "c-1",
        "trade_id": "6573920127",
        "tradelink": TRADE_LINK,
        "trade_message": "snipe",
        "done": False,
        "stage": 11,
        "creator": "seller",
        "send_until": "1767312900",
        "last_updated": 1767312000,
        "for_platformid64": 76561198000000000,
        "items": [{"id": "A-1", "item_id": 31942112121, "price": "12500", "status": 4}],
        "unlock_at": None,
    }


TRANSFER_SHAPES = [
    ("bare trade object (the documented example)", bare_trade()),
    ("success and trades (public clients)", {"success": True, "trades": [bare_trade()]}),
    ("bare array", [bare_trade()]),
]


@pytest.mark.parametrize(
    "raw", [r[1] for r in TRANSFER_SHAPES], ids=[r[0] for r in TRANSFER_SHAPES]
)
def test_ready_to_transfer_in_every_shape(raw: Any) -> None:
    answer = decode_per_item(TradesResponse, body(raw))
    (found,) = answer.trades
    assert (answer.success, found.id, found.stage, found.for_platformid64) == (
        True, "918273", 11, "76561198000000000",
    )  # fmt: skip
    assert (found.items[0].id, found.items[0].price) == ("A-1", 12_500)


def test_ready_to_transfer_trade_ids_may_be_text_and_a_bad_trade_is_set_aside() -> None:
    raw = {"success": True, "trades": [bare_trade("T-918273"), bare_trade({"n": 1})]}
    answer = decode_per_item(TradesResponse, body(raw))
    assert [t.id for t in answer.trades] == ["T-918273"]
    assert [(s.path, s.field) for s in answer.set_aside] == [("trades.1", "id")]


def test_a_bare_trade_with_a_bad_field_is_set_aside_not_an_error() -> None:
    answer = decode_per_item(TradesResponse, body({**bare_trade(), "stage": "soon"}))
    assert answer.trades == ()
    assert [s.field for s in answer.set_aside] == ["stage"]


# -- account and trade link ------------------------------------------------------------------------

VALID = {"success": True, "link": TRADE_LINK, "info": "", "platformid64": "76561198000000000"}
BANNED = {
    "success": False,
    "msg": "Trade link cannot be used",
    "info": "Trade ban until 2026-02-01",
}
TRADE_LINK_ANSWERS = [
    ("valid", VALID, None),
    ("valid, harmless info", {"success": True, "info": "Trade link is OK"}, None),
    ("valid, trade hold", {"success": True, "info": "Escrow: items arrive in 7 days"}, None),
    (
        "private inventory on success",
        {"success": True, "info": "Inventory is private"},
        "Inventory is private",
    ),
    (
        "refused with the reason in info",
        BANNED,
        "Trade link cannot be used: Trade ban until 2026-02-01",
    ),
    (
        "refused, reason only in info",
        {"success": False, "msg": "", "info": "Account is restricted"},
        "Account is restricted",
    ),
    ("refused, no reason", {"success": False}, "refused, no reason given"),
]


@pytest.mark.parametrize(
    ("raw", "problem"), [r[1:] for r in TRADE_LINK_ANSWERS], ids=[r[0] for r in TRADE_LINK_ANSWERS]
)
def test_trade_link_check_says_what_stands_in_the_way(
    raw: dict[str, Any], problem: str | None
) -> None:
    assert TradeLinkCheck.model_validate_json(body(raw)).problem == problem


@pytest.mark.parametrize("platform_id", [76561198000000000, "76561198000000000"])
def test_trade_link_platform_ids_as_numbers_or_strings(platform_id: Any) -> None:
    check = TradeLinkCheck.model_validate(
        {"success": True, "platformid32": str(platform_id)[-8:], "platformid64": platform_id}
    )
    assert check.platformid64 == 76561198000000000


def test_the_account_platform_id_is_kept() -> None:
    raw = {
        "success": True,
        "user": {"wallet": "125000", "id64": 76561198000000000, "sell_status": "online",
                 "login": "sniper", "avatar": "a.png", "userid": 5},
    }  # fmt: skip
    user = UserResponse.model_validate_json(body(raw)).user
    assert user is not None
    assert (user.wallet, user.platform_id, user.sell_status) == (
        125_000, "76561198000000000", "online",
    )  # fmt: skip


# -- purchases stay strict ------------------------------------------------------------------


def test_a_purchase_answer_is_never_read_item_by_item() -> None:
    with pytest.raises(ValidationError):
        decode_per_item(BuyResult, body({"success": True, "id": 1, "price": "twelve"}))
    bulk = {
        "success": True,
        "items": [
            {"item_id": "1", "success": True, "id": 1, "price": 12_000, "project_id": "p-1"},
            {"item_id": "2", "success": True, "id": 2, "price": "lots", "project_id": "p-2"},
        ],
    }
    with pytest.raises(ValidationError):
        decode_per_item(BulkBuyResponse, body(bulk))


# -- through the client ---------------------------------------------------------------------


async def test_client_v2_search_keeps_the_good_listings_and_reports_the_bad(
    client: MarketClient, recorder: Recorder, caplog: pytest.LogCaptureFixture
) -> None:
    told: list[tuple[str, SetAside]] = []
    client.malformed_observer = lambda endpoint, item: told.append((endpoint, item))
    answer = v2_search(listing(1), listing(2, price="12 USD"), listing(3, price="ask"))
    recorder.reply(*(_response(answer) for _ in range(2)))
    with caplog.at_level(logging.WARNING, logger="engine.client"):
        first = await client.search_items_by_name([AK])
        second = await client.search_items_by_name([AK])
    assert [x.item_id for x in first.items[AK]] == ["31942112121"]
    assert first.set_aside == second.set_aside
    assert [(e, s.field, s.key) for e, s in told] == [
        ("GET /v2/search-items-by-name", "price", "item_id=31942112122"),
        ("GET /v2/search-items-by-name", "price", "item_id=31942112123"),
    ] * 2
    warnings = [r for r in caplog.records if "set aside" in r.getMessage()]
    assert len(warnings) == 1  # logged once per kind (endpoint and field), counted always
    assert "field price" in warnings[0].getMessage()


async def test_client_v1_search_sends_names_and_reads_the_array(
    client: MarketClient, recorder: Recorder
) -> None:
    recorder.json(
        {
            "success": True,
            "items": [
                {"name": AK, "price": 12_000, "item_id": 31942112121},
                {"name": M4, "price": "9000.5", "item_id": "31942112122"},
                {"name": M4, "price": None, "item_id": "31942112123"},
            ],
        }
    )
    answer = await client.search_items_by_name_v1([AK, M4], game="csgo")
    assert recorder.params() == [("game", "csgo"), ("names", AK), ("names", M4)]
    assert recorder.last.url.path == "/v1/search-items-by-name"
    assert [x.price for x in answer.items[AK]] == [12_000]
    assert [x.price for x in answer.items[M4]] == [9_001]
    assert [s.key for s in answer.set_aside] == ["item_id=31942112123"]


async def test_client_catalogue_history_orders_and_transfers_read_per_item(
    client: MarketClient, recorder: Recorder
) -> None:
    recorder.reply(
        _response(body({"success": True, "items": [listing(1), {"name": AK}], "count": 2})),
        _response(body({"success": True, "data": {"trades": [{"id": 1, "date": 1767312000}, {}]}})),
        _response(
            body({"success": True, "offers": [{"id": 1, "name": "K", "price": 5}, {"id": 2}]})
        ),
        _response(body(bare_trade("T-1"))),
    )
    page = await client.get_items_list()
    history = await client.my_history()
    orders = await client.buy_orders()
    transfers = await client.ready_to_transfer_p2p("0123456789ABCDEF0123456789ABCDEF")
    assert (len(page.items), [s.field for s in page.set_aside]) == (1, ["item_id"])
    assert history.data.trades[0].date == 1767312000
    assert [s.field for s in history.set_aside] == ["id"]
    assert ([o.id for o in orders.offers], [s.field for s in orders.set_aside]) == ([1], ["name"])
    assert [t.id for t in transfers.trades] == ["T-1"]


async def test_client_check_many_returns_the_readable_trades(
    client: MarketClient, recorder: Recorder
) -> None:
    recorder.json({"success": True, "msg": None, "trades": [trade("p-1", 5), trade(None, 5)]})
    answer = await client.check_many_project_id(["p-1", "p-2"])
    assert [t.project_id for t in answer.trades] == ["p-1"]
    assert answer.unsettled(["p-1", "p-2"]) == {"p-2"}


async def test_client_broken_envelope_is_malformed_naming_the_field(
    client: MarketClient, recorder: Recorder
) -> None:
    recorder.json({"success": True, "trades": {"p-1": trade("p-1")}})
    with pytest.raises(MalformedResponse) as info:
        await client.check_many_project_id(["p-1"])
    assert info.value.field == "trades"
    assert "GET /v1/check-many-project-id" in str(info.value)


async def test_client_trade_link_refusal_keeps_its_info(
    client: MarketClient, recorder: Recorder
) -> None:
    recorder.json(
        {"success": False, "msg": "Trade link cannot be used", "info": "Trade ban until 2026-02-01"}
    )
    with pytest.raises(Refused) as info:
        await client.check_tradelink(TRADE_LINK)
    assert "Trade ban until 2026-02-01" in str(info.value)
    assert "Trade link cannot be used" in str(info.value)


async def test_client_trade_link_success_with_a_private_inventory(
    client: MarketClient, recorder: Recorder
) -> None:
    recorder.json({"success": True, "link": TRADE_LINK, "info": "Inventory is private"})
    check = await client.check_tradelink(TRADE_LINK)
    assert check.problem == "Inventory is private"


async def test_client_bulk_purchase_with_one_unreadable_item_is_unknown_as_a_whole(
    client: MarketClient, recorder: Recorder
) -> None:
    recorder.json(
        {
            "success": True,
            "items": [
                {"item_id": "1", "success": True, "id": 1, "price": 12_000, "project_id": "p-1"},
                {"item_id": "2", "success": True, "id": 2, "price": "lots", "project_id": "p-2"},
            ],
        }
    )
    with pytest.raises(OutcomeUnknown) as info:
        await client.buy(
            [BulkItem("1", 12_000, "p-1"), BulkItem("2", 13_000, "p-2")],
            partner="123456789",
            token="AbCdEfGh",
        )
    assert info.value.project_ids == ("p-1", "p-2")


def _response(content: bytes) -> httpx.Response:
    return httpx.Response(200, content=content, headers={"content-type": "application/json"})
