"""snipe's operations beside a real engine run against the in-process sandbox: purchase,
refund, HALTED and daily messages reach a local receiver; a receiver that is down changes
nothing about buying; metrics and /healthz over a real socket."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from sniper.harness import (
    TRADE_LINK,
    Rig,
    pick_item,
    plant,
    purchases_of,
    quiet_sandbox,
    rig,
    rules_text,
)

from engine import RateLimited, VirtualClock
from engine.client import MarketClient
from engine.metrics import EngineMetrics
from engine.notify import verify_signature
from engine.ops import Operations, OpsSettings, operations
from engine.sandbox import MarketConfig, Sandbox, SandboxConfig
from engine.sandbox._trading import TradingConfig
from engine.sniper import EngineMode, Outcome, TradingRefused
from engine.sniper._statusfile import read_status_file

from .receiver import Received, Receiver, closed_port, receiver

SECRET = "webhook-signing-secret"
ENV = {"SNIPE_WEBHOOK_SECRET": SECRET}


def notify_rules(name: str, url: str, *, extra: str = "") -> str:
    return rules_text(name, extra=f"notify:\n  retries: 2\n{extra}  webhook: {{url: {url!r}}}\n")


@asynccontextmanager
async def ops_for(r: Rig, **settings: object) -> AsyncIterator[Operations]:
    options = OpsSettings(environ=ENV, flush_timeout=5.0, **settings)  # type: ignore[arg-type]
    async with operations(r.engine, options) as ops:
        yield ops


def events(r: Receiver, kind: str) -> list[Received]:
    return [x for x in r.received if x.json()["event"] == kind]


async def test_a_sandbox_run_delivers_the_purchase_message(clock: VirtualClock) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    deal = plant(sandbox, item, price=item.reference // 2)
    async with (
        receiver() as hook,
        rig(clock, sandbox, notify_rules(item.name, f"{hook.url}/snipe")) as r,
        clock.autojump(),
        ops_for(r),
    ):
        status = await r.engine.run(duration=120)
    assert status.outcomes[Outcome.BOUGHT] == 1
    (message,) = events(hook, "purchase")
    assert verify_signature(
        SECRET.encode(),
        body=message.body,
        timestamp=message.headers["x-snipe-timestamp"],
        signature=message.headers["x-snipe-signature"],
        now=clock.now(),
    )
    data = message.json()["data"]
    assert data["name"] == item.name
    assert data["item_id"] == str(deal.item_id)
    assert data["price"] == deal.price
    assert data["reference_price"] is not None
    assert (
        data["discount_bp"]
        == (data["reference_price"] - deal.price) * 10_000 // data["reference_price"]
    )
    assert data["rule"] == "deals"
    assert str(data["image"]).startswith("https://")
    assert message.json()["image"] == data["image"]


async def test_a_receiver_that_is_down_changes_nothing_about_buying(clock: VirtualClock) -> None:
    port = await closed_port()
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    deals = [plant(sandbox, item, price=item.reference // 2 - n) for n in range(3)]
    rules = notify_rules(item.name, f"http://127.0.0.1:{port}/down", extra="  queue_size: 1\n")
    async with rig(clock, sandbox, rules) as r, clock.autojump(), ops_for(r) as ops:
        status = await r.engine.run(duration=120)
    bought = {str(p["item_id"]) for p in purchases_of(sandbox)}
    assert bought == {str(d.item_id) for d in deals}
    assert status.outcomes[Outcome.BOUGHT] == 3
    stats = ops.delivery.stats["webhook"]
    assert stats.sent == 0
    assert stats.failed + stats.dropped == 3
    assert stats.dropped >= 1


async def test_a_refund_is_told(clock: VirtualClock) -> None:
    market = MarketConfig(size=300, deal_share=0.0, hold_share=0.0, mean_lifetime=10**9)
    config = SandboxConfig(seed=3, market=market, trading=TradingConfig(trade_failure_rate=1.0))
    sandbox = Sandbox(config, clock=clock)
    item = pick_item(sandbox)
    plant(sandbox, item, price=item.reference // 2)
    async with (
        receiver() as hook,
        rig(clock, sandbox, notify_rules(item.name, hook.url)) as r,
        clock.autojump(),
        ops_for(r),
    ):
        await r.engine.run(duration=1500)  # every trade has failed by then
    (refund,) = events(hook, "refund")
    assert refund.json()["data"]["name"] == item.name
    assert refund.json()["data"]["reason"]
    assert sandbox.ground_truth()["refunds"]


async def test_a_daily_summary_is_sent_at_utc_midnight() -> None:
    clock = VirtualClock(start=1_767_225_600.0 - 300)  # five minutes before 2026-01-01
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    plant(sandbox, item, price=item.reference // 2)
    async with (
        receiver() as hook,
        rig(clock, sandbox, notify_rules(item.name, hook.url)) as r,
        clock.autojump(),
        ops_for(r),
    ):
        await r.engine.run(duration=600)
    (summary,) = events(hook, "daily_summary")
    data = summary.json()["data"]
    assert data["day"] == "2025-12-31"
    assert data["purchases"] == 1
    assert data["cap_total"] == 1_000_000


async def _get(port: int, path: str) -> httpx.Response:
    async with httpx.AsyncClient() as http:
        return await http.get(f"http://127.0.0.1:{port}{path}", timeout=5)


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


async def test_metrics_after_a_sandbox_run(clock: VirtualClock) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    deal = plant(sandbox, item, price=item.reference // 2)
    async with (
        rig(clock, sandbox, rules_text(item.name)) as r,
        clock.autojump(),
        ops_for(r, metrics_port=0) as ops,
    ):
        await r.engine.run(duration=120)
        assert ops.port is not None
        response = await _get(ops.port, "/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    got = _samples(response.text)
    states = {dict(k[1])["state"]: v for k, v in got.items() if k[0] == "snipe_purchases"}
    assert states["bought"] + states["completed"] + states["reserved"] == 1
    assert got[("snipe_spend_usd", (("period", "total"),))] == deal.price / 1000
    assert got[("snipe_cap_usd", (("cap", "total"),))] == 1000.0
    assert got[("snipe_cap_remaining_usd", (("cap", "total"),))] == 1000.0 - deal.price / 1000
    assert got[("snipe_search_budget_limit", ())] == 20
    assert got[("snipe_search_budget_used", ())] >= 1
    buy = (("endpoint", "GET /v1/buy-one-p2p"), ("outcome", "ok"))
    assert got[("snipe_requests_total", buy)] == 1
    search = (("endpoint", "GET /v2/search-items-by-name"), ("outcome", "ok"))
    assert got[("snipe_requests_total", search)] == r.engine.status.searches
    assert got[("snipe_rate_limited_responses_total", ())] == 0
    assert got[("snipe_detection_latency_seconds_count", ())] == 1
    assert ("snipe_reconcile_queue", (("kind", "unresolved"),)) in got
    assert got[("snipe_engine_mode", (("mode", "stopped"),))] == 1
    assert got[("snipe_start_waiting", ())] == 0


async def test_unexpected_errors_are_counted_by_loop(clock: VirtualClock) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    async with rig(clock, sandbox, rules_text(item.name)) as r:
        r.engine.guard.failed("reconcile", RuntimeError("x"))
        r.engine.guard.failed("reconcile", RuntimeError("x"))
        r.engine.guard.failed("ops: status watch", KeyError("y"))
        metrics = EngineMetrics(r.engine)
        await metrics.refresh()
        got = _samples(metrics.render().decode())
    assert got[("snipe_unexpected_errors_total", (("loop", "reconcile"),))] == 2
    assert got[("snipe_unexpected_errors_total", (("loop", "ops: status watch"),))] == 1


async def test_429s_are_counted(clock: VirtualClock) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    async with rig(clock, sandbox, rules_text(item.name)) as r:
        metrics = EngineMetrics(r.engine)
        unpaced = MarketClient(  # no rate limiter: the sandbox answers 429 past its limit
            sandbox.api_key,
            base_url="http://sandbox",
            transport=httpx.ASGITransport(app=sandbox.app),
            clock=clock,
        )
        unpaced.request_observer = metrics.observe_request
        async with unpaced:
            for _ in range(30):
                with contextlib.suppress(RateLimited):
                    await unpaced.search_items_by_name([item.name])
    got = _samples(metrics.render().decode())
    limited = got[("snipe_rate_limited_responses_total", ())]
    assert limited >= 1
    key = (("endpoint", "GET /v2/search-items-by-name"), ("outcome", "rate_limited"))
    assert got[("snipe_requests_total", key)] == limited
    ok = (("endpoint", "GET /v2/search-items-by-name"), ("outcome", "ok"))
    assert got[("snipe_requests_total", ok)] + limited == 30


async def test_healthz_is_200_while_running_and_503_once_halted(clock: VirtualClock) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    async with (
        receiver() as hook,
        rig(clock, sandbox, notify_rules(item.name, hook.url)) as r,
        clock.autojump(),
        ops_for(r, metrics_port=0) as ops,
    ):
        assert ops.port is not None
        assert (await _get(ops.port, "/healthz")).status_code == 503  # starting
        async with anyio.create_task_group() as tg:
            tg.start_soon(r.engine.run)
            while r.engine.status.mode is not EngineMode.RUNNING:
                await clock.sleep(1)
            healthy = await _get(ops.port, "/healthz")
            r.engine.status.halt("a test pulled the brake")
            halted = await _get(ops.port, "/healthz")
            with anyio.fail_after(5):
                await hook.wait_for(1)
            tg.cancel_scope.cancel()
        assert (await _get(ops.port, "/nothing")).status_code == 404
    assert healthy.status_code == 200
    assert halted.status_code == 503
    assert "a test pulled the brake" in halted.text
    (message,) = events(hook, "halted")
    assert message.json()["data"]["reason"] == "a test pulled the brake"


async def test_a_refusal_to_trade_is_told_and_left_in_the_status_file(
    clock: VirtualClock, tmp_path: Path
) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    # the sandbox says "Inventory is private" for partners that are 13 modulo 97
    link = TRADE_LINK.replace("partner=123456789", f"partner={97 * 1000 + 13}")
    status_file = tmp_path / "l.sqlite.status.json"
    async with (
        receiver() as hook,
        rig(clock, sandbox, notify_rules(item.name, hook.url), trade_link=link) as r,
    ):
        with pytest.raises(TradingRefused, match="trade link"):
            async with clock.autojump(), ops_for(r, status_file=status_file):
                await r.engine.run(duration=60)
    (message,) = events(hook, "halted")
    assert message.json()["data"]["reason"].startswith("refused to trade: ")
    document = read_status_file(status_file)
    assert document is not None
    assert str(document["stopped_by"]).startswith("refused to trade: ")
