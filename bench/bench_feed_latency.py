"""From a feed event to the buy request: the engine's own work (issue 17 point 2).

The engine (started, not run: each round is stepped by hand, in real time) buys a deal
planted on the in-process sandbox ``--rounds`` times by the feed and up to 15 times by a
search (the sandbox's search limit):

- **feed**: the deal's ``new`` event (written as the sandbox's feed writes it) is handed
  to ``Engine.on_feed_event``; latency is the real time from that call to the purchase
  request reaching the transport.
- **search** (the baseline, in the same run): the deal's name is flagged and the search
  step runs; latency is from the search answer leaving the transport to the purchase
  request reaching it (the existing path's share after the answer arrives).

For each, the time spent awaiting the ledger (budget read, already-bought check, the
intent written before the buy) is measured apart, by timing every ledger coroutine
between the start and the request; "own work" is the rest: decoding aside, the rules,
references, allocation and the buyer's bookkeeping.

Target: own work well under 1 ms on the feed path; the ratio feed / search near 1 or
below (no second path, nothing more to do).

Figures (2-core machine shared with six other engineers' test runs, 100 feed and 15
search purchases, two runs): feed total 1.08 / 1.23 ms median, of which own work 0.39 /
0.45 ms (p90 0.57 / 0.62 ms) and the ledger 0.66 / 0.74 ms; search 2.01 / 1.31 ms total,
own work 0.89 / 0.60 ms; ratio of the totals 0.54 / 0.94. "Own work" includes the
client's building of the request and the in-process transport's share up to the request,
so the engine's part alone is less.

Run: ``.venv/bin/python bench/bench_feed_latency.py [--rounds N]``
"""

from __future__ import annotations

import argparse
import functools
import inspect
import itertools
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import httpx

from engine import SystemClock
from engine._limiter import Limit, RateLimiter
from engine._plugins import make_plugin_host
from engine.client import FeedListingEvent, MarketClient, TradeLink
from engine.ledger import MEMORY, Ledger
from engine.models import FeedListing
from engine.rules import load_rules_text
from engine.sandbox import MarketConfig, Sandbox, SandboxConfig
from engine.sandbox._catalogue import CatalogueItem
from engine.sandbox._feed import listing_payload
from engine.sandbox._market import Listing as SandboxListing
from engine.sniper import Engine, EngineSettings

TRADE_LINK = "https://steamcommunity.com/tradeoffer/new/?partner=123456789&token=AbCdEfGh"
_ids = itertools.count(900_000_000_001)
SEARCH_ROUNDS = 15


class Timing(httpx.AsyncBaseTransport):
    """The sandbox's transport, noting when search answers leave and buys arrive."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner = inner
        self.last_answer = 0.0
        self.bought_at = 0.0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path in ("/v1/buy-one-p2p", "/v1/buy") and not self.bought_at:
            self.bought_at = time.perf_counter()
        response = await self.inner.handle_async_request(request)
        if request.url.path == "/v2/search-items-by-name":
            await response.aread()
            self.last_answer = time.perf_counter()
        return response


class LedgerClock:
    """Time spent awaiting the ledger before the buy request, summed while ``on``."""

    def __init__(self, ledger: Ledger, transport: Timing) -> None:
        self.transport = transport
        self.spent = 0.0
        self.on = False
        self.calls: list[str] = []
        self._depth = 0
        for name, method in inspect.getmembers(ledger, inspect.iscoroutinefunction):
            if not name.startswith("__"):
                setattr(ledger, name, self._timed(method))

    def _timed(self, method: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        @functools.wraps(method)
        async def timed(*args: Any, **kwargs: Any) -> Any:
            # the outermost calls before the buy request only
            if not self.on or self._depth or self.transport.bought_at:
                return await method(*args, **kwargs)
            self.calls.append(method.__name__)
            self._depth += 1
            began = time.perf_counter()
            try:
                return await method(*args, **kwargs)
            finally:
                self._depth -= 1
                self.spent += time.perf_counter() - began

        return timed


def _item(sandbox: Sandbox) -> CatalogueItem:
    return next(
        item
        for item in sandbox.market.items
        if item.game == "csgo" and not item.phases and 5_000 < item.reference < 20_000
    )


def _plant(sandbox: Sandbox, item: CatalogueItem, price: int) -> SandboxListing:
    now = sandbox.advance()
    low_high = item.float_range
    listing = SandboxListing(
        item_id=next(_ids),
        item=item,
        price=price,
        listed_at=now,
        phase=None,
        float_value=None if low_high is None else sum(low_high) / 2,
        stickers=(),
        unlock_at=None,
        send_until=None,
        paintseed=1,
        initial_price=price,
    )
    sandbox.market.add_listing(listing)
    return listing


async def run(rounds: int) -> dict[str, tuple[list[float], list[float]]]:
    clock = SystemClock()
    market = MarketConfig(size=300, deal_share=0.0, hold_share=0.0, mean_lifetime=10**9)
    sandbox = Sandbox(SandboxConfig(seed=3, market=market), clock=clock)
    item = _item(sandbox)
    text = f"""
version: 1
account: {{base_url: "http://sandbox", trade_link: "{TRADE_LINK}"}}
budgets: {{per_day: "50000.00", total: "50000.00"}}
rules:
  - name: deals
    match: {{names: ["{item.name}"], game: csgo}}
    discount: 25
    max_price: "200.00"
"""
    host = make_plugin_host(load_entry_points=False)
    ruleset = load_rules_text(text, host=host)
    limiter = RateLimiter(
        clock,
        {
            "search": Limit(6000, 60.0),
            "buy_order": Limit(60, 60.0),
            "set_platform_api": Limit(5, 60.0),
        },
    )
    transport = Timing(httpx.ASGITransport(app=sandbox.app))
    ledger = await Ledger.open(MEMORY, clock=clock)
    timed = LedgerClock(ledger, transport)
    out: dict[str, tuple[list[float], list[float]]] = {"feed": ([], []), "search": ([], [])}
    async with MarketClient(
        sandbox.api_key,
        base_url="http://sandbox",
        transport=transport,
        limiter=limiter,
        clock=clock,
    ) as client:
        engine = Engine(
            ruleset=ruleset,
            client=client,
            ledger=ledger,
            clock=clock,
            limiter=limiter,
            host=host,
            trade_link=TradeLink.parse(TRADE_LINK),
            trade_link_url=TRADE_LINK,
            settings=EngineSettings(use_snapshot=False),
        )
        await engine.start()
        for i in range(rounds):
            # the sandbox allows 20 searches a minute, as the service does
            for way in ("feed", "search") if i < SEARCH_ROUNDS else ("feed",):
                deal = _plant(sandbox, item, item.reference * 60 // 100)
                transport.bought_at = 0.0
                timed.spent = 0.0
                timed.on = True
                if way == "feed":
                    payload = listing_payload(deal, deal.price, sandbox.advance())
                    event = FeedListingEvent(
                        "new", FeedListing.model_validate(payload), clock.now(), 1
                    )
                    began = time.perf_counter()
                    await engine.on_feed_event(event)
                else:
                    engine.schedule.flag(item.name, promise=1, at=clock.now())
                    began = 0.0
                    await engine.search_once()
                    began = transport.last_answer
                timed.on = False
                assert transport.bought_at, f"{way}: nothing bought"
                latency = transport.bought_at - began
                out[way][0].append(latency)
                out[way][1].append(latency - min(timed.spent, latency))
    await ledger.close()
    return out


def _ms(samples: list[float]) -> str:
    ordered = sorted(samples)
    p90 = ordered[int(0.9 * (len(ordered) - 1))]
    return f"median {statistics.median(samples) * 1000:6.3f} ms, p90 {p90 * 1000:6.3f} ms"


async def amain(rounds: int) -> None:
    out = await run(rounds)
    counts = f"{len(out['feed'][0])} by feed, {len(out['search'][0])} by search"
    print(f"event/answer -> buy request ({counts}; in-process sandbox, real time)")
    for way, (total, own) in out.items():
        print(f"  {way:6s}  total {_ms(total)} | own work (ledger apart) {_ms(own)}")
        print(f"          ledger {_ms([t - o for t, o in zip(total, own, strict=True)])}")
    ratio = statistics.median(out["feed"][0]) / statistics.median(out["search"][0])
    print(f"  ratio of the totals, feed / search: {ratio:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=50)
    args = parser.parse_args()
    anyio.run(amain, args.rounds)


if __name__ == "__main__":
    main()
