"""A deal on demand: tests run from outside plant a listing over HTTP instead of waiting
for the arrival process (at 60x speed, a deal the example rules take comes every few real
minutes)."""

from __future__ import annotations

import pytest
from sandbox_support import Api

NAME = "AK-47 | Redline (Field-Tested)"


async def test_a_planted_listing_is_on_the_market_at_its_price(api: Api) -> None:
    planted = await api.http.post("/_sandbox/listings", json={"name": NAME, "price": 1234})
    assert planted.status_code == 200
    item_id = planted.json()["item_id"]
    body = await api.get("/v2/search-items-by-name", name=NAME)
    rows = {str(entry["item_id"]): entry for entry in body["items"][NAME]}
    assert rows[item_id]["price"] == 1234
    assert 0.15 <= float(rows[item_id]["float"]) <= 0.38  # the middle of Field-Tested's


@pytest.mark.parametrize(
    ("body", "names"),
    [
        ({"name": "No Such Item", "price": 1000}, "name"),
        ({"name": NAME, "price": 0}, "price"),
        ({"name": NAME, "price": "cheap"}, "price"),
        ({"name": NAME, "price": 1000, "float": 2}, "float"),
        ({"name": NAME, "price": 1000, "colour": "red"}, "colour"),
        ({"name": NAME}, "give exactly one of price and discount"),
        ({"name": NAME, "price": 1000, "discount": 20}, "give exactly one"),
        ({"name": NAME, "discount": 100}, "discount"),
    ],
)
async def test_a_bad_plant_is_refused_naming_the_field(
    api: Api, body: dict[str, object], names: str
) -> None:
    answer = await api.http.post("/_sandbox/listings", json=body)
    assert answer.status_code == 400
    assert names in answer.json()["msg"]


async def test_a_deal_is_planted_by_its_discount(api: Api) -> None:
    planted = await api.http.post("/_sandbox/listings", json={"name": NAME, "discount": 40})
    body = planted.json()
    assert body["price"] == body["platform_price"] * 60 // 100
