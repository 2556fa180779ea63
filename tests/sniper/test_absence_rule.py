"""The documented "not bought" rule, pinned at the reconciler with its default settings
(issue 21).

docs/architecture.md, "Only the service's word settles money": an id absent from
check-many-project-id counts only 300 s after the request; "not bought" needs two such
absences at least 180 s apart and a clear my-history. Until then the purchase keeps its
budget and its item.

The numbers below are written out from that rule, never read from
``ReconcilerSettings``: a test that waits ``settings.absence_gap + 1`` follows a wrong
constant (``absence_gap = 0`` released a lost purchase on a single absence, and no test
saw it). A last case pins my-history's page size (100 rows): a full page is not the end.
"""

from __future__ import annotations

import json

import httpx
import pytest

from engine import IntentRefusal, IntentRefused, VirtualClock
from engine.client import MarketClient
from engine.ledger import MEMORY, Intent, Ledger, PurchaseState
from engine.sniper._reconciler import Reconciler
from engine.sniper._status import EngineStatus

S = PurchaseState
PRICE = 5_000
PID, ITEM = "p-lost", "item-lost"


def _never_seen() -> httpx.MockTransport:
    """A service that shows no trade for any id, and a my-history clear of them."""

    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v2/my-history":
            body: object = {"success": True, "data": {"trades": []}}
        else:
            body = {"success": True, "msg": None, "trades": []}
        return httpx.Response(200, content=json.dumps(body).encode())

    return httpx.MockTransport(answer)


async def _absent_at(
    clock: VirtualClock, looks: list[float], service: httpx.MockTransport | None = None
) -> tuple[S, int, IntentRefusal | None]:
    """A purchase whose answer was lost (UNKNOWN), looked up by the default reconciler
    ``looks`` seconds after its request, absent every time. Returns its state, what the
    ledger still commits, and why another purchase of its item is refused (``None``:
    accepted)."""
    async with (
        await Ledger.open(MEMORY, clock=clock) as ledger,
        MarketClient(
            "k" * 16, base_url="https://market.test", transport=service or _never_seen()
        ) as client,
    ):
        await ledger.record_intent(Intent(PID, ITEM, "AK-47", PRICE, "deals"))
        await ledger.transition(PID, S.UNKNOWN)
        requested = clock.now()
        reconciler = Reconciler(client=client, ledger=ledger, clock=clock, status=EngineStatus())
        for at in looks:
            clock.advance(requested + at - clock.now())
            await reconciler.resolve()
        purchase = await ledger.get(PID)
        assert purchase is not None
        committed = await ledger.committed()
        try:
            await ledger.record_intent(Intent("p-next", ITEM, "AK-47", PRICE, "deals"))
        except IntentRefused as refused:
            refusal: IntentRefusal | None = refused.reason
        else:
            refusal = None
    return purchase.state, committed, refusal


@pytest.mark.parametrize(
    "looks",
    [
        [301.0],  # absent once past 300 s
        [3_600.0],  # once, however long after
        [301.0, 301.0],  # twice at the same instant (two looks in one pass)
        [301.0, 302.0],  # 1 s apart
        [301.0, 480.0],  # 179 s apart
        [3_600.0, 3_779.0],  # 179 s apart, long after the request
        [200.0, 481.0],  # 281 s apart, but the first came before 300 s: it does not count
        [299.0, 479.0, 600.0],  # counted from 479 s: 121 s apart
        [301.0, 400.0, 480.0],  # three looks, the first and last 179 s apart
    ],
    ids=[
        "once",
        "once-late",
        "gap-0",
        "gap-1",
        "gap-179",
        "gap-179-late",
        "early-first",
        "early-then-121",
        "three-within-179",
    ],
)
async def test_fewer_than_two_absences_180_s_apart_keep_the_budget_and_the_item(
    clock: VirtualClock, looks: list[float]
) -> None:
    state, committed, refusal = await _absent_at(clock, looks)
    assert state is S.UNKNOWN  # unresolved: asked again later
    assert committed == PRICE  # its budget still counts
    assert refusal is IntentRefusal.DUPLICATE_ITEM  # its listing is not bought twice


@pytest.mark.parametrize(
    "looks",
    [
        [301.0, 481.0],  # 180 s apart
        [301.0, 482.0],  # 181 s apart
        [3_600.0, 3_780.0],  # 180 s apart, long after the request
        [299.0, 479.0, 659.0],  # the 299 s absence does not count; 479 s and 659 s do
        [301.0, 400.0, 481.0],  # a look in between changes nothing: 301 s to 481 s
    ],
    ids=["gap-180", "gap-181", "gap-180-late", "early-then-180", "three-180"],
)
async def test_two_absences_180_s_apart_past_300_s_release_it(
    clock: VirtualClock, looks: list[float]
) -> None:
    state, committed, refusal = await _absent_at(clock, looks)
    assert state is S.RELEASED
    assert committed == 0  # its budget is free
    assert refusal is None  # and so is its item


def _history_with_it_on_page_two(clock: VirtualClock) -> httpx.MockTransport:
    """check-many never shows the id; my-history (100 rows a page, newest first, the
    interface's page size) has 150 buy rows since the purchase, its own row 121st."""
    now = int(clock.now())
    rows: list[dict[str, object]] = [
        {"id": 1_000 + n, "item_id": f"other-{n}", "price": 900, "status": 5, "created": now}
        for n in range(150)
    ]
    rows[120] = {
        "id": 77,
        "item_id": ITEM,
        "price": 4_900,
        "status": 2,
        "created": now,
        "project_id": PID,
    }

    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v2/my-history":
            skip = int(json.loads(request.content)["skip"])
            body: object = {"success": True, "data": {"trades": rows[skip : skip + 100]}}
        else:
            body = {"success": True, "msg": None, "trades": []}
        return httpx.Response(200, content=json.dumps(body).encode())

    return httpx.MockTransport(answer)


async def test_a_full_history_page_is_followed_by_the_next_before_anything_is_released(
    clock: VirtualClock,
) -> None:
    """Twice absent from check-many, 180 s apart, but bought: its my-history row is on
    the second page. A first page of 100 rows is not all there is."""
    service = _history_with_it_on_page_two(clock)
    state, committed, refusal = await _absent_at(clock, [301.0, 481.0], service)
    assert state is S.BOUGHT
    assert committed == 4_900  # the price the service charged
    assert refusal is IntentRefusal.DUPLICATE_ITEM
