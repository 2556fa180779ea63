"""Restart cost: market time from process start to the first possible purchase after a crash.

Issue 13, point 1. A crash leaves purchases unresolved in the ledger; the restarted engine
must not buy twice, overspend, or stay down. Before, the start-up gate resolved every
leftover before the first purchase (an intent that was never sent waits until its
``project_id`` has been absent for ``absent_after`` = 300 s) and refused to trade (exit 3,
which the systemd unit does not restart) on any failed check, transient or not. Now the
gate holds only the key and the trade link, waiting transient failures out, and the ledger
(which counts every leftover against the caps and refuses its listing a second time) lets
buying resume at once while the reconcile task resolves the leftovers beside it.

Both gates run here in the same process on the same scenarios: the in-process sandbox on a
:class:`~engine.VirtualClock` (market time, so the figures do not depend on the machine),
the real engine, and, for "before", the previous gate's code (kept below as the baseline).
Each scenario starts with a fresh market holding one deal for the rule, and a ledger in
which the crashed run left what the scenario says. Printed per scenario: seconds from
start until buying was allowed, and until the first purchase request went out.

    .venv/bin/python bench/bench_restart.py

Last figures (market seconds until buying was allowed, both gates in the same run):

    scenario                                      before                 after
    intent never sent, crash 5 s before restart   300 s                  0 s
    purchase sent, answer lost                    0 s                    0 s
    intent never sent + one 'busy' (check-many)   exit 3 (down for good) 0 s
    trade link check: three 503s                  exit 3 (down for good) 7 s (1 + 2 + 4)
    trade link check: one HTML page               exit 3 (down for good) 1 s
    worst                                         inf                    7 s
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

import anyio
import httpx

from engine import VirtualClock
from engine._errors import APIError, KeyRejected
from engine._limiter import DEFAULT_LIMITS, RateLimiter
from engine._plugins import make_plugin_host
from engine.client import MarketClient, TradeLink
from engine.ledger import MEMORY, Intent, Ledger, new_project_id
from engine.rules import load_rules_text
from engine.sandbox import MarketConfig, Sandbox, SandboxConfig
from engine.sandbox._market import Listing as SandboxListing
from engine.sniper import Engine, Outcome, TradingRefused

LINK = "https://steamcommunity.com/tradeoffer/new/?partner=123456789&token=AbCdEfGh"


class BeforeEngine(Engine):
    """The engine with the start-up gate it had before issue 13 (the baseline)."""

    async def start_gate(self) -> None:
        await self._old_resolve_leftovers()
        try:
            check = await self.client.check_tradelink(self._trade_link_url)
        except KeyRejected as exc:
            raise TradingRefused(f"the API key was rejected: {exc.message}") from None
        except APIError as exc:
            raise TradingRefused(f"cannot check the trade link: {exc}") from None
        if not check.success:
            raise TradingRefused("the trade link is not valid")
        await self._refresh_balance()

    async def _old_resolve_leftovers(self) -> None:
        settings = self.reconciler.settings
        deadline = self.clock.now() + settings.absent_after + settings.grace
        while True:
            try:
                remaining = await self.reconciler.resolve(final_probe=True)
            except APIError as exc:
                raise TradingRefused(f"leftovers unresolved and the check failed: {exc}") from None
            if not remaining:
                return
            if self.clock.now() >= deadline:
                raise TradingRefused("leftovers still unresolved")
            await self.clock.sleep(min(settings.grace, 15.0))


@dataclass(frozen=True)
class Scenario:
    name: str
    crash: str
    """What the crashed run left: "intent" (written, never sent) or "sent" (the purchase
    reached the service, the answer was lost)."""
    faults: tuple[tuple[str, str, dict[str, object]], ...] = ()


SCENARIOS = (
    Scenario("intent never sent, crash 5 s before restart", "intent"),
    Scenario("purchase sent, answer lost", "sent"),
    Scenario(
        "intent never sent + one 'busy' from check-many",
        "intent",
        (("GET /v1/check-many-project-id", "system_busy", {"count": 1}),),
    ),
    Scenario(
        "trade link check: three 503s",
        "intent",
        (("POST /v1/check-tradelink", "http_error", {"count": 3}),),
    ),
    Scenario(
        "trade link check: one HTML page",
        "intent",
        (("POST /v1/check-tradelink", "html_200", {"count": 1}),),
    ),
)


@dataclass
class Result:
    buying_after: float | None
    first_request_after: float | None
    refused: str | None


def _rules(name: str) -> str:
    return f"""
version: 1
account:
  base_url: "http://sandbox"
  trade_link: "{LINK}"
budgets: {{per_day: "500.00", total: "1000.00"}}
rules:
  - name: deals
    match: {{names: ["{name}"]}}
    discount: 20
    max_price: "200.00"
"""


async def run_one(scenario: Scenario, engine_type: Callable[..., Engine], seed: int) -> Result:
    clock = VirtualClock()
    market = MarketConfig(size=300, deal_share=0.0, hold_share=0.0, mean_lifetime=10**9)
    sandbox = Sandbox(SandboxConfig(seed=seed, market=market), clock=clock)
    item = next(
        i
        for i in sandbox.market.items
        if i.game == "csgo" and not i.phases and 5_000 < i.reference < 150_000
    )
    deals = [_plant(sandbox, item, item.reference // 2 + n) for n in range(2)]
    host = make_plugin_host(load_entry_points=False)
    ruleset = load_rules_text(_rules(item.name), host=host)
    limiter = RateLimiter(clock, DEFAULT_LIMITS)
    async with (
        await Ledger.open(MEMORY, clock=clock) as ledger,
        MarketClient(
            sandbox.api_key,
            base_url="http://sandbox",
            transport=httpx.ASGITransport(app=sandbox.app),
            limiter=limiter,
            clock=clock,
        ) as client,
    ):
        leftover = deals[0]
        pid = new_project_id(clock.now())
        await ledger.record_intent(
            Intent(pid, str(leftover.item_id), item.name, leftover.price, "deals")
        )
        if scenario.crash == "sent":
            link = TradeLink.parse(LINK)
            await client.buy_one_p2p(
                item_id=str(leftover.item_id),
                price=leftover.price,
                partner=link.partner,
                token=link.token,
                project_id=pid,
            )
        clock.advance(5.0)  # the crash and the restart
        for endpoint, kind, fields in scenario.faults:
            sandbox.inject(endpoint, kind, **fields)
        engine = engine_type(
            ruleset=ruleset,
            client=client,
            ledger=ledger,
            clock=clock,
            limiter=limiter,
            host=host,
            trade_link=TradeLink.parse(LINK),
            trade_link_url=LINK,
        )
        start = clock.now()
        refused = None
        try:
            async with clock.autojump():
                await engine.run(duration=900)
        except TradingRefused as exc:
            refused = str(exc)
        status = engine.status
        requests = [
            p.at
            for p in status.purchases
            if p.outcome in (Outcome.BOUGHT, Outcome.UNKNOWN, Outcome.REFUSED)
        ]
        return Result(
            buying_after=None if status.buying_since is None else status.buying_since - start,
            first_request_after=min(requests) - start if requests else None,
            refused=refused,
        )


def _plant(sandbox: Sandbox, item: object, price: int) -> SandboxListing:
    now = sandbox.advance()
    listing = SandboxListing(
        item_id=900_000_000_001 + price,
        item=item,  # type: ignore[arg-type]
        price=price,
        listed_at=now,
        phase=None,
        float_value=None,
        stickers=(),
        unlock_at=None,
        send_until=None,
        paintseed=1,
        initial_price=price,
    )
    sandbox.market.add_listing(listing)
    return listing


def _show(result: Result) -> str:
    if result.refused is not None:
        return "exit 3: down until a person restarts it"
    buying = "-" if result.buying_after is None else f"{result.buying_after:.0f} s"
    first = "-" if result.first_request_after is None else f"{result.first_request_after:.0f} s"
    return f"buying after {buying}, first purchase request after {first}"


async def main(seed: int) -> None:
    print("market seconds from restart to buying (in-process sandbox, virtual clock)\n")
    worst_before, worst_after = 0.0, 0.0
    for scenario in SCENARIOS:
        before = await run_one(scenario, BeforeEngine, seed)
        after = await run_one(scenario, Engine, seed)
        print(f"{scenario.name}\n  before: {_show(before)}\n  after:  {_show(after)}")
        worst_before = max(
            worst_before, float("inf") if before.refused else before.buying_after or 0.0
        )
        worst_after = max(worst_after, float("inf") if after.refused else after.buying_after or 0.0)
    print(f"\nworst time unable to buy: before {worst_before:.0f} s, after {worst_after:.0f} s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()
    anyio.run(main, args.seed)
