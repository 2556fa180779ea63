"""``snipe ledger PATH [--json]``: every purchase in a ledger file, and the totals.

Opens the file read-only: the database file is never written (SQLite may create the
``-wal``/``-shm`` side files, as any reader of a WAL database does). A missing, corrupt or
foreign file, or one written by a newer snipe, is an error with exit code 2 (bad input,
as for every subcommand).
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime

import anyio

from .._clock import SystemClock
from .._errors import ConfigError, LedgerError
from .._money import format_usd
from ..ledger import (
    FILL_PREFIX,
    SCHEMA_VERSION,
    BuyOrderRecord,
    Ledger,
    Purchase,
    Totals,
    summarize,
)

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "ledger",
        help="show every purchase in a ledger file, with totals",
        description=(
            "Show every purchase recorded in a ledger file (project id, item, price, rule,"
            " state, times) and the totals: spent, in flight, refunded, by state, by rule."
            " The file is opened read-only."
        ),
    )
    parser.add_argument("path", metavar="PATH", help="the ledger file (SQLite)")
    parser.add_argument(
        "--json",
        action="store_true",
        help="print JSON instead of a table (money as integers, USD x 1000)",
    )
    parser.set_defaults(handler=run)


async def _load(path: str) -> tuple[list[Purchase], list[BuyOrderRecord]]:
    try:
        async with await Ledger.open(path, clock=SystemClock(), readonly=True) as ledger:
            return await ledger.purchases(), await ledger.orders(live_only=False)
    except LedgerError as exc:
        # the file named on the command line is missing, foreign or corrupt: bad input
        raise ConfigError(str(exc)) from None


def _source(purchase: Purchase) -> str:
    return "buy order" if purchase.project_id.startswith(FILL_PREFIX) else "purchase"


def run(args: argparse.Namespace) -> int:
    purchases, orders = anyio.run(_load, args.path)
    # Totals from the same list, so the two always agree even if a bot is writing.
    totals = summarize(purchases)
    exposure = sum(o.exposure for o in orders)
    if args.json:
        document = {
            "ledger": args.path,
            "schema_version": SCHEMA_VERSION,
            "money_unit": "USD x 1000",
            "purchases": [{**p.to_json(), "source": _source(p)} for p in purchases],
            "totals": totals.to_json(),
            "buy_orders": [o.to_json() for o in orders],
            "order_exposure": exposure,
            "counted_by_caps": totals.committed + exposure,
        }
        json.dump(document, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        _print_tables(args.path, purchases, totals)
        _print_orders(orders, totals, exposure)
    return 0


def _when(epoch: float | int | None) -> str:
    if epoch is None:
        return ""
    return datetime.fromtimestamp(epoch, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")


def _print_tables(path: str, purchases: list[Purchase], totals: Totals) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    if not console.is_terminal:
        # Piped or captured: no wrapping, so every line stays greppable.
        console = Console(width=240)
    table = Table(title=f"Purchases in {path}", title_justify="left")
    for header in ("project_id", "source", "item_id", "name"):
        table.add_column(header, overflow="fold")
    table.add_column("price", justify="right")
    table.add_column("charged", justify="right")
    for header in ("rule", "state", "created (UTC)", "updated (UTC)", "reason"):
        table.add_column(header, overflow="fold")
    for p in purchases:
        table.add_row(
            p.project_id,
            _source(p),
            p.item_id,
            p.name,
            format_usd(p.price),
            format_usd(p.charged_price) if p.charged_price is not None else "",
            p.rule,
            p.state.value,
            _when(p.created_at),
            _when(p.updated_at),
            p.reason or "",
        )
    console.print(table)
    if not purchases:
        console.print("no purchases yet")

    summary = Table(title="Totals", title_justify="left")
    summary.add_column("")
    for header in ("spent", "in flight", "committed", "refunded", "counted"):
        summary.add_column(header, justify="right")
    summary.add_row(
        "all rules",
        format_usd(totals.spent),
        format_usd(totals.in_flight),
        format_usd(totals.committed),
        format_usd(totals.refunded),
        str(sum(t.count for t in totals.by_rule.values())),
    )
    for rule, t in totals.by_rule.items():
        summary.add_row(
            f"rule {rule}",
            format_usd(t.spent),
            format_usd(t.in_flight),
            format_usd(t.spent + t.in_flight),
            format_usd(t.refunded),
            str(t.count),
        )
    console.print(summary)
    states = ", ".join(f"{state} {n}" for state, n in totals.by_state.items())
    console.print(f"By state: {states}")
    console.print("counted = purchases a budget counts (in flight or spent)")


def _print_orders(orders: list[BuyOrderRecord], totals: Totals, exposure: int) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console() if Console().is_terminal else Console(width=240)
    if orders:
        table = Table(title="Buy orders", title_justify="left")
        for header in ("name", "order id", "rule", "state"):
            table.add_column(header, overflow="fold")
        for header in ("price", "amount", "filled", "exposure"):
            table.add_column(header, justify="right")
        for o in orders:
            table.add_row(
                o.name,
                "" if o.order_id is None else str(o.order_id),
                o.rule,
                o.state.value,
                format_usd(o.price),
                str(o.amount),
                str(o.filled),
                format_usd(o.exposure),
            )
        console.print(table)
    # The fills are rows of the purchases table (source "buy order"); the exposure is
    # what live orders may still buy, counted by every cap but not in the totals.
    console.print(
        f"buy-order exposure {format_usd(exposure)} (not in the totals above);"
        f" counted by the caps: {format_usd(totals.committed + exposure)}"
    )
