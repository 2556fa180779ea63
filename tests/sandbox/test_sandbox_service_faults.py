"""The fault knobs of issue 14 (purchase half), in-process on both backends: a purchase
hidden from check-many and history, an acceptance after send_until, a refusal after the
work (half of a bulk purchase), an answer without trades, a lagging service, and the log
of purchase requests."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from sandbox_support import Api, regular_listing

from engine import VirtualClock
from engine.sandbox import MarketConfig, Sandbox, SandboxConfig


async def _seen(api: Api, project_id: str) -> tuple[bool, bool]:
    """(in check-many-project-id, in my-history)"""
    trades = (await api.get("/v1/check-many-project-id", id=project_id))["trades"]
    rows = (await api.post("/v2/my-history", {"sort": "DESC"}))["data"]["trades"]
    return bool(trades), any(r["project_id"] == project_id for r in rows)


async def test_hidden_commit_buys_loses_the_answer_and_hides_the_trade(
    api: Api, sandbox: Sandbox, clock: VirtualClock
) -> None:
    sandbox.inject("GET /v1/buy-one-p2p", "hidden_commit", count=1, seconds=1_200)
    with pytest.raises(httpx.ReadTimeout):
        await api.buy(regular_listing(sandbox), project_id="ghost")
    assert [p["project_id"] for p in sandbox.ground_truth()["purchases"]] == ["ghost"]
    clock.advance(1_199)
    assert await _seen(api, "ghost") == (False, False)
    clock.advance(2)
    assert await _seen(api, "ghost") == (True, True)


async def test_late_accept_stays_sent_past_send_until_then_completes(
    api: Api, sandbox: Sandbox, clock: VirtualClock
) -> None:
    sandbox.inject("GET /v1/buy-one-p2p", "late_accept", count=1, seconds=600)
    answer = await api.buy(regular_listing(sandbox), project_id="late")
    assert answer["success"] is True
    clock.advance(900 + 300)  # past send_until (15 minutes)
    (trade,) = (await api.get("/v1/check-many-project-id", id="late"))["trades"]
    assert trade["status"] == 4
    assert int(trade["send_until"]) < clock.now()
    clock.advance(301)
    (trade,) = (await api.get("/v1/check-many-project-id", id="late"))["trades"]
    assert trade["status"] == 5
    assert sandbox.ground_truth()["refunds"] == []


async def test_refuse_after_commit_buys_half_a_bulk_purchase_and_says_no(
    api: Api, sandbox: Sandbox
) -> None:
    sandbox.inject("POST /v1/buy", "refuse_after_commit", count=1, portion=0.5)
    now = sandbox.now()
    listings = sorted(
        (li for li in sandbox.market.listings.values() if not li.locked(now)),
        key=lambda li: li.item_id,
    )[:4]
    items = [
        {"item_id": str(li.item_id), "price": li.price, "project_id": f"b-{n}"}
        for n, li in enumerate(listings)
    ]
    answer = await api.post("/v1/buy", {"items": items, **api.link, "all": False})
    assert answer == {"success": False, "msg": "System busy"}
    assert [p["project_id"] for p in sandbox.ground_truth()["purchases"]] == ["b-0", "b-1"]
    sent = [r["project_id"] for r in sandbox.ground_truth()["purchase_requests"]]
    assert sent == ["b-0", "b-1", "b-2", "b-3"]  # the log holds what was sent, all of it


async def test_empty_success_on_check_many(api: Api, sandbox: Sandbox) -> None:
    sandbox.inject("GET /v1/check-many-project-id", "empty_success", count=1)
    assert await api.get("/v1/check-many-project-id", id="x") == {"success": True}
    assert "trades" in await api.get("/v1/check-many-project-id", id="x")


async def test_a_scenario_can_make_check_many_and_history_lag(
    tmp_path: Path, clock: VirtualClock
) -> None:
    scenario = tmp_path / "lag.yaml"
    scenario.write_text("project_id_delay: 600\nhistory_delay: 120\n", "utf-8")
    sandbox = Sandbox(
        SandboxConfig(seed=7, market=MarketConfig(size=300)), clock=clock, scenario=scenario
    )
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=sandbox.app), base_url="http://sandbox"
    ) as http:
        api = Api(http, sandbox)
        await api.buy(regular_listing(sandbox), project_id="slow")
        clock.advance(121)
        assert await _seen(api, "slow") == (False, True)
        clock.advance(480)
        assert await _seen(api, "slow") == (True, True)
