"""The engine with real answer variants (issue 10): an unreadable trade in a
check-many-project-id answer is never taken as "absent"; a trade link the service calls
usable but whose inventory is private stops the start-up gate; a listing set aside in a
search is counted in the engine's status, the status file, ``snipe status`` and the
metrics, while the other listings are used."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from engine import VirtualClock
from engine.cli._status import build_report, render
from engine.client import MarketClient
from engine.ledger import MEMORY, Intent, Ledger
from engine.metrics import EngineMetrics
from engine.sniper import TradingRefused
from engine.sniper._reconciler import Reconciler
from engine.sniper._status import EngineStatus
from engine.sniper._statusfile import status_document

from .harness import pick_item, plant, quiet_sandbox, rig, rules_text

Rewrite = Callable[[httpx.Request, httpx.Response], httpx.Response]


class Rewriting(httpx.AsyncBaseTransport):
    """The sandbox, with the answers of one endpoint rewritten (as the live service
    writes them)."""

    def __init__(self, inner: httpx.AsyncBaseTransport, path: str, rewrite: Rewrite) -> None:
        self.inner, self.path, self.rewrite = inner, path, rewrite

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        if request.url.path != self.path:
            return response
        await response.aread()
        return self.rewrite(request, response)


def json_answer(value: Any) -> httpx.Response:
    return httpx.Response(200, content=json.dumps(value).encode())


# -- the reconciler -------------------------------------------------------------------------


def trade(pid: str | None, status: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"id": 30717149, "price": 5000, "status": status, "done": False}
    if pid is not None:
        entry["project_id"] = pid
    return entry


def answering(check_many: dict[str, Any], history_rows: list[Any]) -> httpx.MockTransport:
    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v2/my-history":
            return json_answer({"success": True, "data": {"trades": history_rows}})
        return json_answer(check_many)

    return httpx.MockTransport(answer)


async def resolve_twice(
    clock: VirtualClock, transport: httpx.MockTransport, ids: list[str]
) -> dict[str, str]:
    """Two reconciler passes far enough apart that an id absent from both may be released
    (when my-history, also read, is clear of it)."""
    async with (
        await Ledger.open(MEMORY, clock=clock) as ledger,
        MarketClient("k" * 16, base_url="https://market.test", transport=transport) as client,
    ):
        for pid in ids:
            await ledger.record_intent(Intent(pid, f"item-{pid}", "AK-47", 5000, "deals"))
        clock.advance(3600)  # long past any grace
        reconciler = Reconciler(client=client, ledger=ledger, clock=clock, status=EngineStatus())
        await reconciler.resolve()
        clock.advance(181)  # the documented gap is 180 s (not read from the settings)
        await reconciler.resolve()
        found = {pid: await ledger.get(pid) for pid in ids}
    return {pid: p.state.name if p else "missing" for pid, p in found.items()}


@pytest.mark.parametrize(
    ("unreadable", "expected"),
    [
        # a trade without its project_id could be anyone's: no absent id is released
        (trade(None, 5), {"p-1": "COMPLETED", "p-2": "INTENT", "p-3": "INTENT"}),
        # an unreadable trade that names p-2: p-2 is not learned, p-3 is truly absent
        (trade("p-2", "sent"), {"p-1": "COMPLETED", "p-2": "INTENT", "p-3": "RELEASED"}),
    ],
    ids=["no-project-id", "bad-status"],
)
async def test_a_set_aside_trade_is_not_learned_never_absent(
    clock: VirtualClock, unreadable: dict[str, Any], expected: dict[str, str]
) -> None:
    answer = {"success": True, "msg": None, "trades": [trade("p-1", 5), unreadable]}
    states = await resolve_twice(clock, answering(answer, []), list(expected))
    assert states == expected


def history_row(pid: str | None) -> dict[str, Any]:
    row: dict[str, Any] = {"id": "not a number", "item_id": "x", "price": 5000, "status": 5}
    if pid is not None:
        row["project_id"] = pid
    return row


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        ([], "RELEASED"),
        # an unreadable history row that names another purchase proves nothing of p-3
        ([history_row("p-9")], "RELEASED"),
        # one that names p-3, or names no one (it may be anyone's): p-3 keeps its budget
        ([history_row("p-3")], "INTENT"),
        ([history_row(None)], "INTENT"),
    ],
    ids=["clear", "other-id", "its-id", "no-id"],
)
async def test_an_unreadable_history_row_never_proves_a_purchase_absent(
    clock: VirtualClock, rows: list[Any], expected: str
) -> None:
    answer = {"success": True, "msg": None, "trades": []}
    states = await resolve_twice(clock, answering(answer, rows), ["p-3"])
    assert states == {"p-3": expected}


# -- the start-up gate ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        ({"success": True, "info": "Inventory is private"}, "Inventory is private"),
        (
            {"success": False, "msg": "Trade link cannot be used", "info": "Trade ban for 7 days"},
            "Trade ban for 7 days",
        ),
    ],
    ids=["success-but-private", "refused-with-info"],
)
async def test_the_gate_refuses_a_trade_link_the_service_says_cannot_trade(
    clock: VirtualClock, answer: dict[str, Any], says: str
) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    transport = Rewriting(
        httpx.ASGITransport(app=sandbox.app),
        "/v1/check-tradelink",
        lambda request, response: json_answer(answer),
    )
    async with rig(clock, sandbox, rules_text(item.name), transport=transport) as r:
        with pytest.raises(TradingRefused, match="trade link") as info:
            await r.engine.start_gate()
    assert says in str(info.value)


# -- a listing set aside, seen everywhere ---------------------------------------------------


def _spoil_one_listing(request: httpx.Request, response: httpx.Response) -> httpx.Response:
    answer = json.loads(response.content)
    for listings in answer["items"].values():
        listings.append({**listings[0], "item_id": "9999", "price": "12 USD"})
    return json_answer(answer)


async def test_a_set_aside_listing_is_counted_in_status_file_snipe_status_and_metrics(
    clock: VirtualClock,
) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    deal = plant(sandbox, item, price=item.reference // 2)
    transport = Rewriting(
        httpx.ASGITransport(app=sandbox.app), "/v2/search-items-by-name", _spoil_one_listing
    )
    async with rig(clock, sandbox, rules_text(item.name), transport=transport) as r:
        r.engine.schedule.watch({item.name})
        decisions = await r.engine.search_once()
        document = status_document(await r.engine.view(), every=5.0)
        metrics = EngineMetrics(r.engine)
        await metrics.refresh()
        exposition = metrics.render().decode()
    assert str(deal.item_id) in {d.item_id for d in decisions}  # the good listings were used
    kind = ("GET /v2/search-items-by-name", "price")
    assert r.engine.status.set_aside == {kind: 1}
    (entry,) = document["set_aside"]
    assert (entry["endpoint"], entry["field"], entry["count"]) == (*kind, 1)
    assert "item_id=9999" in entry["example"]
    shown = render("ledger.sqlite", build_report([], document, clock.now()), clock.now())
    assert "set aside   1 unreadable item(s)" in shown
    assert "GET /v2/search-items-by-name field price" in shown
    assert (
        'snipe_malformed_items_total{endpoint="GET /v2/search-items-by-name",field="price"} 1.0'
        in exposition
    )


# -- buy orders: an unreadable order is not a closed one --------------------------------------


async def test_an_unreadable_order_in_the_list_is_not_taken_as_closed(clock: VirtualClock) -> None:
    from .test_buy_orders import order_rules

    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    price = item.reference // 2
    spoil = {"on": False}

    def rewrite(request: httpx.Request, response: httpx.Response) -> httpx.Response:
        if not spoil["on"]:
            return response
        answer = json.loads(response.content)
        for offer in answer["offers"]:
            offer["price"] = "cheap"
        return json_answer(answer)

    transport = Rewriting(httpx.ASGITransport(app=sandbox.app), "/v1/buy-orders", rewrite)
    rules = order_rules(item.name, price=f"{price / 1000:.3f}", amount=3)
    async with rig(clock, sandbox, rules, transport=transport) as r:
        await r.engine.orders.sync()
        (placed,) = await r.ledger.orders()
        spoil["on"] = True
        await r.engine.orders.sync()
        still = await r.ledger.orders()
        spoil["on"] = False
        await r.engine.orders.sync()
        after = await r.ledger.orders()
    assert [o.order_id for o in still] == [placed.order_id]  # not closed, not re-placed
    assert [o.order_id for o in after] == [placed.order_id]
    assert r.engine.status.set_aside == {("GET /v1/buy-orders", "price"): 1}
