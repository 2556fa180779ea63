"""Answers in every form the live service sends (wire-notes.md) parse into one typed form."""

from __future__ import annotations

from typing import Any

import pytest

from engine.client import MarketClient
from engine.models import Listing

BASE: dict[str, Any] = {"item_id": "1", "name": "AK", "price": 5000}

VARIANTS = [
    ("integer item_id", {"item_id": 123}, lambda x: x.item_id == "123"),
    ("empty phase", {"phase": ""}, lambda x: x.phase is None),
    ("real phase", {"phase": "Ruby"}, lambda x: x.phase == "Ruby"),
    ("numeric string price", {"price": "990000"}, lambda x: x.price == 990000),
    ("zero-padded price", {"price": "000000027867"}, lambda x: x.price == 27867),
    ("platform_price", {"platform_price": 7000}, lambda x: x.platform_price == 7000),
    (
        "platform_price_number",
        {"platform_price_number": "7000"},
        lambda x: x.platform_price == 7000,
    ),
    (
        "null sticker wear",
        {"stickers": [{"name": "S", "wear": None, "price": "250", "slot": 0}]},
        lambda x: x.stickers[0].wear is None and x.sticker_value == 250,
    ),
    (
        "unknown fields",
        {"delivery": {"x": 1}, "paintseed": 5, "inspect": "i", "auto": True, "penalties": []},
        lambda x: x.name == "AK",
    ),
    ("epoch string", {"unlock_at": "1767312000"}, lambda x: x.unlock_at == 1767312000),
    ("epoch int", {"send_until": 1767312000}, lambda x: x.send_until == 1767312000),
    (
        "RFC 3339",
        {"unlock_at": "2026-01-02T00:00:00Z", "send_until": "2026-01-09T00:00:00+00:00"},
        lambda x: x.trade_locked and x.send_until == 1767916800,
    ),
    ("no hold", {}, lambda x: not x.trade_locked),
    (
        "relative image",
        {"image": "img/a.png"},
        lambda x: x.image == "https://img.market.test/img/a.png",
    ),
    ("absolute image", {"image": "https://cdn/a.png"}, lambda x: x.image == "https://cdn/a.png"),
    ("float wear", {"float": 0.0123}, lambda x: x.float_value == 0.0123),
]


@pytest.mark.parametrize(
    ("fields", "check"), [(f, c) for _, f, c in VARIANTS], ids=[v[0] for v in VARIANTS]
)
async def test_search_listing_variants(
    fields: dict[str, Any], check: Any, client: MarketClient, recorder: Any
) -> None:
    recorder.json({"success": True, "items": {"AK": [{**BASE, **fields}]}})
    answer = await client.search_items_by_name(["AK"])
    listing = answer.items["AK"][0]
    assert isinstance(listing, Listing)
    assert check(listing)


async def test_catalogue_listing_keeps_catalogue_fields(
    client: MarketClient, recorder: Any
) -> None:
    recorder.json(
        {
            "success": True,
            "items": [{**BASE, "best_deals": "120", "discount": 12.5, "brand": "", "type": "R"}],
            "count": 1,
            "has_more": False,
        }
    )
    page = await client.get_items_list()
    item = page.items[0]
    assert (item.best_deals, item.discount, item.brand, item.type) == (120, 12.5, None, "R")


async def test_price_changed_new_price_as_numeric_string(
    client: MarketClient, recorder: Any
) -> None:
    from engine import PurchaseRefusal, PurchaseRefused

    recorder.json({"success": False, "msg": "Price changed", "new_price": "5100"})
    with pytest.raises(PurchaseRefused) as info:
        await client.buy_one_p2p(
            item_id="1", price=5000, partner="1", token="AbCdEfGh", project_id="p"
        )
    assert info.value.reason is PurchaseRefusal.PRICE_CHANGED
    assert info.value.new_price == 5100
