"""``GET /v1/prices``: the per-item price list (interface.md 4.8; its shape as wire-notes.md
records it and docs/wire.md fixes it for this project).

One row per market name with live listings, and one per Doppler phase (the phase written
into the name, as the snapshot does): ``count`` listings, ``min`` the lowest price, the
``platform_price`` reference, ``img``, ``type``, ``rarity_color``. Variants on purpose
(wire-notes.md): every third ``platform_price`` is a numeric string. Not in the search
budget.
"""

from __future__ import annotations

import zlib
from typing import TYPE_CHECKING, Any

from ._catalogue import GAMES
from ._http import Request, Response, json_response, route
from ._market import Listing

if TYPE_CHECKING:
    from ._sandbox import Sandbox
    from ._trading import Account

_COLOURS = ("4b69ff", "8847ff", "d32ce6", "eb4b4b", "e4ae39")


@route("GET", "/v1/prices")
def prices(sandbox: Sandbox, request: Request, account: Account | None) -> Response:
    game = request.choice("game", GAMES)
    now = sandbox.advance()
    rows: dict[str, dict[str, Any]] = {}
    for listing in sandbox.market.listings.values():
        if game is not None and listing.game != game:
            continue
        row = rows.get(listing.snapshot_name)
        if row is None:
            rows[listing.snapshot_name] = row = _row(listing)
        row["count"] += 1
        price = listing.price_at(now)
        if row["min"] is None or price < row["min"]:
            row["min"] = price
    items = [rows[name] for name in sorted(rows)]
    return json_response({"success": True, "items": items})


def _row(listing: Listing) -> dict[str, Any]:
    name = listing.snapshot_name
    spin = zlib.crc32(name.encode())
    reference: int | str = listing.platform_price
    if spin % 3 == 0:
        reference = str(reference)
    return {
        "name": name,
        "count": 0,
        "min": None,
        "platform_price": reference,
        "img": listing.item.image,
        "type": listing.item.type or "",
        "rarity_color": _COLOURS[spin % len(_COLOURS)],
    }
