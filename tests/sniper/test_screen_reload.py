"""Rules replaced while a screened search is on its way: the listings the old rules'
screen passed over (kept as stand-ins, never built) are not judged by the new rules, so
nothing is bought on a stand-in; the next search builds them and the new rules decide."""

from __future__ import annotations

import httpx

from engine import VirtualClock
from engine.models import Listing
from engine.rules import load_rules_text
from engine.sniper import Engine
from engine.sniper._status import EngineMode

from .harness import pick_item, plant, purchases_of, quiet_sandbox, rig, rules_text


class ReloadingOnSearch(httpx.AsyncBaseTransport):
    """The sandbox; the first search request replaces the engine's rules before its answer
    comes back (as ``snipe reload`` from the API or the chat can, between two awaits)."""

    def __init__(self, inner: httpx.AsyncBaseTransport, rules: str) -> None:
        self.inner, self.rules = inner, rules
        self.engine: Engine | None = None

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        engine = self.engine
        if engine is not None and "search-items" in request.url.path:
            self.engine = None
            engine.replace_rules(load_rules_text(self.rules, host=engine.host))
        return await self.inner.handle_async_request(request)


async def test_rules_replaced_in_flight_never_buy_a_stand_in(clock: VirtualClock) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    listing = plant(sandbox, item, price=item.reference // 2)
    # the old rules pay at most $0.01: their screen passes the listing over unbuilt
    old = rules_text(item.name).replace('max_price: "200.00"', 'max_price: "0.01"')
    transport = ReloadingOnSearch(httpx.ASGITransport(app=sandbox.app), rules_text(item.name))
    async with rig(clock, sandbox, old, transport=transport) as r:
        transport.engine = r.engine
        await r.engine.start_gate()
        r.engine.status.mode = EngineMode.RUNNING
        first = await r.engine.search_once()
        bought_on_first = purchases_of(sandbox)
        r.engine.schedule.flag(item.name, promise=1, at=clock.now())
        clock.advance(10)
        second = await r.engine.search_once()
    assert all(isinstance(d.listing, Listing) for d in first if d.accepted)
    assert bought_on_first == []
    # the next search builds it, and the new rules buy it
    mine = [d for d in second if d.item_id == str(listing.item_id) and d.accepted]
    assert mine
    assert isinstance(mine[0].listing, Listing)
    assert [p["item_id"] for p in purchases_of(sandbox)] == [str(listing.item_id)]
