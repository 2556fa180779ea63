"""Fault injection and ground truth, in-process (both backends)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from sandbox_support import Api, regular_listing

from engine import VirtualClock
from engine.sandbox import MarketConfig, Sandbox, SandboxConfig


async def test_timeout_after_commit_raises_a_timeout_but_the_purchase_happened(
    api: Api, sandbox: Sandbox, clock: VirtualClock
) -> None:
    sandbox.inject("GET /v1/buy-one-p2p", "timeout_after_commit", count=1)
    listing = regular_listing(sandbox)
    with pytest.raises(httpx.ReadTimeout):
        await api.buy(listing, project_id="lost-1")
    truth = sandbox.ground_truth()
    assert [p["project_id"] for p in truth["purchases"]] == ["lost-1"]
    assert truth["faults_fired"][0]["kind"] == "timeout_after_commit"
    clock.advance(60.0)
    trades = (await api.get("/v1/check-many-project-id", id="lost-1"))["trades"]
    assert [t["project_id"] for t in trades] == ["lost-1"]
    again = await api.buy(listing)  # buying again to find out is exactly the trap
    assert again == {"success": False, "msg": "Item sold"}


async def test_dropped_connection_on_a_purchase_happens_after_the_commit(
    api: Api, sandbox: Sandbox
) -> None:
    sandbox.inject("/v1/buy-one-p2p", "drop_connection", count=1)
    with pytest.raises(httpx.RemoteProtocolError):
        await api.buy(regular_listing(sandbox), project_id="dropped")
    assert [p["project_id"] for p in sandbox.ground_truth()["purchases"]] == ["dropped"]


@pytest.mark.parametrize(("commit", "bought"), [(None, 0), (True, 1)])
async def test_5xx_with_an_html_page_optionally_after_the_commit(
    api: Api, sandbox: Sandbox, commit: bool | None, bought: int
) -> None:
    sandbox.inject("GET /v1/buy-one-p2p", "http_error", count=1, status=502, commit=commit)
    listing = regular_listing(sandbox)
    params = {"api": api.key, "item_id": listing.item_id, "price": listing.price, **api.link}
    response = await api.http.get("/v1/buy-one-p2p", params=params)
    assert response.status_code == 502
    assert response.headers["content-type"].startswith("text/html")
    assert "Bad Gateway" in response.text
    assert len(sandbox.ground_truth()["purchases"]) == bought


async def test_a_200_with_an_html_body(api: Api, sandbox: Sandbox) -> None:
    sandbox.inject("GET /v1/user", "html_200", count=1)
    response = await api.http.get("/v1/user", params={"api": api.key})
    assert response.status_code == 200
    assert response.text.startswith("<!DOCTYPE html>")
    assert (await api.get("/v1/user"))["success"] is True


async def test_a_429_storm_then_normal_service(api: Api, sandbox: Sandbox) -> None:
    sandbox.inject("GET /v2/search-items-by-name", "rate_limit", count=3, retry_ms=1500)
    statuses = []
    for _ in range(4):
        body = await api.get("/v2/search-items-by-name", name="Revolution Case")
        assert api.last is not None
        statuses.append(api.last.status_code)
    assert statuses == [429, 429, 429, 200]
    assert body["success"] is True


async def test_snapshot_429_carries_retry_after(api: Api, sandbox: Sandbox) -> None:
    sandbox.inject("GET /v1/prices/snapshot", "rate_limit", count=1)
    response = await api.http.get("/v1/prices/snapshot", params={"format": "csv"})
    assert response.status_code == 429
    assert response.headers["retry-after"] == "1"


async def test_system_busy_fault(api: Api, sandbox: Sandbox) -> None:
    sandbox.inject("GET /v1/buy-one-p2p", "system_busy", count=1)
    assert await api.buy(regular_listing(sandbox)) == {"success": False, "msg": "System busy"}
    assert sandbox.ground_truth()["purchases"] == []


async def test_latency_is_market_time(api: Api, sandbox: Sandbox, clock: VirtualClock) -> None:
    sandbox.inject("GET /v1/user", "latency", count=1, seconds=30.0)
    before = clock.now()
    async with clock.autojump():
        assert (await api.get("/v1/user"))["success"] is True
    assert clock.now() - before == pytest.approx(30.0)


async def test_scenario_file_drives_faults(tmp_path: Path, clock: VirtualClock) -> None:
    path = tmp_path / "scenario.json"
    path.write_text('{"faults": [{"endpoint": "*", "kind": "http_error", "count": 2}]}')
    sandbox = Sandbox(SandboxConfig(market=MarketConfig(size=100)), clock=clock, scenario=path)
    transport = httpx.ASGITransport(app=sandbox.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://s") as http:
        codes = [
            (await http.get("/v1/user", params={"api": sandbox.api_key})).status_code
            for _ in range(3)
        ]
    assert codes == [503, 503, 200]


async def test_faults_can_be_armed_over_http(api: Api) -> None:
    armed = await api.http.post(
        "/_sandbox/faults", json={"endpoint": "GET /v1/user", "kind": "http_error", "count": 1}
    )
    assert armed.status_code == 200
    assert (await api.http.get("/v1/user", params={"api": api.key})).status_code == 503
    bad = await api.http.post(
        "/_sandbox/faults", json={"endpoint": "GET /v1/user", "kind": "nope", "count": 1}
    )
    assert bad.status_code == 400
    assert "kind" in bad.json()["msg"]


async def test_ground_truth_counts_requests_and_never_shows_a_key(
    api: Api, sandbox: Sandbox
) -> None:
    await api.get("/v1/user")
    await api.http.get("/v1/user", params={"api": "wrong"})
    await api.buy(regular_listing(sandbox), project_id="gt")
    response = await api.http.get("/_sandbox/ground-truth")
    truth = response.json()
    assert truth["requests"]["GET /v1/user"] == 2
    assert truth["requests"]["GET /v1/user 403"] == 1
    assert truth["purchases"][0]["project_id"] == "gt"
    assert truth["balances"][truth["default_account"]] == sandbox.default_account.balance
    assert api.key not in response.text
    assert api.key not in repr(sandbox.default_account)
    assert api.key not in repr(sandbox)
    assert "secret-key" not in repr(SandboxConfig(api_key="secret-key"))


async def test_csv_snapshot_answers_503_while_being_built(clock: VirtualClock) -> None:
    config = SandboxConfig(market=MarketConfig(size=100), snapshot_build_seconds=2.0)
    sandbox = Sandbox(config, clock=clock)
    clock.jump_to(1_767_225_610.5)  # half a second after a rebuild
    transport = httpx.ASGITransport(app=sandbox.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://s") as http:
        building = await http.get("/v1/prices/snapshot", params={"format": "csv"})
        clock.advance(2.0)
        ready = await http.get("/v1/prices/snapshot", params={"format": "csv"})
    assert building.status_code == 503
    assert building.headers["retry-after"] == "1"
    assert ready.status_code == 200
