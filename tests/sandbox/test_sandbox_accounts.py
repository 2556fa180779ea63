"""Account, merchant and payment endpoints over HTTP (both backends)."""

from __future__ import annotations

import base64

from sandbox_support import Api

from engine import VirtualClock
from engine.sandbox import Sandbox

TOKEN = base64.b64encode(b"access-token-of-the-platform-account").decode()
MERCHANT = "shop-1"


async def test_user_shows_the_wallet(api: Api, sandbox: Sandbox) -> None:
    user = (await api.get("/v1/user"))["user"]
    assert user["wallet"] == sandbox.config.balance
    assert "partner=" in user["tradelink"]
    assert user["id"] == sandbox.default_account.account_id


async def test_create_user_returns_the_same_key_for_the_same_token(api: Api) -> None:
    first = await api.post("/v1/user", {"token": TOKEN})
    second = await api.post("/v1/user", {"token": TOKEN})
    assert first["data"]["isNew"] is True
    assert second["data"]["isNew"] is False
    assert first["data"]["api"] == second["data"]["api"]
    created = await api.get("/v1/user", api=first["data"]["api"])
    assert created["user"]["wallet"] == 0
    assert (await api.post("/v1/user", {"token": "%%%"}))["success"] is False


async def test_platform_token_puts_the_account_online_for_6_hours(
    api: Api, clock: VirtualClock
) -> None:
    bad = await api.post("/v1/user/platform-token", {"token": "not base64!"})
    assert bad["success"] is False
    assert "refresh" in bad["msg"]
    good = await api.post("/v1/user/platform-token", {"token": TOKEN})
    assert good["success"] is True
    assert good["exp"] == int(clock.now()) + 6 * 3600
    assert (await api.get("/v1/user"))["user"]["can_p2p"] is True
    clock.advance(6 * 3600 + 1)
    assert (await api.get("/v1/user"))["user"]["can_p2p"] is False


async def test_set_platform_api_key_is_checked_and_limited_to_5_per_minute(
    api: Api, clock: VirtualClock
) -> None:
    assert (await api.get("/v1/set-my-platformapi", platform_api="short"))["success"] is False
    for _ in range(4):
        assert (await api.get("/v1/set-my-platformapi", platform_api="A" * 32))["success"]
    await api.get("/v1/set-my-platformapi", platform_api="A" * 32)
    assert api.last is not None
    assert api.last.status_code == 429
    clock.advance(60.0)
    assert (await api.get("/v1/set-my-platformapi", platform_api="B" * 32))["success"]
    polled = await api.get("/v1/ready-to-transfer-p2p", platform_api="B" * 32)
    assert polled == {"success": True, "trades": []}
    await api.get("/v1/ready-to-transfer-p2p", platform_api="C" * 32)
    assert api.last is not None
    assert api.last.status_code == 403


async def test_check_tradelink_and_update_account(api: Api) -> None:
    link = "https://platform.invalid/tradeoffer/new/?partner=123456&token=AbCd1234"
    checked = await api.post("/v1/check-tradelink", {"tradelink": link})
    assert checked["success"] is True
    assert checked["platformid32"] == 123456
    assert checked["token"] == "AbCd1234"
    assert checked["platformid64"] == 76561197960265728 + 123456
    bad = await api.post("/v1/check-tradelink", {"tradelink": "https://x.invalid/?partner=1"})
    assert bad["success"] is False
    assert bad["info"]
    assert (await api.post("/v1/update-account", {"tradelink": link}))["success"] is True
    assert (await api.get("/v1/user"))["user"]["tradelink"].endswith(
        "partner=123456&token=AbCd1234"
    )
    assert (await api.post("/v1/update-account", {"tradelink": "nope"}))["success"] is False


async def test_merchant_inventory(api: Api) -> None:
    body = {
        "merchant": MERCHANT,
        "game": "csgo",
        "platform_id": "7" * 17,
        "trade_url_token": "abcd1234",
    }
    answer = await api.post("/v2/merchant/platform-inventory", body)
    assert answer["status"] == "success"
    assert answer["items"]
    assert any(i["limit"] == 0 for i in answer["items"])
    assert any(i["limit"] > 0 for i in answer["items"])
    assert not answer["items"][0]["icon_url"].startswith("http")  # relative, as documented
    wrong = await api.post("/v2/merchant/platform-inventory", {**body, "platform_id": "123"})
    assert wrong["status"] == "error"
    assert "platform_id" in wrong["msg"]


async def test_merchant_deposits_page_by_200_with_start_from(api: Api) -> None:
    params = {"merchant": MERCHANT, "start": "2025-01-01", "end": "2027-01-01"}
    first = await api.get("/v2/merchant/deposits", **params)
    assert len(first["deposits"]) == 200
    assert first["start_from"] is not None
    second = await api.get("/v2/merchant/deposits", **params, start_from=first["start_from"])
    ids = [d["transaction_id"] for d in first["deposits"] + second["deposits"]]
    assert len(ids) == len(set(ids))
    assert ids == sorted(ids)
    bad = await api.get(
        "/v2/merchant/deposits", merchant=MERCHANT, start="01/01/2025", end="2027-01-01"
    )
    assert bad["success"] is False
    assert "start" in bad["msg"]


async def test_merchant_webhooks_filter_fetch_and_resend(api: Api) -> None:
    pending = (await api.get("/v2/merchant/webhooks", merchant=MERCHANT, status="pending"))["data"]
    assert pending
    assert {w["status"] for w in pending} == {"pending"}
    failed = (await api.get("/v2/merchant/webhooks", merchant=MERCHANT, status="failed"))["data"][0]
    one = await api.get("/v2/merchant/webhook", merchant=MERCHANT, deposit_id=failed["deposit_id"])
    assert one["data"]["transaction_id"] == failed["transaction_id"]
    both = await api.get(
        "/v2/merchant/webhook", merchant=MERCHANT, deposit_id="x", transaction_id=1
    )
    assert both["success"] is False
    assert "exactly one" in both["msg"]
    resent = await api.post(
        "/v2/merchant/webhook/resend", {"merchant": MERCHANT, "deposit_id": failed["deposit_id"]}
    )
    assert resent == {"status": "success"}
    again = await api.get(
        "/v2/merchant/webhook", merchant=MERCHANT, deposit_id=failed["deposit_id"]
    )
    assert len(again["data"]["attempts"]) == len(failed["attempts"]) + 1
    refused = await api.post(
        "/v2/merchant/webhook/resend",
        {"merchant": MERCHANT, "deposit_id": pending[0]["deposit_id"]},
    )
    assert refused["status"] == "error"


async def test_tron_energy_rent_charges_the_balance(api: Api, sandbox: Sandbox) -> None:
    before = sandbox.default_account.balance
    address = "T" + "9" * 33
    body = await api.post("/v1/payment/tron-energy/rent", {"address": address})
    assert body["success"] is True
    assert body["address"] == address
    assert body["total_cost"] > 0
    assert sandbox.default_account.balance < before
    assert sandbox.ground_truth()["payments"][0]["type"] == "tron-energy"
    bad = await api.post("/v1/payment/tron-energy/rent", {"address": "0xabc"})
    assert bad["success"] is False
    assert "address" in bad["msg"]
