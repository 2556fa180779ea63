"""Searching and listing (interface.md 4.2): search by name (v1, v2), the catalogue (v1,
v2), own listings, recommended prices and the prices snapshot.

Answers use the wire's variants on purpose (wire-notes.md, docs/wire.md), so a client's
leniency is exercised: some ``item_id`` values are integers in searches, ``phase`` is ``""``
on items without one, some v2 answers name the reference price ``platform_price_number``
(some with ``platform_price: null`` beside it), sticker wear can be ``null``, so can
``sticker_names`` on a listing without stickers, v1 search answers one array, and unknown
extra fields appear.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._browse import MAX_SKIP, CatalogueQuery, Cursor, catalogue_page, sort_value
from ._catalogue import GAMES
from ._http import BadRequest, Request, Response, json_response, rfc3339, route
from ._market import Listing
from ._snapshot import gzip_chunks

if TYPE_CHECKING:
    from ._sandbox import Sandbox
    from ._trading import Account

MAX_NAMES = 50
MAX_PER_NAME = 50
_GAME_IDS = {"csgo": 730, "dota2": 570, "rust": 252490, "tf2": 440}


def _hold_fields(listing: Listing, now: float, entry: dict[str, Any]) -> None:
    if listing.locked(now) and listing.unlock_at is not None:
        entry["unlock_at"] = rfc3339(listing.unlock_at)
        entry["send_until"] = rfc3339(listing.send_until or listing.unlock_at)


def search_entry(
    listing: Listing, now: float, *, v2: bool, minified: bool, delivery: bool
) -> dict[str, Any]:
    item_id: int | str = listing.item_id if listing.item_id % 4 == 0 else str(listing.item_id)
    entry: dict[str, Any] = {
        "name": listing.name,
        "price": listing.price,
        "image": listing.item.image,
        "item_id": item_id,
        "phase": listing.phase or "",
    }
    if listing.float_value is not None:
        entry["float"] = listing.float_value
    if v2:
        reference_key = "platform_price_number" if listing.item_id % 5 == 0 else "platform_price"
        entry[reference_key] = listing.platform_price
        if listing.item_id % 10 == 0:  # the live feed: a null in one, the number in the other
            entry["platform_price"] = None
        names = [s.name for s in listing.stickers]
        # the live feed sends null for "no stickers" on some listings
        entry["sticker_names"] = names if names or listing.item_id % 3 else None
        entry["stickers"] = [
            {"name": s.name, "image": s.image, "wear": s.wear, "slot": s.slot, "price": s.price}
            for s in listing.stickers
        ]
    _hold_fields(listing, now, entry)
    entry["auto"] = listing.item_id % 7 == 0  # an undocumented extra, as the live service sends
    if not minified:
        entry["paintseed"] = listing.paintseed
        entry["paintindex"] = listing.item_id % 1000
        entry["inspect"] = f"steam://rungame/730/+csgo_econ_action_preview%20A{listing.item_id}"
    if delivery:
        entry["delivery"] = {"hold": listing.locked(now), "avg_minutes": 7}
    return entry


def _search(sandbox: Sandbox, request: Request, *, v2: bool) -> Response:
    # v1 takes the names as repeated ``names=`` (as public clients send them), v2 ``name=``
    names = request.args("name") if v2 else request.args("names") or request.args("name")
    if not names:
        wanted = "name" if v2 else "names"
        raise BadRequest(f"{wanted} is required (repeat it for several names)")
    if len(names) > MAX_NAMES:
        raise BadRequest(f"at most {MAX_NAMES} names per request, got {len(names)}")
    market, now = sandbox.market, sandbox.now()
    include_hold = request.flag("include_hold")
    ignore_phase = request.flag("ignore_phase")
    game = request.choice("game", GAMES)
    minified = request.arg("minified") != "0"
    delivery = request.arg("delivery_details") == "1"
    items: dict[str, list[dict[str, Any]]] = {}
    for name in names:
        base, phase = market.phased_names.get(name, (name, None))
        found = market.cheapest(base, include_hold=include_hold, game=game)
        if phase is not None and not ignore_phase:
            found = [listing for listing in found if listing.phase == phase]
        items[name] = [
            search_entry(listing, now, v2=v2, minified=minified, delivery=delivery)
            for listing in found[:MAX_PER_NAME]
        ]
    if not v2:  # v1 answers one array of listings; only v2 keys them by name
        return json_response({"success": True, "items": [e for es in items.values() for e in es]})
    return json_response({"success": True, "items": items})


@route("GET", "/v2/search-items-by-name", bucket="search")
def search_v2(sandbox: Sandbox, request: Request, account: Account | None) -> Response:
    return _search(sandbox, request, v2=True)


@route("GET", "/v1/search-items-by-name", bucket="search")
def search_v1(sandbox: Sandbox, request: Request, account: Account | None) -> Response:
    return _search(sandbox, request, v2=False)


def catalogue_entry(listing: Listing, now: float) -> dict[str, Any]:
    reference = listing.platform_price
    entry: dict[str, Any] = {
        "name": listing.name,
        "price": listing.price,
        "best_deals": reference - listing.price,
        "discount": sort_value(listing, "discount", listing.price),
        "platform_price": reference,
        "image": listing.item.image,
        "item_id": str(listing.item_id),
    }
    if listing.float_value is not None:
        entry["float"] = listing.float_value
    if listing.item.brand:
        entry["brand"] = listing.item.brand
    if listing.item.type:
        entry["type"] = listing.item.type
    if listing.phase:
        entry["phase"] = listing.phase
    _hold_fields(listing, now, entry)
    return entry


def _catalogue(sandbox: Sandbox, request: Request, *, v2: bool) -> Response:
    query = CatalogueQuery.from_request(request)
    now = sandbox.now()
    limit = request.int_arg("limit", minimum=1, maximum=100) if v2 else None
    skip = request.int_arg("skip", minimum=0, maximum=MAX_SKIP) or 0
    cursor = None
    if v2:
        cursor_text = request.arg("cursor")
        if cursor_text is not None:
            cursor = Cursor.decode(cursor_text, query)
        elif request.arg("cursor_price") is not None or request.arg("cursor_item_id") is not None:
            value = request.arg("cursor_price", required=True)
            item_id = request.int_arg("cursor_item_id", required=True)
            try:
                number = float(value or "")
            except ValueError:
                raise BadRequest(f"cursor_price: expected a number, got {value!r}") from None
            cursor = Cursor(number, item_id or 0, now, query.fingerprint())
    page = catalogue_page(
        list(sandbox.market.listings.values()),
        query,
        now=now,
        limit=limit or 100,
        skip=skip,
        cursor=cursor,
        row_cap=None if v2 else MAX_SKIP,
    )
    body: dict[str, Any] = {
        "success": True,
        "items": [catalogue_entry(listing, now) for listing in page.listings],
        "count": len(page.listings),
        "has_more": page.has_more,
    }
    if v2 and page.next_cursor is not None:
        body["next_cursor"] = page.next_cursor
    return json_response(body)


@route("GET", "/v1/get-items-list")
def catalogue_v1(sandbox: Sandbox, request: Request, account: Account | None) -> Response:
    return _catalogue(sandbox, request, v2=False)


@route("GET", "/v2/get-items-list")
def catalogue_v2(sandbox: Sandbox, request: Request, account: Account | None) -> Response:
    return _catalogue(sandbox, request, v2=True)


@route("GET", "/v1/get-platform-items")
def platform_items(sandbox: Sandbox, request: Request, account: Account | None) -> Response:
    game = request.choice("game", GAMES)
    if game is None:
        raise BadRequest("game is required")
    items = [
        {
            "name": item.name,
            "average": item.reference,
            "game_id": _GAME_IDS[game],
            "type": item.type or "",
            "collection": item.collection or "",
            "ru_name": item.name,
        }
        for item in sandbox.market.items
        if item.game == game
    ]
    return json_response({"success": True, "items": items})


@route("GET", "/v1/list-items-platform")
def own_listings(sandbox: Sandbox, request: Request, account: Account | None) -> Response:
    assert account is not None
    game = request.choice("game", GAMES)
    rows = [row for row in sandbox.own_listings(account) if game is None or row["game"] == game]
    return json_response({"success": True, "items": [_own_entry(row) for row in rows]})


def _own_entry(row: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in row.items() if key != "game"}


@route("GET", "/v1/prices/snapshot", auth=False)
def snapshot(sandbox: Sandbox, request: Request, account: Account | None) -> Response:
    game = request.choice("game", GAMES)
    include_hold = request.flag("include_hold")
    if request.arg("format") == "csv" and sandbox.snapshot_building():
        response = json_response({"success": False, "msg": "Snapshot is being built"}, 503)
        response.headers.append((b"retry-after", b"1"))
        return response
    snap = sandbox.snapshot()
    if request.arg("format") == "csv":
        chunks = gzip_chunks(snap.csv_chunks(include_hold=include_hold, game=game))
        headers = [
            (b"content-type", b"application/gzip"),
            (b"content-disposition", b'attachment; filename="snapshot.csv.gz"'),
        ]
        return Response(200, chunks, headers)
    chunks = snap.json_chunks(include_hold=include_hold, game=game, compact=request.flag("compact"))
    return Response(200, chunks, [(b"content-type", b"application/json; charset=utf-8")])
