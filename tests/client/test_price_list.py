"""GET /v1/prices: decoded per item as it streams in (docs/wire.md, "GET /v1/prices")."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx
import pytest

from engine import MalformedResponse, RateLimiter, Unavailable, VirtualClock
from engine.client import MarketClient, PricesDecoder
from engine.models import PriceItem
from engine.sandbox import Sandbox, SandboxConfig

GOOD = {
    "name": "AK-47 | Redline (Field-Tested)",
    "count": 12,
    "min": 9_870,
    "platform_price": "11250",
    "img": "x.png",
    "type": "Rifle",
    "rarity_color": "d32ce6",
}


def _decode(body: bytes, piece: int) -> tuple[list[PriceItem], list[str]]:
    decoder = PricesDecoder()
    items: list[PriceItem] = []
    for start in range(0, len(body), piece):
        items += decoder.feed(body[start : start + piece])
    items += decoder.close()
    return items, decoder.set_aside


ODD_ROWS = [
    {"name": "A", "min": "abc"},
    {"name": "", "min": 10},
    {"count": 3},
    {"name": "B", "platform_price": -5},
    ["not", "an", "object"],
    {"name": "C", "min": True},
]


@pytest.mark.parametrize("piece", [1, 7, 64, 1 << 20])
@pytest.mark.parametrize(
    "shape",
    [
        lambda items: {"success": True, "items": items},
        lambda items: {"items": items, "success": True, "msg": None},
        lambda items: items,
    ],
    ids=["envelope", "items-first", "bare-array"],
)
def test_every_good_row_is_kept_and_each_odd_one_set_aside(piece: int, shape) -> None:  # type: ignore[no-untyped-def]
    rows = [
        GOOD,
        *ODD_ROWS,
        {
            **GOOD,
            "name": "★ Karambit | Doppler Ruby (Factory New)",
            "min": "27867.5",
            "platform_price": 30_000.0,
        },
    ]
    body = json.dumps(shape(rows), ensure_ascii=False).encode()
    items, set_aside = _decode(body, piece)
    assert [i.name for i in items] == [GOOD["name"], "★ Karambit | Doppler Ruby (Factory New)"]
    assert items[0].platform_price == 11_250
    assert items[0].min == 9_870
    assert items[0].count == 12
    assert items[1].min == 27_868
    assert items[1].platform_price == 30_000
    assert len(set_aside) == len(ODD_ROWS)
    assert set_aside[0].startswith("items[1].min")
    assert set_aside[4] == "items[5]: not an object"


@pytest.mark.parametrize(
    ("body", "error", "words"),
    [
        (b'{"success": false, "msg": "Please try again"}', Unavailable, "Please try again"),
        (b'{"success": true, "items": [' + json.dumps(GOOD).encode(), MalformedResponse, "cut off"),
        (b"<html>checking your browser</html>", MalformedResponse, "no `items`"),
        (b'{"success": true}', MalformedResponse, "no `items`"),
        (b'{"success": false, "items": []}', Unavailable, "refused"),
    ],
)
def test_a_broken_envelope_fails_the_call(body: bytes, error: type[Exception], words: str) -> None:
    with pytest.raises(error, match=words):
        _decode(body, 5)


@pytest.fixture
async def market(clock: VirtualClock) -> AsyncIterator[tuple[MarketClient, Sandbox]]:
    sandbox = Sandbox(SandboxConfig(seed=7), clock=clock)
    limiter = RateLimiter(clock)
    async with MarketClient(
        sandbox.api_key,
        base_url="http://sandbox",
        transport=httpx.ASGITransport(app=sandbox.app),
        limiter=limiter,
        clock=clock,
    ) as client:
        client.test_limiter = limiter  # type: ignore[attr-defined]
        yield client, sandbox


async def test_the_sandbox_price_list_agrees_with_its_market(
    market: tuple[MarketClient, Sandbox],
) -> None:
    client, sandbox = market
    async with client.prices(game="csgo") as stream:
        items = [item async for item in stream]
    assert stream.set_aside == []
    by_name = {item.name: item for item in items}
    now = sandbox.advance()
    listings = [x for x in sandbox.market.listings.values() if x.game == "csgo"]
    assert sum(item.count or 0 for item in items) == len(listings)
    one = listings[0]
    assert by_name[one.snapshot_name].min == min(
        x.price_at(now) for x in listings if x.snapshot_name == one.snapshot_name
    )
    assert by_name[one.snapshot_name].platform_price == one.platform_price
    assert any("Doppler" in name and "Phase" in name for name in by_name)
    used, _ = client.test_limiter.usage("search")  # type: ignore[attr-defined]
    assert used == 0  # outside the search budget


async def test_an_odd_row_from_the_service_never_sinks_the_list() -> None:
    body = json.dumps({"success": True, "items": [GOOD, {"name": "X", "min": "n/a"}]}).encode()

    def answer(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/v1/prices"
        assert request.url.params["api"] == "k" * 20
        return httpx.Response(200, content=body)

    seen: list[tuple[str, str, str | None]] = []
    async with MarketClient(
        "k" * 20, base_url="http://127.0.0.1", transport=httpx.MockTransport(answer)
    ) as client:
        # what the engine points at its status: snipe status and the malformed-items metric
        client.malformed_observer = lambda endpoint, item: seen.append(
            (endpoint, item.field, item.key)
        )
        async with client.prices() as stream:
            items = [item async for item in stream]
    assert [i.name for i in items] == [GOOD["name"]]
    assert stream.set_aside == ["items[1].min: not a number: 'n/a'"]
    assert seen == [("GET /v1/prices", "min", "name=X")]
