"""An engine wired to an in-process sandbox on one virtual clock, for tests."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass

import httpx

from engine import VirtualClock
from engine._limiter import Limit, RateLimiter
from engine._plugins import PluginHost, make_plugin_host
from engine.client import MarketClient, TradeLink
from engine.ledger import MEMORY, Ledger
from engine.rules import RuleSet, load_rules_text
from engine.sandbox import MarketConfig, Sandbox, SandboxConfig
from engine.sandbox._catalogue import CatalogueItem
from engine.sandbox._market import Listing as SandboxListing
from engine.sniper import Engine, EngineSettings

TRADE_LINK = "https://steamcommunity.com/tradeoffer/new/?partner=123456789&token=AbCdEfGh"

_ids = itertools.count(900_000_000_001)


def rules_text(
    name: str, *, extra: str = "", rule_extra: str = "", budgets: str = "", game: str = ""
) -> str:
    game_key = f", game: {game}" if game else ""
    return f"""
version: 1
account:
  base_url: "http://sandbox"
  trade_link: "{TRADE_LINK}"
budgets: {budgets or '{per_day: "500.00", total: "1000.00"}'}
rules:
  - name: deals
    match: {{names: ["{name}"]{game_key}}}
    discount: 20
    max_price: "200.00"
{rule_extra}
{extra}
"""


def quiet_sandbox(clock: VirtualClock, *, seed: int = 3) -> Sandbox:
    """A small market whose own churn is slow, so tests control what is for sale."""
    market = MarketConfig(size=300, deal_share=0.0, hold_share=0.0, mean_lifetime=10**9)
    return Sandbox(SandboxConfig(seed=seed, market=market), clock=clock)


def pick_item(sandbox: Sandbox, *, max_reference: int = 150_000) -> CatalogueItem:
    """A csgo item without phases whose reference price a rule can afford."""
    return next(
        item
        for item in sandbox.market.items
        if item.game == "csgo" and not item.phases and 5_000 < item.reference < max_reference
    )


def plant(
    sandbox: Sandbox,
    item: CatalogueItem,
    *,
    price: int,
    unlock_in: float | None = None,
    send_window: float = 12 * 3600.0,
    arrive: bool = False,
) -> SandboxListing:
    """Put a listing of ``item`` at ``price`` on the sandbox market now (with ``arrive``,
    as a new arrival: the account's buy orders get it first)."""
    now = sandbox.advance()
    low_high = item.float_range
    listing = SandboxListing(
        item_id=next(_ids),
        item=item,
        price=price,
        listed_at=now,
        phase=None,
        float_value=None if low_high is None else (low_high[0] + low_high[1]) / 2,
        stickers=(),
        unlock_at=None if unlock_in is None else now + unlock_in,
        send_until=None if unlock_in is None else now + unlock_in + send_window,
        paintseed=1,
        initial_price=price,
    )
    sandbox.market.add_listing(listing, arrive=arrive)
    return listing


@dataclass
class Rig:
    clock: VirtualClock
    sandbox: Sandbox
    client: MarketClient
    ledger: Ledger
    limiter: RateLimiter
    host: PluginHost
    ruleset: RuleSet
    engine: Engine


@asynccontextmanager
async def rig(
    clock: VirtualClock,
    sandbox: Sandbox,
    rules: str,
    *,
    settings: EngineSettings | None = None,
    ledger: Ledger | None = None,
    plugins: Sequence[tuple[str, object]] = (),
    client_timeout: float = 10.0,
    transport: httpx.AsyncBaseTransport | None = None,
    trade_link: str = TRADE_LINK,
    api_key: str | None = None,
    search_per_minute: int = 20,
) -> AsyncIterator[Rig]:
    host = make_plugin_host(load_entry_points=False, plugins=plugins)
    ruleset = load_rules_text(rules, host=host)
    limiter = RateLimiter(
        clock,
        {
            "search": Limit(search_per_minute, 60.0),
            "buy_order": Limit(60, 60.0),
            "set_platform_api": Limit(5, 60.0),
        },
    )
    transport = transport or httpx.ASGITransport(app=sandbox.app)
    own_ledger = ledger is None
    if ledger is None:
        ledger = await Ledger.open(MEMORY, clock=clock)
    client = MarketClient(
        api_key or sandbox.api_key,
        base_url="http://sandbox",
        transport=transport,
        limiter=limiter,
        clock=clock,
        timeout=client_timeout,
    )
    engine = Engine(
        ruleset=ruleset,
        client=client,
        ledger=ledger,
        clock=clock,
        limiter=limiter,
        host=host,
        trade_link=TradeLink.parse(trade_link),
        trade_link_url=trade_link,
        settings=settings or EngineSettings(),
    )
    try:
        yield Rig(clock, sandbox, client, ledger, limiter, host, ruleset, engine)
    finally:
        await client.aclose()
        if own_ledger:
            await ledger.close()


def purchases_of(sandbox: Sandbox) -> list[dict[str, object]]:
    truth = sandbox.ground_truth()
    return list(truth["purchases"])
