"""A ledger in memory skips the reconcile pass's reads of rows it holds none of
(``Ledger._holding``): a purchase written, left unknown, or left by an earlier run is still
looked up, resolved and bought at the very times, by the very requests, as when every
pass reads the ledger."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from engine import VirtualClock
from engine.ledger import Intent, Ledger, new_project_id

from .harness import pick_item, plant, quiet_sandbox, rig, rules_text


class _Logged(httpx.AsyncBaseTransport):
    """The sandbox's transport, noting each request's time and path."""

    def __init__(self, inner: httpx.AsyncBaseTransport, clock: VirtualClock) -> None:
        self.inner, self.clock = inner, clock
        self.sent: list[tuple[float, str]] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.sent.append((self.clock.now(), request.url.path))
        return await self.inner.handle_async_request(request)


async def _run(clock: VirtualClock, fault: str | None, leftover: bool) -> dict[str, Any]:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    deal = plant(sandbox, item, price=item.reference // 2)
    if fault is not None:
        sandbox.inject("GET /v1/buy-one-p2p", fault, count=1, commit=fault.endswith("commit"))
    transport = _Logged(httpx.ASGITransport(app=sandbox.app), clock)
    async with rig(clock, sandbox, rules_text(item.name), transport=transport) as r:
        if leftover:  # written by an earlier run that died before (or after) sending it
            pid = new_project_id(clock.now())
            await r.ledger.record_intent(
                Intent(pid, str(deal.item_id), item.name, deal.price, "deals")
            )
            clock.advance(30)
        async with clock.autojump():
            await r.engine.run(duration=1500)
        ids: dict[str, int] = {}  # project ids are random: named by order of appearance
        events = [
            (e.at, ids.setdefault(e.project_id, len(ids)), e.from_state, e.to_state)
            for e in await r.ledger.events()
        ]
    return {"events": events, "sent": transport.sent, "requests": dict(sandbox.requests)}


@pytest.mark.parametrize(
    ("fault", "leftover"),
    [("timeout_after_commit", False), ("http_error", False), (None, True)],
)
async def test_pending_purchases_are_reconciled_as_when_every_pass_reads(
    fault: str | None, leftover: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    skipping = await _run(VirtualClock(), fault, leftover)

    async def always(self: Ledger, kind: str) -> bool:
        return True

    monkeypatch.setattr(Ledger, "_holding", always)
    reading = await _run(VirtualClock(), fault, leftover)
    assert skipping == reading
    looked_up = [t for t, path in skipping["sent"] if path.endswith("check-many-project-id")]
    assert looked_up, "the pending purchase was looked up by its project_id"
    assert any(e[3].value in ("BOUGHT", "COMPLETED", "RELEASED") for e in skipping["events"])
