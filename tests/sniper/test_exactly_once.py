"""Exactly once, whatever the service does to the purchase request.

Each fault hits the first purchase request; with ``commit`` the sandbox really made the
purchase before failing to answer (the classic double-buy trap). However it fails, the
listing is bought once in reality, and the ledger ends up agreeing with reality.
"""

from __future__ import annotations

import httpx
import pytest

from engine import VirtualClock
from engine.ledger import PurchaseState
from engine.sniper import Outcome

from .books import assert_sent_once
from .harness import pick_item, plant, purchases_of, quiet_sandbox, rig, rules_text

FAULTS = [
    ("timeout_after_commit", True),
    ("http_error", True),
    ("http_error", False),
    ("html_200", True),
    ("html_200", False),
    ("drop_connection", True),
    ("drop_connection", False),
]


@pytest.mark.parametrize(("kind", "commit"), FAULTS)
async def test_a_lost_answer_never_buys_twice(clock: VirtualClock, kind: str, commit: bool) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    deal = plant(sandbox, item, price=item.reference // 2)
    sandbox.inject("GET /v1/buy-one-p2p", kind, count=1, commit=commit)
    async with rig(clock, sandbox, rules_text(item.name)) as r:
        async with clock.autojump():
            status = await r.engine.run(duration=1200)
        purchases = await r.ledger.purchases()
        events = await r.ledger.events()
    real = [p for p in purchases_of(sandbox) if str(p["item_id"]) == str(deal.item_id)]
    assert len(real) == 1, "the deal must be bought exactly once in reality"
    # Exactly once on the wire too: one request per project_id, and when the first request
    # went through, no second request for the listing at all (a resend under a new
    # project_id would be answered "Item sold" and leave the ledger right, but is a bug).
    assert_sent_once(sandbox, per_item=commit)
    assert status.outcomes[Outcome.UNKNOWN] == 1
    live = [p for p in purchases if p.state not in (PurchaseState.FAILED, PurchaseState.RELEASED)]
    assert len(live) == 1
    assert live[0].charged_price == deal.price
    assert live[0].state in {PurchaseState.BOUGHT, PurchaseState.COMPLETED}
    unknown = [e for e in events if e.to_state is PurchaseState.UNKNOWN]
    assert len(unknown) == 1
    if commit:
        # resolved by project_id: the unknown purchase is the one that happened
        assert live[0].project_id == unknown[0].project_id
        assert len(purchases) == 1
    else:
        # released once absent twice minutes apart and not in my-history, then bought
        # again on a later decision, once
        released = [p for p in purchases if p.state is PurchaseState.RELEASED]
        assert [p.project_id for p in released] == [unknown[0].project_id]
        assert "absent" in (released[0].reason or "")


async def test_a_stated_refusal_fails_at_once_and_releases_the_budget(clock: VirtualClock) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    plant(sandbox, item, price=item.reference // 2)
    sandbox.inject("GET /v1/buy-one-p2p", "system_busy", count=1)
    async with rig(clock, sandbox, rules_text(item.name)) as r:
        async with clock.autojump():
            status = await r.engine.run(duration=200)
        purchases = await r.ledger.purchases()
    assert status.outcomes[Outcome.REFUSED] == 1
    assert status.outcomes[Outcome.UNKNOWN] == 0
    (failed,) = [p for p in purchases if p.state is PurchaseState.FAILED]
    assert "System busy" in (failed.reason or "")
    assert len(purchases_of(sandbox)) == 1  # bought on a later pass, once


class RefuseToConnect(httpx.AsyncBaseTransport):
    """Purchases never leave the machine (connection refused); everything else goes on."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/buy-one-p2p":
            raise httpx.ConnectError("connection refused", request=request)
        return await self.inner.handle_async_request(request)


async def test_a_purchase_that_never_left_fails_and_repeats_halt(clock: VirtualClock) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    plant(sandbox, item, price=item.reference // 2)
    transport = RefuseToConnect(httpx.ASGITransport(app=sandbox.app))
    async with rig(clock, sandbox, rules_text(item.name), transport=transport) as r:
        async with clock.autojump():
            status = await r.engine.run(duration=300)
        purchases = await r.ledger.purchases()
    assert purchases_of(sandbox) == []
    assert {p.state for p in purchases} == {PurchaseState.FAILED}
    assert all("not sent" in (p.reason or "") for p in purchases)
    assert status.outcomes[Outcome.NOT_SENT] == 5  # then HALTED: no sixth attempt
    assert status.halted
    assert "in a row failed" in (status.halt_reason or "")
