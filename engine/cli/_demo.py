"""``snipe demo``: the engine on the embedded sandbox market, sped up, with a summary.

It starts the sandbox in-process with a seeded market on a sped-up clock, runs the engine
with ``rules.example.yaml`` (the sandbox's funded key and an in-memory ledger; nothing real
is touched), and prints what it watched, what it bought and why, and what it skipped and
why, beside what the sandbox says really happened.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any, cast

import anyio
import httpx
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from .._clock import ScaledClock
from .._errors import ConfigError
from .._money import format_usd
from .._plugins import make_plugin_host
from ..ledger import MEMORY
from ..rules import RuleSet, load_rules
from ..sandbox import MarketConfig, Sandbox, SandboxConfig
from ..sniper import Engine, EngineSettings, Outcome, PurchaseRecord
from ..sniper._session import SessionOptions, open_engine
from ._args import duration, positive
from ._run import setup_logging

__all__ = ["register"]

_EXAMPLE = "rules.example.yaml"


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
    console = Console(highlight=False)
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
            SandboxConfig(seed=args.seed, market=market, balance=2_000_000), clock=clock
        )
        options = SessionOptions(
            base_url="http://sandbox",
            ledger=MEMORY,
            transport=httpx.ASGITransport(app=cast("Any", sandbox.app)),
        )
        console.print(
            f"[bold]snipe demo[/]: {escape(str(path))} on a sandbox market of "
            f"{len(sandbox.market.listings)} listings, {args.speed:g}x speed, "
            f"{args.seconds:g} s ({args.seconds * args.speed / 60:.0f} market minutes)"
        )
        async with open_engine(
            ruleset,
            api_key=sandbox.api_key,
            clock=clock,
            host=host,
            settings=EngineSettings(),
            options=options,
        ) as engine:
            with console.status("watching the market..."):
                await engine.run(duration=args.seconds * args.speed)
            await _summary(console, engine, ruleset, sandbox)
        return 0

    return anyio.run(main)


def _why(record: PurchaseRecord) -> str:
    facts = []
    if record.reference:
        off = 100 * (record.reference - record.price) / record.reference
        facts.append(f"{off:.0f}% under {format_usd(record.reference)}")
    if record.float_value is not None:
        facts.append(f"float {record.float_value:.4f}")
    rule = [r for r in record.reasons if not r.startswith(("name ", "within budgets"))]
    return "; ".join(facts) + "\nrule: " + "; ".join(rule)


async def _summary(console: Console, engine: Engine, ruleset: RuleSet, sandbox: Sandbox) -> None:
    status = engine.status
    console.print(await engine.status_line())
    console.print(
        f"watched {len(engine.schedule.watched)} names; {status.searches} searches, "
        f"{status.snapshots} snapshots, {status.listings_seen} listings looked at, "
        f"{status.candidates} accepted by the rules"
    )
    bought = Table(title="What it bought, and why", show_lines=True)
    for column in ("item", "price", "rule", "outcome", "why"):
        bought.add_column(column)
    for record in status.purchases:
        why = record.detail or _why(record)
        bought.add_row(
            escape(record.name),
            format_usd(record.price),
            record.rule,
            record.outcome.value,
            escape(why),
        )
    console.print(bought if status.purchases else "[yellow]nothing was bought[/]")
    skipped = Table(title="What it skipped, and why (most common reasons)")
    skipped.add_column("reason")
    skipped.add_column("listings", justify="right")
    for reason, count in status.skip_reasons.most_common(8):
        skipped.add_row(escape(reason), str(count))
    console.print(skipped)
    truth = sandbox.ground_truth()
    real = len(truth["purchases"])
    ours = status.outcomes[Outcome.BOUGHT] + status.outcomes[Outcome.RESERVED]
    console.print(
        f"sandbox ground truth: {real} purchase(s), balance now "
        f"{format_usd(truth['balances'][truth['default_account']])}; engine bought {ours}"
    )
    if status.halt_reason:
        console.print(f"[red]HALTED[/]: {escape(status.halt_reason)}")
    for error in status.errors:
        console.print(f"[yellow]error[/]: {escape(error)}")
