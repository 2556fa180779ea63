"""Searching, the catalogue and the snapshot over HTTP (raw requests, both backends)."""

from __future__ import annotations

import gzip

import pytest
from sandbox_support import Api, busiest_name

from engine import VirtualClock
from engine.sandbox import Sandbox

AUTHENTICATED = [
    ("GET", "/v1/user"),
    ("GET", "/v2/search-items-by-name"),
    ("GET", "/v1/search-items-by-name"),
    ("GET", "/v1/get-items-list"),
    ("GET", "/v2/get-items-list"),
    ("GET", "/v1/buy-one-p2p"),
    ("GET", "/v1/buy-one-p2p-name"),
    ("POST", "/v1/buy"),
    ("GET", "/v1/check-many-project-id"),
    ("POST", "/v2/my-history"),
    ("POST", "/v1/create-buy-order"),
    ("GET", "/v1/buy-orders"),
    ("GET", "/v1/remove-buy-order"),
    ("GET", "/v1/remove-all"),
    ("POST", "/v1/force-check-trade"),
    ("GET", "/v1/list-items-platform"),
    ("GET", "/v1/get-platform-items"),
    ("POST", "/v1/update-account"),
    ("POST", "/v1/user"),
    ("POST", "/v1/user/platform-token"),
    ("GET", "/v1/set-my-platformapi"),
    ("POST", "/v1/check-tradelink"),
    ("POST", "/v2/merchant/platform-inventory"),
    ("GET", "/v2/merchant/deposits"),
    ("GET", "/v2/merchant/webhooks"),
    ("GET", "/v2/merchant/webhook"),
    ("POST", "/v2/merchant/webhook/resend"),
    ("POST", "/v1/payment/tron-energy/rent"),
]


@pytest.mark.parametrize(("method", "path"), AUTHENTICATED)
@pytest.mark.parametrize("key", [None, "not-a-key"])
async def test_an_unknown_or_missing_key_gets_403(
    api: Api, method: str, path: str, key: str | None
) -> None:
    params = {"api": key} if key else {}
    response = await api.http.request(method, path, params=params)
    assert response.status_code == 403
    assert response.json()["success"] is False


async def test_unknown_path_is_404_and_wrong_method_405(api: Api) -> None:
    assert (await api.http.get("/v1/nope")).status_code == 404
    assert (await api.http.post("/v1/user", params={"api": api.key})).status_code != 405
    assert (await api.http.delete("/v1/user", params={"api": api.key})).status_code == 405


async def test_search_returns_at_most_50_per_name_cheapest_first(
    api: Api, sandbox: Sandbox
) -> None:
    name = busiest_name(sandbox)
    assert len(sandbox.market.by_name[name]) > 50
    body = await api.get("/v2/search-items-by-name", name=[name, "No Such Item"])
    listings = body["items"][name]
    assert len(listings) == 50
    prices = [entry["price"] for entry in listings]
    assert prices == sorted(prices)
    assert body["items"]["No Such Item"] == []
    assert all(entry["phase"] == "" for entry in listings)
    assert {type(entry["item_id"]) for entry in listings} == {int, str}  # wire variants
    assert all("unlock_at" not in entry for entry in listings)


async def test_search_refuses_more_than_50_names(api: Api) -> None:
    body = await api.get("/v2/search-items-by-name", name=[f"Item {n}" for n in range(51)])
    assert body["success"] is False
    assert "50" in body["msg"]


async def test_include_hold_adds_trade_locked_listings_with_times(
    api: Api, sandbox: Sandbox
) -> None:
    now = sandbox.now()
    name = max(
        (n for n, listings in sandbox.market.by_name.items() if len(listings) <= 50),
        key=lambda n: sum(li.locked(now) for li in sandbox.market.by_name[n].values()),
    )
    plain = (await api.get("/v2/search-items-by-name", name=name))["items"][name]
    held = (await api.get("/v2/search-items-by-name", name=name, include_hold="true"))["items"][
        name
    ]
    assert len(held) > len(plain)
    locked = [entry for entry in held if "unlock_at" in entry]
    assert locked
    assert all(entry["send_until"] > entry["unlock_at"] for entry in locked)
    assert all(entry["unlock_at"].endswith("Z") for entry in locked)


async def test_v2_search_has_stickers_and_reference_price_v1_does_not(
    api: Api, sandbox: Sandbox
) -> None:
    name = next(
        n for n, ls in sandbox.market.by_name.items() if any(li.stickers for li in ls.values())
    )
    v2 = (await api.get("/v2/search-items-by-name", name=name))["items"][name]
    v1 = (await api.get("/v1/search-items-by-name", names=name))["items"]
    assert v1  # v1: one array of listings, not keyed by name
    assert all(entry["name"] == name for entry in v1)
    assert any(entry["stickers"] for entry in v2)
    assert all("platform_price" in e or "platform_price_number" in e for e in v2)
    assert all("stickers" not in entry and "platform_price" not in entry for entry in v1)
    sticker = next(s for entry in v2 for s in entry["stickers"])
    assert set(sticker) == {"name", "image", "wear", "slot", "price"}


async def test_a_phase_in_the_name_filters_unless_ignore_phase(api: Api, sandbox: Sandbox) -> None:
    base = max(
        (n for n in sandbox.market.by_name if sandbox.market.items_by_name[n].phases),
        key=lambda n: len(sandbox.market.by_name[n]),
    )
    phases = {li.phase for li in sandbox.market.by_name[base].values()}
    phase = sorted(phases)[0]
    head, _, tail = base.rpartition(" (")
    phased = f"{head} {phase} ({tail}"
    only = (await api.get("/v2/search-items-by-name", name=phased, include_hold=1))["items"][phased]
    assert only
    assert {entry["phase"] for entry in only} == {phase}
    every = await api.get("/v2/search-items-by-name", name=phased, include_hold=1, ignore_phase=1)
    assert len(every["items"][phased]) == min(50, len(sandbox.market.by_name[base]))


async def test_the_21st_search_in_a_window_gets_429_with_ms_before_next(
    api: Api, clock: VirtualClock
) -> None:
    for n in range(20):
        clock.advance(1.0)
        body = await api.get("/v2/search-items-by-name", name="Revolution Case")
        assert body["success"] is True, n
    body = await api.get("/v1/search-items-by-name", name="Revolution Case")  # shared counter
    assert api.last is not None
    assert api.last.status_code == 429
    assert body["success"] is False
    assert body["msBeforeNext"] == 41_000  # the first call leaves the window 41 s from now
    clock.advance(41.0)
    assert (await api.get("/v2/search-items-by-name", name="Revolution Case"))["success"] is True


async def test_catalogue_filters_and_orders(api: Api) -> None:
    body = await api.get(
        "/v2/get-items-list", game="csgo", exterior="FN", min_price=1000, max_price=50_000,
        order="asc", limit=100,
    )  # fmt: skip
    items = body["items"]
    assert items
    assert body["count"] == len(items) <= 100
    assert all(i["name"].endswith("(Factory New)") and 1000 <= i["price"] <= 50_000 for i in items)
    assert [i["price"] for i in items] == sorted(i["price"] for i in items)
    knives = (await api.get("/v1/get-items-list", brand="knife", search="karambit"))["items"]
    assert knives
    assert all("Karambit" in i["name"] and i["brand"] == "knife" for i in knives)
    by_profit = (await api.get("/v2/get-items-list", order_by="profit", sort="DESC"))["items"]
    profits = [i["best_deals"] for i in by_profit]
    assert profits == sorted(profits, reverse=True)
    assert all(i["best_deals"] == i["platform_price"] - i["price"] for i in by_profit)
    by_discount = (await api.get("/v2/get-items-list", order_by="discount", order="asc"))["items"]
    discounts = [i["discount"] for i in by_discount]
    assert discounts == sorted(discounts)


@pytest.mark.parametrize(
    ("path", "params", "fragment"),
    [
        ("/v1/get-items-list", {"skip": 5001}, "skip"),
        ("/v2/get-items-list", {"limit": 0}, "limit"),
        ("/v2/get-items-list", {"limit": 101}, "limit"),
        ("/v2/get-items-list", {"order_by": "name"}, "order_by"),
        ("/v2/get-items-list", {"cursor": "garbage!"}, "cursor"),
        ("/v2/get-items-list", {"min_price": "cheap"}, "min_price"),
    ],
)
async def test_catalogue_refuses_bad_parameters_naming_them(
    api: Api, path: str, params: dict[str, object], fragment: str
) -> None:
    body = await api.get(path, **params)
    assert body["success"] is False
    assert fragment in body["msg"]


async def test_v1_skip_pages_and_caps_at_5000_rows(api: Api, sandbox: Sandbox) -> None:
    first = await api.get("/v1/get-items-list", order="asc")
    second = await api.get("/v1/get-items-list", order="asc", skip=100)
    assert first["count"] == second["count"] == 100
    assert first["has_more"]
    assert not {i["item_id"] for i in first["items"]} & {i["item_id"] for i in second["items"]}
    assert first["items"][-1]["price"] <= second["items"][0]["price"]
    last = await api.get("/v1/get-items-list", order="asc", skip=5000)
    assert last["success"] is True
    assert last["items"] == []
    assert last["has_more"] is False


async def test_cursor_walk_over_a_changing_market_returns_each_listing_at_most_once(
    api: Api, sandbox: Sandbox, clock: VirtualClock
) -> None:
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        params: dict[str, object] = {"limit": 50, "order": "asc", "include_hold": 1}
        if cursor:
            params["cursor"] = cursor
        page = await api.get("/v2/get-items-list", **params)
        seen += [item["item_id"] for item in page["items"]]
        pages += 1
        if not page["has_more"]:
            assert "next_cursor" not in page
            break
        cursor = page["next_cursor"]
        clock.advance(120.0)  # listings arrive, leave and change price between pages
        if pages == 2:  # a listing not yet walked past gets much cheaper: still not twice
            walked = set(seen)
            ahead = next(
                li for li in sandbox.market.listings.values() if str(li.item_id) not in walked
            )
            ahead.price, ahead.edits = 10, [*ahead.edits, (sandbox.now(), 10)]
    assert pages > 10
    assert len(seen) == len(set(seen))
    assert sandbox.market.departed > 0


async def test_cursor_price_and_item_id_continue_a_walk(api: Api) -> None:
    first = await api.get("/v2/get-items-list", limit=10, order="asc")
    last = first["items"][-1]
    second = await api.get(
        "/v2/get-items-list", limit=10, order="asc",
        cursor_price=last["price"], cursor_item_id=last["item_id"],
    )  # fmt: skip
    by_cursor = await api.get(
        "/v2/get-items-list", limit=10, order="asc", cursor=first["next_cursor"]
    )
    assert [i["item_id"] for i in second["items"]] == [i["item_id"] for i in by_cursor["items"]]
    assert not {i["item_id"] for i in first["items"]} & {i["item_id"] for i in second["items"]}


async def test_a_cursor_is_refused_for_another_query(api: Api) -> None:
    first = await api.get("/v2/get-items-list", limit=10, order="asc")
    body = await api.get("/v2/get-items-list", limit=10, order="desc", cursor=first["next_cursor"])
    assert body["success"] is False
    assert "cursor" in body["msg"]


async def test_snapshot_needs_no_key_and_is_rebuilt_every_10_seconds(
    api: Api, sandbox: Sandbox, clock: VirtualClock
) -> None:
    first = (await api.http.get("/v1/prices/snapshot")).json()
    assert first["success"] is True
    assert first["items"]
    gone = first["items"][0]["item_id"]
    sandbox.market.remove(int(gone))  # the market changes...
    clock.advance(9.0)
    same = (await api.http.get("/v1/prices/snapshot")).json()
    assert same == first  # ...but the snapshot is only rebuilt every 10 s
    clock.advance(1.0)
    fresh = (await api.http.get("/v1/prices/snapshot")).json()
    assert fresh["timestamp"] == first["timestamp"] + 10
    assert gone not in {row["item_id"] for row in fresh["items"]}


async def test_snapshot_as_gzip_csv_with_hold_columns(api: Api, sandbox: Sandbox) -> None:
    response = await api.http.get(
        "/v1/prices/snapshot", params={"format": "csv", "include_hold": 1}
    )
    assert response.headers["content-type"] == "application/gzip"
    lines = gzip.decompress(response.content).decode().splitlines()
    assert lines[0] == "item_id,name,price,auto,inspect,unlock_at,send_until"
    assert len(lines) - 1 == len(sandbox.market.listings)
    csgo = await api.http.get("/v1/prices/snapshot", params={"format": "csv", "game": "rust"})
    rust_rows = gzip.decompress(csgo.content).decode().splitlines()[1:]
    rust_names = {li.snapshot_name for li in sandbox.market.listings.values() if li.game == "rust"}
    assert rust_rows
    assert {row.split(",")[1] for row in rust_rows} <= rust_names


async def test_platform_items_and_own_listings(api: Api) -> None:
    items = await api.get("/v1/get-platform-items", game="rust")
    assert items["success"]
    assert all(i["game_id"] == 252490 for i in items["items"])
    assert (await api.get("/v1/get-platform-items"))["success"] is False  # game is required
    own = await api.get("/v1/list-items-platform")
    assert len(own["items"]) == 4
    assert {"item_id", "price", "position", "platform_price"} <= set(own["items"][0])
    removed = await api.get("/v1/remove-all")
    assert removed == {"success": True, "msg": None, "count": 4}
    assert (await api.get("/v1/list-items-platform"))["items"] == []
