"""Buying (interface.md 4.3, 4.4, 4.8 and wire-notes.md): single and bulk purchases, buy
orders, purchases found by ``project_id``, history, force-check and the deprecated
polling endpoint."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ._catalogue import GAMES
from ._http import BadRequest, Request, Response, body_int, json_response, rfc3339, route
from ._trading import Refusal, Trade

if TYPE_CHECKING:
    from ._sandbox import Sandbox
    from ._trading import Account

MAX_PROJECT_ID = 50
MAX_PROJECT_IDS = 100
HISTORY_PAGE = 100


def _project_id(value: Any) -> str | None:
    if value is None or value == "":
        return None
    text = str(value)
    if len(text) > MAX_PROJECT_ID:
        raise BadRequest(f"project_id: at most {MAX_PROJECT_ID} characters, got {len(text)}")
    return text


def _item_id(value: Any) -> int | None:
    text = str(value).strip()
    return int(text) if text.isdigit() else None


def _refusal_body(refusal: Refusal) -> dict[str, Any]:
    return {"success": False, "msg": refusal.msg, **refusal.extra}


def _bought_fields(trade: Trade) -> dict[str, Any]:
    fields: dict[str, Any] = {"id": trade.id, "price": trade.price}
    if trade.unlock_at is not None:
        fields["purchase_status"] = "reserved"
        fields["unlock_at"] = rfc3339(trade.unlock_at)
        fields["send_until"] = rfc3339(trade.send_until)
    return fields


@route("GET", "/v1/buy-one-p2p", purchase=True)
def buy_one(sandbox: Sandbox, request: Request, account: Account | None) -> Response:
    assert account is not None
    item_text = request.arg("item_id", required=True) or ""
    token = request.arg("token", required=True) or ""
    partner = request.arg("partner", required=True) or ""
    ceiling = request.int_arg("price", required=True, minimum=0) or 0
    project_id = _project_id(request.arg("project_id"))
    allow_locked = request.flag("allow_trade_locked")
    trading = sandbox.trading
    item_id = _item_id(item_text)
    listing = sandbox.market.get(item_id) if item_id is not None else None
    refusal = trading.refusal(
        account, listing, ceiling, allow_trade_locked=allow_locked, partner=partner, token=token
    )
    if refusal is not None or listing is None:
        return json_response(_refusal_body(refusal or Refusal("Item sold")))
    trade = trading.commit(
        account, listing, partner=partner, project_id=project_id, source="buy-one-p2p"
    )
    return json_response({"success": True, **_bought_fields(trade)})


@route("GET", "/v1/buy-one-p2p-name", purchase=True)
def buy_by_name(sandbox: Sandbox, request: Request, account: Account | None) -> Response:
    """The cheapest listing of a name within the price; never a trade-locked one."""
    assert account is not None
    name = request.arg("name", required=True) or ""
    token = request.arg("token", required=True) or ""
    partner = request.arg("partner", required=True) or ""
    ceiling = request.int_arg("price", required=True, minimum=0) or 0
    project_id = _project_id(request.arg("project_id"))
    game = request.choice("game", GAMES)
    found = sandbox.market.cheapest(name, include_hold=False, game=game)
    if not found:
        return json_response({"success": False, "msg": "Item not found"})
    listing = found[0]
    refusal = sandbox.trading.refusal(
        account, listing, ceiling, allow_trade_locked=False, partner=partner, token=token
    )
    if refusal is not None:
        return json_response(_refusal_body(refusal))
    trade = sandbox.trading.commit(
        account, listing, partner=partner, project_id=project_id, source="buy-one-p2p-name"
    )
    return json_response(
        {"success": True, "item_id": str(listing.item_id), **_bought_fields(trade)}
    )


@route("POST", "/v1/buy", purchase=True)
def buy_bulk(sandbox: Sandbox, request: Request, account: Account | None) -> Response:
    """Bulk purchase (wire-notes.md working shape). Items succeed or fail independently,
    unless ``all`` is true: then every item is bought or none is."""
    assert account is not None
    body = request.json()
    raw_items = body.get("items")
    if not isinstance(raw_items, list) or not raw_items:
        raise BadRequest("items: a non-empty list is required")
    token, partner = str(body.get("token") or ""), str(body.get("partner") or "")
    all_or_none = body.get("all") is True
    allow_locked = body.get("allow_trade_locked") is True
    trading, market = sandbox.trading, sandbox.market
    wanted: list[tuple[str, int | None, int, str | None]] = []
    for index, raw in enumerate(raw_items):
        if not isinstance(raw, dict) or "item_id" not in raw:
            raise BadRequest(f"items[{index}]: an object with item_id and price is required")
        item_id = _item_id(raw["item_id"])
        ceiling = body_int(raw, "price", minimum=0)
        wanted.append((str(raw["item_id"]), item_id, ceiling, _project_id(raw.get("project_id"))))
    if len({w[1] for w in wanted}) != len(wanted):
        raise BadRequest("items: the same item_id is listed twice")
    if all_or_none:
        refusals = _dry_run(sandbox, account, wanted, allow_locked, partner, token)
        if any(r is not None for r in refusals):
            results = [
                {
                    "item_id": text,
                    "success": False,
                    "project_id": project_id,
                    **(_refusal_body(refusal) if refusal is not None else {"msg": _NOT_ALL}),
                }
                for (text, _, _, project_id), refusal in zip(wanted, refusals, strict=True)
            ]
            return json_response(
                {"success": False, "msg": "Not all items could be bought", "items": results}
            )
    results = []
    for text, item_id, ceiling, project_id in wanted:
        listing = market.get(item_id) if item_id is not None else None
        refusal = None
        if not all_or_none:  # checked above, all at once
            refusal = trading.refusal(
                account,
                listing,
                ceiling,
                allow_trade_locked=allow_locked,
                partner=partner,
                token=token,
            )
        if refusal is not None or listing is None:
            refusal = refusal or Refusal("Item sold")
            results.append({"item_id": text, "project_id": project_id, **_refusal_body(refusal)})
            continue
        trade = trading.commit(
            account, listing, partner=partner, project_id=project_id, source="buy"
        )
        results.append(
            {
                "item_id": text,
                "success": True,
                "project_id": project_id,
                "msg": None,
                **_bought_fields(trade),
            }
        )
    return json_response({"success": True, "msg": None, "items": results})


_NOT_ALL = "Not bought: another item of an all-or-nothing request failed"


def _dry_run(
    sandbox: Sandbox,
    account: Account,
    wanted: list[tuple[str, int | None, int, str | None]],
    allow_locked: bool,
    partner: str,
    token: str,
) -> list[Refusal | None]:
    """Would each item be bought, counting the money the earlier ones would spend?"""
    refusals: list[Refusal | None] = []
    spent = 0
    for _, item_id, ceiling, _ in wanted:
        listing = sandbox.market.get(item_id) if item_id is not None else None
        refusal = sandbox.trading.refusal(
            account,
            listing,
            ceiling,
            allow_trade_locked=allow_locked,
            partner=partner,
            token=token,
            spent_before=spent,
        )
        refusals.append(refusal)
        if refusal is None and listing is not None:
            spent += listing.price
    return refusals


def _project_entry(trade: Trade) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "id": trade.id,
        "project_id": trade.project_id,
        "price": trade.price,
        "name": trade.name,
        "status": trade.status,
        "done": trade.done,
        "trade_id": trade.trade_offer_id,
        "reason": trade.reason,
        "for_platformid64": str(76561197960265728 + int(trade.partner)),
        "send_until": str(int(trade.send_until)),  # numeric strings, as recorded answers
        "last_updated": str(int(trade.last_updated)),
        "counter": trade.counter,
    }
    if trade.unlock_at is not None:
        entry["escrow_status"] = trade.escrow_status
        entry["unlock_at"] = int(trade.unlock_at)
        entry["stage"] = trade.stage
    return entry


@route("GET", "/v1/check-many-project-id")
def check_project_ids(sandbox: Sandbox, request: Request, account: Account | None) -> Response:
    assert account is not None
    ids = request.args("id")
    if not ids:
        raise BadRequest("id is required (repeat it for several project ids)")
    if len(ids) > MAX_PROJECT_IDS:
        raise BadRequest(f"at most {MAX_PROJECT_IDS} ids per request, got {len(ids)}")
    trades = sandbox.trading.trades_for_projects(account, set(ids))
    return json_response(
        {"success": True, "msg": None, "trades": [_project_entry(t) for t in trades]}
    )


def _epoch_arg(value: Any, name: str) -> float | None:
    if value is None or value == "":
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    text = str(value).strip()
    try:
        if text.replace(".", "", 1).isdigit():
            return float(text)
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise BadRequest(
            f"{name}: expected a date, a time or epoch seconds, got {value!r}"
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


def _history(sandbox: Sandbox, request: Request, account: Account | None) -> Response:
    assert account is not None
    body = request.json()
    skip = body_int(body, "skip", minimum=0) if "skip" in body else 0
    start = _epoch_arg(body.get("start"), "start")
    end = _epoch_arg(body.get("end"), "end")
    sort = str(body.get("sort") or "DESC").upper()
    if sort not in ("ASC", "DESC"):
        raise BadRequest(f"sort: expected ASC or DESC, got {body.get('sort')!r}")
    trades = [
        t
        for t in sandbox.trading.history(account)
        if (start is None or t.created >= start) and (end is None or t.created <= end)
    ]
    if sort == "DESC":
        trades.reverse()
    page = trades[skip : skip + HISTORY_PAGE]
    rows = [
        {
            "id": t.id,
            "item_id": str(t.item_id),
            "name": t.name,
            "price": t.price,
            "give_amount": round(t.price * 0.95),
            "status": t.status,
            "created": int(t.created),
            "action": "buy",
            "project_id": t.project_id,
        }
        for t in page
    ]
    transactions = [{**row, "at": int(row["at"])} for row in sandbox.trading.transactions(account)]
    return json_response({"success": True, "data": {"trades": rows, "transactions": transactions}})


@route("POST", "/v2/my-history")
def history_v2(sandbox: Sandbox, request: Request, account: Account | None) -> Response:
    return _history(sandbox, request, account)


@route("POST", "/v1/my-history")
def history_v1(sandbox: Sandbox, request: Request, account: Account | None) -> Response:
    return _history(sandbox, request, account)


@route("POST", "/v1/create-buy-order", bucket="buy_order")
def create_buy_order(sandbox: Sandbox, request: Request, account: Account | None) -> Response:
    assert account is not None
    name = request.arg("name", required=True) or ""
    amount = request.int_arg("amount", required=True, minimum=1) or 1
    price = request.int_arg("price", required=True, minimum=1) or 1
    game = request.choice("game", GAMES)
    if game is None:
        raise BadRequest("game is required")
    item = sandbox.market.items_by_name.get(name)
    if item is None or item.game != game:
        return json_response({"success": False, "msg": f"Unknown item for game {game}: {name}"})
    order = sandbox.trading.place_order(account, name=name, game=game, price=price, amount=amount)
    return json_response(
        {"success": True, "msg": "Placed order", "filled": order.filled, "id": order.id}
    )


@route("GET", "/v1/buy-orders")
def list_buy_orders(sandbox: Sandbox, request: Request, account: Account | None) -> Response:
    assert account is not None
    offers = [
        {
            "id": o.id,
            "name": o.name,
            "price": o.price,
            "amount": o.amount,
            "filled": o.filled,
            "game": o.game,
        }
        for o in sandbox.trading.active_orders(account)
    ]
    return json_response({"success": True, "offers": offers})


@route("GET", "/v1/remove-buy-order", bucket="buy_order")
def remove_buy_order(sandbox: Sandbox, request: Request, account: Account | None) -> Response:
    assert account is not None
    ids = request.args("id")
    if not ids:
        raise BadRequest("id is required")
    bad = [value for value in ids if not value.strip().isdigit()]
    if bad:
        return json_response(
            {"success": False, "msg": f"id must be numeric, got {bad[0]!r}", "removed": 0}
        )
    removed = sandbox.trading.remove_orders(account, [int(value) for value in ids])
    return json_response({"success": True, "msg": None, "removed": removed})


@route("GET", "/v1/remove-all")
def remove_all(sandbox: Sandbox, request: Request, account: Account | None) -> Response:
    assert account is not None
    game = request.choice("game", GAMES)
    count = sandbox.remove_own_listings(account, game)
    return json_response({"success": True, "msg": None, "count": count})


@route("POST", "/v1/force-check-trade")
def force_check(sandbox: Sandbox, request: Request, account: Account | None) -> Response:
    assert account is not None
    body = request.json()
    raw = body.get("id", body.get("trade_id", request.arg("id") or request.arg("trade_id")))
    if raw is None:
        raise BadRequest("id is required (the trade id)")
    trade_id = _item_id(raw)
    if trade_id is None:
        raise BadRequest(f"id: expected a numeric trade id, got {raw!r}")
    refusal = sandbox.trading.force_check(account, trade_id)
    if refusal is not None:
        return json_response({"success": False, "msg": refusal})
    return json_response({"success": True, "msg": "Trade re-checked"})


@route("GET", "/v1/ready-to-transfer-p2p", auth=False)
def ready_to_transfer(sandbox: Sandbox, request: Request, account: Account | None) -> Response:
    """Deprecated seller polling, keyed by ``platform_api``. Sandbox accounts sell nothing
    to other people, so the list is empty; the key is still checked."""
    platform_api = request.arg("platform_api", required=True)
    known = any(a.platform_api == platform_api for a in sandbox.trading.accounts.values())
    if not known:
        return json_response({"success": False, "msg": "Wrong platform_api key"}, 403)
    return json_response({"success": True, "trades": []})
