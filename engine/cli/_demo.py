"""``snipe demo``: the engine on the embedded sandbox market, sped up, with a summary.

It starts the sandbox in-process with a seeded market on a sped-up clock, runs the engine
with ``rules.example.yaml`` (the sandbox's funded key and an in-memory ledger; nothing real
is touched), and prints what it watched, what it bought and why, and what it skipped and
why, beside what the sandbox says really happened.
"""

from __future__ import annotations

import argparse
import logging
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
from ..rules import load_rules
from ..sandbox import MarketConfig, Sandbox, SandboxConfig
from ..sniper import (
    Engine,
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
        clock = ScaledClock(start=time.time(), speed=args.speed)
        # The market features the names the rules watch, so a short demo sees their deals.
        market = MarketConfig(size=4000, featured=tuple(sorted(ruleset.watched_names)))
        sandbox = Sandbox(
            SandboxConfig(seed=args.seed, market=market, balance=DEMO_BALANCE), clock=clock
        )
        options = SessionOptions(
            base_url="http://sandbox",
            ledger=MEMORY,
            transport=httpx.ASGITransport(app=cast("Any", sandbox.app)),
        )
        total = args.seconds * args.speed
        budgets = ruleset.budgets
        console.print(
            f"[bold]snipe demo[/]: {escape(str(path))} on an in-process sandbox market of "
            f"{len(sandbox.market.listings):,} listings at {args.speed:g}x speed: "
            f"{args.seconds:g} s ({total / 60:.0f} market minutes). The sandbox account "
            f"holds {format_usd(DEMO_BALANCE)}; the rules may spend "
            f"{format_usd(budgets.per_day)} a day, {format_usd(budgets.total)} in total. "
            "Nothing real is touched."
        )
        console.print(rules_table(ruleset))
        async with open_engine(
            ruleset,
            api_key=sandbox.api_key,
            clock=clock,
            host=host,
            settings=EngineSettings(),
            options=options,
        ) as engine:
            started = clock.now()
            async with anyio.create_task_group() as tg:
                tg.start_soon(_show_progress, console, engine, started, total)
                await engine.run(duration=total)
                tg.cancel_scope.cancel()
            await _summary(console, engine, sandbox)
        return 0

    return anyio.run(main)


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
                # purchases made after the last look (the run ends between two looks)
                for record in new_purchases():
                    live.console.print(escape(purchase_line(record)))
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
        # purchases made after the last look (the run ends between two looks)
        for record in new_purchases():
            console.print(escape(purchase_line(record)))


async def _summary(console: Console, engine: Engine, sandbox: Sandbox) -> None:
    view = await engine.view()
    console.print(escape(status_line(view)))
    console.print(
        f"watched {view.watched} names; {view.searches} searches, "
        f"{view.snapshots} snapshots, {view.listings_seen:,} listings looked at, "
        f"{view.candidates} accepted by the rules"
    )
    if view.recent:
        console.print(bought_table(list(view.recent)))
    else:
        console.print("[yellow]nothing was bought[/]")
    console.print(skipped_table(view))
    truth = sandbox.ground_truth()
    real = len(truth["purchases"])
    ours = view.bought
    balance = truth["balances"][truth["default_account"]]
    console.print(
        f"sandbox ground truth: {real} purchase(s); the account went from "
        f"{format_usd(DEMO_BALANCE)} to {format_usd(balance)} "
        f"({format_usd(DEMO_BALANCE - balance)} spent); the engine counted {ours} bought"
    )
    if view.halt_reason:
        console.print(f"[red]HALTED[/]: {escape(view.halt_reason)}")
    for error in view.errors:
        console.print(f"[yellow]error[/]: {escape(error)}")
