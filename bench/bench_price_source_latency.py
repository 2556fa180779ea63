"""Intent-to-request latency with a slow plugin price source: it adds nothing.

Issue 22: a plugin price source is fetched by the engine's references step on its own
period, beside the buying path; a decision reads the answer the engine already holds. This
bench runs the live engine (``Engine.run``, real time) against the in-process sandbox twice
in the same process: once with the rule's discount against the listing's own
``platform_price`` (no plugin source), once against a plugin source whose ``fetch`` takes
2 s and is asked again every 0.5 s, so a fetch is in flight nearly all the time. In each
run a deal is planted ``--rounds`` times; its latency is the real time from the search
answer that showed it leaving the transport to the purchase request reaching it (the
decision, the budget read, the ledger's intent write, the request).

Target: the ratio (with the slow source / without) stays near 1 (before issue 22 the
source was fetched between answer and purchase: about 2 s more per purchase).

Figures (2-core machine shared with other work, 20 purchases each, two runs): without
2.36 / 4.45 ms median, with the slow source 1.60 / 2.16 ms, ratio 0.68 / 0.48 (noise:
the two runs share the machine with other work). The same bench on the code before issue
22 (5 purchases each): without 2.24 ms, with 2007.68 ms, ratio 896.

Run: ``.venv/bin/python bench/bench_price_source_latency.py [--rounds N]``
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import time
from collections.abc import Mapping, Sequence

import anyio
import httpx

from engine import SystemClock
from engine._limiter import Limit, RateLimiter
from engine._plugins import make_plugin_host
from engine.client import MarketClient, TradeLink
from engine.hookspecs import hookimpl
from engine.ledger import MEMORY, Ledger
from engine.rules import PriceSource, load_rules_text
from engine.sandbox import MarketConfig, Sandbox, SandboxConfig
from engine.sandbox._catalogue import CatalogueItem
from engine.sandbox._market import Listing as SandboxListing
from engine.sniper import Engine, EngineSettings

TRADE_LINK = "https://steamcommunity.com/tradeoffer/new/?partner=123456789&token=AbCdEfGh"
FETCH_SECONDS = 2.0
_ids = itertools.count(900_000_000_001)


class SlowSource(PriceSource):
    """Answers every watched name with the going price, after ``FETCH_SECONDS``."""

    name = "slowref"
    every = 0.5

    def __init__(self, prices: Mapping[str, int]) -> None:
        self.prices = dict(prices)
        self.answered = anyio.Event()

    async def fetch(self, names: Sequence[str]) -> Mapping[str, int]:
        await anyio.sleep(FETCH_SECONDS)
        self.answered.set()
        return {n: p for n, p in self.prices.items() if n in names}


class SlowPlugin:
    def __init__(self, source: SlowSource) -> None:
        self.source = source

    @hookimpl
    def snipe_register_price_sources(self) -> list[PriceSource]:
        return [self.source]


class Timing(httpx.AsyncBaseTransport):
    """The sandbox's transport, noting when search answers leave and buys arrive."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner = inner
        self.last_answer = 0.0
        self.latencies: list[float] = []
        self.bought = anyio.Event()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path in ("/v1/buy-one-p2p", "/v1/buy"):
            self.latencies.append(time.perf_counter() - self.last_answer)
            self.bought.set()
        response = await self.inner.handle_async_request(request)
        if request.url.path == "/v2/search-items-by-name":
            await response.aread()
            self.last_answer = time.perf_counter()
        return response


def _item(sandbox: Sandbox) -> CatalogueItem:
    return next(
        item
        for item in sandbox.market.items
        if item.game == "csgo" and not item.phases and 5_000 < item.reference < 20_000
    )


def _plant(sandbox: Sandbox, item: CatalogueItem, price: int) -> None:
    now = sandbox.advance()
    low_high = item.float_range
    sandbox.market.add_listing(
        SandboxListing(
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
    )


async def run(*, slow: bool, rounds: int) -> list[float]:
    clock = SystemClock()
    market = MarketConfig(size=300, deal_share=0.0, hold_share=0.0, mean_lifetime=10**9)
    sandbox = Sandbox(SandboxConfig(seed=3, market=market), clock=clock)
    item = _item(sandbox)
    source = SlowSource({item.name: item.reference})
    versus = "slowref" if slow else "platform_price"
    text = f"""
version: 1
account: {{base_url: "http://sandbox", trade_link: "{TRADE_LINK}"}}
budgets: {{per_day: "5000.00", total: "5000.00"}}
rules:
  - name: deals
    match: {{names: ["{item.name}"], game: csgo}}
    discount: {{min: 25, versus: {versus}}}
    max_price: "200.00"
"""
    plugins = [("slow", SlowPlugin(source))] if slow else []
    host = make_plugin_host(load_entry_points=False, plugins=plugins)
    ruleset = load_rules_text(text, host=host)
    limiter = RateLimiter(  # a search every 0.1 s
        clock,
        {
            "search": Limit(600, 60.0),
            "buy_order": Limit(60, 60.0),
            "set_platform_api": Limit(5, 60.0),
        },
    )
    transport = Timing(httpx.ASGITransport(app=sandbox.app))
    ledger = await Ledger.open(MEMORY, clock=clock)
    async with (
        MarketClient(
            sandbox.api_key,
            base_url="http://sandbox",
            transport=transport,
            limiter=limiter,
            clock=clock,
        ) as client,
        anyio.create_task_group() as tg,
    ):
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
        tg.start_soon(engine.run)
        if slow:  # a reference is held before the first deal
            await source.answered.wait()
        for _ in range(rounds):
            transport.bought = anyio.Event()
            _plant(sandbox, item, item.reference * 60 // 100)
            await transport.bought.wait()
        tg.cancel_scope.cancel()
    await ledger.close()
    return transport.latencies


def _ms(samples: list[float]) -> str:
    ordered = sorted(samples)
    p90 = ordered[int(0.9 * (len(ordered) - 1))]
    return f"median {statistics.median(samples) * 1000:7.2f} ms, p90 {p90 * 1000:7.2f} ms"


async def amain(rounds: int) -> None:
    without = await run(slow=False, rounds=rounds)
    with_slow = await run(slow=True, rounds=rounds)
    ratio = statistics.median(with_slow) / statistics.median(without)
    print(f"intent-to-request latency, {rounds} purchases each (search answer -> buy request)")
    print(f"  without a plugin price source:          {_ms(without)}")
    print(f"  with a source taking {FETCH_SECONDS:.0f} s per fetch:    {_ms(with_slow)}")
    print(f"  ratio (median with / without): {ratio:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    anyio.run(amain, args.rounds)


if __name__ == "__main__":
    main()
