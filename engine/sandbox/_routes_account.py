"""Account, merchant and payment endpoints (interface.md 4.1, 4.5, 4.7)."""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from datetime import date
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlparse

from ._catalogue import GAMES
from ._http import BadRequest, Request, Response, json_response, route

if TYPE_CHECKING:
    from ._sandbox import Sandbox
    from ._trading import Account

TOKEN_LIFETIME = 6 * 3600.0
MERCHANT_PAGE = 200
_PLATFORM_ID64_BASE = 76561197960265728
_TRON_ADDRESS = re.compile(r"^T[1-9A-HJ-NP-Za-km-z]{33}$")
_PLATFORM_API_KEY = re.compile(r"^[0-9A-F]{32}$")
TRX_PRICE = 250  # USD x 1000 per TRX in the sandbox


@route("GET", "/v1/user")
def user(sandbox: Sandbox, request: Request, account: Account | None) -> Response:
    assert account is not None
    now = sandbox.now()
    return json_response(
        {
            "success": True,
            "user": {
                "wallet": account.balance,
                "can_p2p": account.can_p2p(now),
                "tradelink": account.tradelink,
                "id": account.account_id,
                "name": account.name,
                "sell_fees": 0.94,
                "penalties": 0,
            },
        }
    )


def _decode_token(token: Any) -> bytes | None:
    if not isinstance(token, str) or not token:
        return None
    try:
        decoded = base64.b64decode(token, validate=True)
    except (binascii.Error, ValueError):
        return None
    return decoded or None


@route("POST", "/v1/user")
def create_user(sandbox: Sandbox, request: Request, account: Account | None) -> Response:
    """A key for the account the access token belongs to; the same key on a second call."""
    body = request.json()
    raw = _decode_token(body.get("token"))
    if raw is None:
        return json_response({"success": False, "msg": "token: a base64 access token is required"})
    key = hashlib.sha256(b"sandbox-user:" + raw).hexdigest()[:32]
    is_new = sandbox.trading.account_for(key) is None
    if is_new:
        sandbox.add_account(key, balance=0)
    exp = int(sandbox.now() + TOKEN_LIFETIME)
    return json_response(
        {"success": True, "msg": None, "data": {"api": key, "isNew": is_new}, "exp": exp}
    )


@route("POST", "/v1/user/platform-token")
def platform_token(sandbox: Sandbox, request: Request, account: Account | None) -> Response:
    assert account is not None
    if _decode_token(request.json().get("token")) is None:
        return json_response({"success": False, "msg": "Access token needs refreshing"})
    account.platform_token_exp = sandbox.now() + TOKEN_LIFETIME
    return json_response({"success": True, "msg": None, "exp": int(account.platform_token_exp)})


@route("GET", "/v1/set-my-platformapi", bucket="set_platform_api")
def set_platform_api(sandbox: Sandbox, request: Request, account: Account | None) -> Response:
    assert account is not None
    key = request.arg("platform_api", required=True) or ""
    if not _PLATFORM_API_KEY.match(key.upper()):
        return json_response({"success": False, "msg": "Wrong platform API key"})
    account.platform_api = key
    return json_response({"success": True, "msg": None})


def _parse_tradelink(link: str) -> tuple[str, str] | None:
    try:
        parsed = urlparse(link)
    except ValueError:
        return None
    query = parse_qs(parsed.query)
    partner = (query.get("partner") or [""])[0]
    token = (query.get("token") or [""])[0]
    if parsed.scheme not in ("http", "https") or not partner.isdigit():
        return None
    if len(token) != 8 or not token.isalnum():
        return None
    return partner, token


@route("POST", "/v1/update-account")
def update_account(sandbox: Sandbox, request: Request, account: Account | None) -> Response:
    assert account is not None
    body = request.json()
    if "tradelink" in body:
        parsed = _parse_tradelink(str(body["tradelink"]))
        if parsed is None:
            return json_response({"success": False, "msg": "tradelink: not a valid trade link"})
        account.partner, account.token = parsed
    if "token" in body:
        if _decode_token(body["token"]) is None:
            return json_response({"success": False, "msg": "Access token needs refreshing"})
        account.platform_token_exp = sandbox.now() + TOKEN_LIFETIME
    if "platform_api" in body:
        if not _PLATFORM_API_KEY.match(str(body["platform_api"]).upper()):
            return json_response({"success": False, "msg": "Wrong platform API key"})
        account.platform_api = str(body["platform_api"])
    if "proxy" in body:
        account.proxy = str(body["proxy"]) or None
    if "webhook" in body:
        account.webhook = str(body["webhook"]) or None
    return json_response({"success": True, "msg": None})


@route("POST", "/v1/check-tradelink")
def check_tradelink(sandbox: Sandbox, request: Request, account: Account | None) -> Response:
    link = request.json().get("tradelink")
    if not isinstance(link, str) or not link:
        raise BadRequest("tradelink is required")
    parsed = _parse_tradelink(link)
    if parsed is None:
        return json_response(
            {
                "success": False,
                "link": link,
                "msg": "Invalid trade link",
                "info": "The link must carry a numeric partner and an 8-character token",
            }
        )
    partner, token = parsed
    if int(partner) % 97 == 13:  # a stable minority of accounts cannot trade
        return json_response(
            {
                "success": False,
                "link": link,
                "msg": "Trade link cannot be used",
                "info": "Inventory is private",
            }
        )
    return json_response(
        {
            "success": True,
            "link": link,
            "info": "",
            "msg": None,
            "token": token,
            "platformid32": int(partner),
            "platformid64": int(partner) + _PLATFORM_ID64_BASE,
        }
    )


# -- merchant --------------------------------------------------------------------------


def _merchant_error(msg: str) -> Response:
    return json_response({"status": "error", "msg": msg})


def _check_platform_id(value: str | None) -> None:
    if value is not None and not (value.isdigit() and len(value) == 17):
        raise BadRequest(f"platform_id: 17 digits expected, got {value!r}")


def _date(request: Request, name: str) -> date:
    text = request.arg(name, required=True) or ""
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise BadRequest(f"{name}: expected a date YYYY-MM-DD, got {text!r}") from None


@route("POST", "/v2/merchant/platform-inventory")
def merchant_inventory(sandbox: Sandbox, request: Request, account: Account | None) -> Response:
    body = request.json()
    for name in ("merchant", "game", "platform_id", "trade_url_token"):
        if not body.get(name):
            return _merchant_error(f"{name} is required")
    game = str(body["game"])
    if game not in GAMES:
        return _merchant_error(f"game: expected one of {', '.join(GAMES)}")
    platform_id, token = str(body["platform_id"]), str(body["trade_url_token"])
    if not (platform_id.isdigit() and len(platform_id) == 17):
        return _merchant_error("platform_id: 17 digits expected")
    if len(token) != 8:
        return _merchant_error("trade_url_token: 8 characters expected")
    items = sandbox.merchants.inventory(platform_id, game)
    return json_response({"status": "success", "items": items})


def _start_from(request: Request) -> int | None:
    return request.int_arg("start_from", minimum=0)


@route("GET", "/v2/merchant/deposits")
def merchant_deposits(sandbox: Sandbox, request: Request, account: Account | None) -> Response:
    merchant = request.arg("merchant", required=True) or ""
    platform_id = request.arg("platform_id")
    _check_platform_id(platform_id)
    start, end = _date(request, "start"), _date(request, "end")
    rows = sandbox.merchants.deposits(
        merchant, start=start, end=end, platform_id=platform_id, start_from=_start_from(request)
    )
    page = rows[:MERCHANT_PAGE]
    next_from = page[-1]["transaction_id"] if len(rows) > MERCHANT_PAGE else None
    return json_response({"status": "success", "deposits": page, "start_from": next_from})


@route("GET", "/v2/merchant/webhooks")
def merchant_webhooks(sandbox: Sandbox, request: Request, account: Account | None) -> Response:
    merchant = request.arg("merchant", required=True) or ""
    status = request.choice("status", ("pending", "completed", "failed"))
    rows = sandbox.merchants.webhooks(merchant, status=status, start_from=_start_from(request))
    page = rows[:MERCHANT_PAGE]
    next_from = page[-1]["id"] if len(rows) > MERCHANT_PAGE else None
    return json_response({"status": "success", "data": page, "start_from": next_from})


def _one_webhook_key(deposit_id: Any, transaction_id: Any) -> tuple[str | None, int | None]:
    if (deposit_id is None) == (transaction_id is None):
        raise BadRequest("give exactly one of deposit_id or transaction_id")
    if deposit_id is not None and len(str(deposit_id)) > 50:
        raise BadRequest("deposit_id: at most 50 characters")
    if transaction_id is not None:
        text = str(transaction_id)
        if not text.isdigit():
            raise BadRequest(f"transaction_id: expected an integer, got {transaction_id!r}")
        return None, int(text)
    return str(deposit_id), None


@route("GET", "/v2/merchant/webhook")
def merchant_webhook(sandbox: Sandbox, request: Request, account: Account | None) -> Response:
    merchant = request.arg("merchant", required=True) or ""
    deposit_id, transaction_id = _one_webhook_key(
        request.arg("deposit_id"), request.arg("transaction_id")
    )
    hook = sandbox.merchants.webhook(merchant, deposit_id=deposit_id, transaction_id=transaction_id)
    if hook is None:
        return _merchant_error("Webhook not found")
    return json_response({"status": "success", "data": hook})


@route("POST", "/v2/merchant/webhook/resend")
def merchant_resend(sandbox: Sandbox, request: Request, account: Account | None) -> Response:
    body = request.json()
    merchant = body.get("merchant")
    if not merchant:
        raise BadRequest("merchant is required")
    deposit_id, transaction_id = _one_webhook_key(
        body.get("deposit_id"), body.get("transaction_id")
    )
    hook = sandbox.merchants.webhook(
        str(merchant), deposit_id=deposit_id, transaction_id=transaction_id
    )
    if hook is None:
        return _merchant_error("Webhook not found")
    if hook["status"] not in ("completed", "failed"):
        return _merchant_error(
            f"Only a completed or failed webhook can be resent, not {hook['status']}"
        )
    sandbox.merchants.resend(hook, sandbox.now())
    return json_response({"status": "success"})


# -- payments --------------------------------------------------------------------------


@route("POST", "/v1/payment/tron-energy/rent")
def tron_rent(sandbox: Sandbox, request: Request, account: Account | None) -> Response:
    """5 TRX for 65000 energy (10 TRX for 131000 with ``energy: 131000``). ``total_cost``
    is in cents, as the interface describes it."""
    assert account is not None
    body = request.json()
    address = body.get("address")
    if not isinstance(address, str) or not _TRON_ADDRESS.match(address):
        return json_response(
            {
                "success": False,
                "address": address,
                "total_cost": 0,
                "msg": "address: not a Tron address",
            }
        )
    trx = 10 if body.get("energy") == 131000 else 5
    cost = trx * TRX_PRICE
    if not sandbox.trading.pay(account, cost, "tron-energy"):
        return json_response(
            {
                "success": False,
                "address": address,
                "total_cost": 0,
                "msg": "Not enough money on balance",
            }
        )
    return json_response(
        {"success": True, "address": address, "total_cost": cost // 10, "msg": None}
    )
