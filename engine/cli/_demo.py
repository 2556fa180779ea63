"""``snipe demo``: the engine on the embedded sandbox market, sped up, with a summary.

It starts the sandbox in-process with a seeded market on a sped-up clock, runs the engine
with ``rules.example.yaml`` (the sandbox's funded key and an in-memory ledger; nothing real
is touched), and prints what it watched, what it bought and why, and what it skipped and
why, beside what the sandbox says really happened.

The engine reads the sandbox's live listing feed as ``snipe run`` reads the service's: a
websocket, here to the sandbox served by hypercorn on a loopback port the system picks
(127.0.0.1 only; the interface's calls stay in-process). A real socket rather than an
in-process websocket transport, because it is the very path a run against ``snipe
sandbox`` takes (backpressure included: a sender that outruns the reader waits, as on the
wire) and the feed's connections then end when they end. The feed's heartbeat is the
service's in real seconds (25 s, 20 s): the market's clock runs fast, the network does
not. The market stands still (:class:`HeldClock`) until the engine has started and the
feed has answered (or given up), so even a short demo on a loaded machine shows both at
work from the market's first second.

The market's own deals are there from its first second, so the start-up snapshot and
searches find them all, and the feed would see none of what is bought first. So the demo's
market also lists a few deals while the engine runs (:func:`feed_deals`, the same for a
seed, spread over the run): the feed tells each the moment it is listed, and the summary's
"seen first by the live feed" counts those the engine bought on its word.
"""

from __future__ import annotations

import argparse
import logging
import random
import sys
import time
from pathlib import Path
from typing import Any, cast

import anyio
import httpx
from rich.console import Console
from rich.live import Live
from rich.markup import escape

from .._clock import ScaledClock
from .._errors import ConfigError
from .._money import format_usd
from .._plugins import make_plugin_host
from ..ledger import MEMORY
from ..rules import RuleSet, load_rules
from ..sandbox import CatalogueItem, FeedConfig, MarketConfig, Sandbox, SandboxConfig, served
from ..sniper import (
    Engine,
    EngineMode,
    EngineSettings,
    PurchaseRecord,
    SessionOptions,
    open_engine,
    status_line,
)
from ._args import duration, positive
from ._demo_view import (
    WIDTH,
    Progress,
    bought_table,
    purchase_line,
    rules_table,
    skipped_table,
)
from ._run import setup_logging

__all__ = ["register"]

_EXAMPLE = "rules.example.yaml"
DEMO_BALANCE = 2_000_000
"""The sandbox account's balance ($2,000): above the example rules' $1,000 total cap, so
the caps, not the balance, are what limit the demo."""
_PLAIN_EVERY = 5.0
"""Real seconds between progress lines when the output is not a terminal."""
_READY_WAIT = 10.0
"""Real seconds the market is held for the engine to start and the feed to answer (a feed
that does not answer by then is left to the engine: the snapshot serves)."""
_HEARTBEAT = (25.0, 20.0)
"""The service's pingInterval and pingTimeout, real seconds."""
_OPEN_TIMEOUT = 10.0
"""Real seconds a feed connection may take to say hello."""
FEED_DEALS = 4
"""Deals the demo's market lists while the engine runs, for the feed to see first."""
_FEED_DISCOUNT = 40
"""How far under its reference price each of them is listed, percent."""


class HeldClock:
    """A :class:`~engine.ScaledClock` that stands still at ``start`` until
    :meth:`release`: the demo's market waits for the engine to start and the feed to
    answer, however long a loaded machine takes (at 60x, each real second of start-up
    would be a market minute in which the first deals go to others). Waits that end
    later than ``start`` last until the release and then as long as they have left."""

    def __init__(self, *, start: float, speed: float) -> None:
        self._scaled = ScaledClock(start=start, speed=speed)
        self._start = start
        self._released = anyio.Event()

    @property
    def speed(self) -> float:
        return self._scaled.speed

    def release(self) -> None:
        """Let time run from ``start`` on, ``speed`` times real time."""
        if not self._released.is_set():
            self._scaled = ScaledClock(start=self._start, speed=self._scaled.speed)
            self._released.set()

    def now(self) -> float:
        return self._scaled.now() if self._released.is_set() else self._start

    async def sleep_until(self, deadline: float) -> None:
        if deadline > self.now():
            await self._released.wait()
        await self._scaled.sleep_until(deadline)

    async def sleep(self, seconds: float) -> None:
        await self.sleep_until(self.now() + max(0.0, seconds))

    def __repr__(self) -> str:
        state = "running" if self._released.is_set() else "held"
        return f"HeldClock(speed={self.speed}, {state})"


def feed_deals(
    sandbox: Sandbox, ruleset: RuleSet, seed: int, count: int = FEED_DEALS
) -> list[tuple[CatalogueItem, int, float | None]]:
    """The deals the market lists while the engine runs: ``count`` items (item, price,
    float), drawn with ``seed`` from those a rule buys on the feed's word (it needs no
    confirming search) could buy as a plain listing (no phase, no stickers, tradable)
    :data:`_FEED_DISCOUNT` % under its reference and under the rule's ``max_price``, the
    float in the best fifth of the item's range. Whether a rule takes one is the rules'
    (and their caps') business, as for any listing."""
    candidates: list[tuple[CatalogueItem, int, float | None]] = []
    for item in sorted(sandbox.market.items, key=lambda i: i.name):
        price = item.reference * (100 - _FEED_DISCOUNT) // 100
        if item.phases or not any(
            r.action in ("buy", "bulk") and not r.needs_search and price <= r.max_price
            for r in ruleset.view(item.name).rules
        ):
            continue
        wear = item.float_range
        candidates.append(
            (item, price, None if wear is None else wear[0] + (wear[1] - wear[0]) / 5)
        )
    return random.Random(seed).sample(candidates, min(count, len(candidates)))


async def _list_deals(
    sandbox: Sandbox,
    clock: HeldClock,
    deals: list[tuple[CatalogueItem, int, float | None]],
    started: float,
    total: float,
) -> None:
    """Lists ``deals`` on the market one by one, evenly spread from a fifth of the run's
    ``total`` market seconds from ``started`` (the feed's gap healed by then, so the feed
    is what tells them) to three fifths (the engine has the rest to buy the last one)."""
    for n, (item, price, wear) in enumerate(deals):
        await clock.sleep_until(started + total * (0.2 + 0.4 * n / max(1, len(deals) - 1)))
        sandbox.advance()
        sandbox.market.plant(item, price, float_value=wear)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="run the engine on the embedded sandbox market and summarise",
        description="Start the sandbox in-process, run the engine with the example rules "
        "on a sped-up market, and print what it watched, bought and skipped, and why.",
    )
    parser.add_argument(
        "--seconds",
        type=duration,
        default=30.0,
        metavar="DURATION",
        help="real time to run: 30, 45s, 2m (default 30 seconds)",
    )
    parser.add_argument(
        "--speed",
        type=positive,
        default=60.0,
        help="market seconds per real second (default 60)",
    )
    parser.add_argument("--seed", type=int, default=7, help="the market's seed (default 7)")
    parser.add_argument("--rules", metavar="PATH", help=f"rules file (default {_EXAMPLE})")
    parser.add_argument(
        "--log-level", default="WARNING", choices=["DEBUG", "INFO", "WARNING", "ERROR"]
    )
    parser.set_defaults(handler=run)


def find_rules(given: str | None) -> Path:
    """The rules file: ``--rules``, else ``rules.example.yaml`` here or beside the package."""
    if given is not None:
        return Path(given)
    for candidate in (Path(_EXAMPLE), Path(__file__).resolve().parents[2] / _EXAMPLE):
        if candidate.is_file():
            return candidate
    raise ConfigError(f"{_EXAMPLE} not found here or beside the package; pass --rules PATH")


def run(args: argparse.Namespace) -> int:
    setup_logging(args.log_level, "text")
    terminal = Console(highlight=False)
    # at most WIDTH columns whatever the terminal; output that is not a terminal gets WIDTH
    width = min(terminal.width, WIDTH) if terminal.is_terminal else WIDTH
    console = Console(highlight=False, width=width)
    return run_demo(args, console)


def run_demo(args: argparse.Namespace, console: Console) -> int:
    """The demo, printed on ``console``: a live panel when it is a terminal, plain
    progress lines otherwise, then the summary."""
    host = make_plugin_host()
    try:
        path = find_rules(args.rules)
        ruleset = load_rules(path, host=host)
    except ConfigError as exc:
        print(f"snipe demo: {exc}", file=sys.stderr)
        return 2

    async def main() -> int:
        clock = HeldClock(start=time.time(), speed=args.speed)
        # The market features the names the rules watch, so a short demo sees their deals.
        market = MarketConfig(size=4000, featured=tuple(sorted(ruleset.watched_names)))
        interval, timeout = _HEARTBEAT
        feed = FeedConfig(ping_interval=interval * args.speed, ping_timeout=timeout * args.speed)
        sandbox = Sandbox(
            SandboxConfig(seed=args.seed, market=market, balance=DEMO_BALANCE, feed=feed),
            clock=clock,
        )
        total = args.seconds * args.speed
        budgets = ruleset.budgets
        deals = feed_deals(sandbox, ruleset, args.seed)
        console.print(
            f"[bold]snipe demo[/]: {escape(str(path))} on an in-process sandbox market of "
            f"{len(sandbox.market.listings):,} listings at {args.speed:g}x speed: "
            f"{args.seconds:g} s ({total / 60:.0f} market minutes). The sandbox account "
            f"holds {format_usd(DEMO_BALANCE)}; the rules may spend "
            f"{format_usd(budgets.per_day)} a day, {format_usd(budgets.total)} in total. "
            f"The market lists {len(deals)} deal(s) while the engine runs, for the live "
            "feed to tell first. Nothing real is touched."
        )
        console.print(rules_table(ruleset))
        async with served(sandbox) as feed_url:
            options = SessionOptions(
                base_url="http://sandbox",
                ledger=MEMORY,
                transport=httpx.ASGITransport(app=cast("Any", sandbox.app)),
                feed=True,
                feed_url=feed_url,
                feed_open_timeout=_OPEN_TIMEOUT * args.speed,
            )
            async with open_engine(
                ruleset,
                api_key=sandbox.api_key,
                clock=clock,
                host=host,
                settings=EngineSettings(),
                options=options,
            ) as engine:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(_run_engine, engine, tg.cancel_scope)
                    await _ready(engine)
                    clock.release()
                    started = clock.now()
                    tg.start_soon(_show_progress, console, engine, started, total)
                    tg.start_soon(_list_deals, sandbox, clock, deals, started, total)
                    await clock.sleep(total)
                    tg.cancel_scope.cancel()
                await _summary(console, engine, sandbox)
        return 0

    return anyio.run(main)


async def _run_engine(engine: Engine, scope: anyio.CancelScope) -> None:
    """The engine until the demo ends it (or it stops by itself: a HALT)."""
    await engine.run()
    scope.cancel()


async def _ready(engine: Engine) -> None:
    """Until the engine has started (its start-up gate passed, or it stopped) and the feed
    has answered (or ``auto`` gave up on it), or :data:`_READY_WAIT` real seconds have
    passed: the market is held still until then."""
    watch = engine.feedwatch
    with anyio.move_on_after(_READY_WAIT):
        # the engine's state has no event to wait on: a look every 10 ms
        while True:
            mode = engine.status.mode
            if mode is EngineMode.STOPPED:
                return
            if mode is not EngineMode.STARTING and (watch.generation or watch.unavailable):
                return
            await anyio.sleep(0.01)


async def _show_progress(console: Console, engine: Engine, started: float, total: float) -> None:
    """Until cancelled: on a terminal a live panel (counters, latest purchases) with each
    purchase printed above it as it happens; otherwise each purchase as a line and a
    progress line every few seconds."""
    shown = 0

    def new_purchases() -> list[PurchaseRecord]:
        nonlocal shown
        records = engine.status.purchases_since(shown)
        shown = engine.status.purchases_recorded
        return records

    if console.is_terminal:
        # the panel is shown even when the run ends before the first look is done
        with anyio.CancelScope(shield=True):
            progress = await Progress.of(engine, started, total)
        with Live(progress.panel([]), console=console, refresh_per_second=4) as live:
            # log lines go above the panel too, not through it
            handlers = [h for h in logging.getLogger().handlers if type(h) is logging.StreamHandler]
            streams = [h.setStream(sys.stderr) for h in handlers]
            try:
                while True:
                    for record in new_purchases():
                        live.console.print(escape(purchase_line(record)))
                    progress = await Progress.of(engine, started, total)
                    live.update(progress.panel(progress.recent))
                    await anyio.sleep(0.25)
            finally:
                # purchases made after the last look (the run ends between two looks),
                # and the panel as the run ended
                for record in new_purchases():
                    live.console.print(escape(purchase_line(record)))
                with anyio.CancelScope(shield=True):
                    progress = await Progress.of(engine, started, total)
                live.update(progress.panel(progress.recent))
                for handler, stream in zip(handlers, streams, strict=True):
                    if stream is not None:
                        handler.setStream(stream)
    next_line = 0.0
    try:
        while True:
            for record in new_purchases():
                console.print(escape(purchase_line(record)))
            now = time.monotonic()
            if now >= next_line:
                console.print(escape((await Progress.of(engine, started, total)).line()))
                next_line = now + _PLAIN_EVERY
            await anyio.sleep(0.25)
    finally:
        # purchases made after the last look (the run ends between two looks), and where
        # the market got to: a short run on a loaded machine may end before the first look
        for record in new_purchases():
            console.print(escape(purchase_line(record)))
        with anyio.CancelScope(shield=True):
            console.print(escape((await Progress.of(engine, started, total)).line()))


async def _summary(console: Console, engine: Engine, sandbox: Sandbox) -> None:
    view = await engine.view()
    console.print(escape(status_line(view)))
    console.print(
        f"watched {view.watched} names; {view.searches} searches, "
        f"{view.snapshots} snapshots, {view.listings_seen:,} listings looked at in searches"
        + ("" if view.feed is None else f", {view.feed.events:,} feed events")
        + f"; {view.candidates} accepted by the rules"
    )
    if view.recent:
        console.print(bought_table(list(view.recent)))
    else:
        console.print("[yellow]nothing was bought[/]")
    console.print(skipped_table(view))
    feed = view.feed
    if feed is None:
        console.print("live feed: off")
    else:
        console.print(
            f"live feed: {feed.state}, {feed.events:,} events received, "
            f"{feed.reconnects} reconnects, {feed.gaps_healed} gaps healed, {feed.missed} missed"
        )
    truth = sandbox.ground_truth()
    real = len(truth["purchases"])
    on_feed = sum(str(p["item_id"]) in engine.feedwatch.bought_items for p in truth["purchases"])
    balance = truth["balances"][truth["default_account"]]
    console.print(
        f"sandbox ground truth: {real} purchase(s) for {format_usd(DEMO_BALANCE - balance)} "
        f"(the account went from {format_usd(DEMO_BALANCE)} to {format_usd(balance)})"
    )
    console.print(
        f"the engine counted {view.bought} bought; seen first by the live feed: {on_feed}, "
        f"by a search or the snapshot: {real - on_feed}"
    )
    if view.halt_reason:
        console.print(f"[red]HALTED[/]: {escape(view.halt_reason)}")
    for error in view.errors:
        console.print(f"[yellow]error[/]: {escape(error)}")
