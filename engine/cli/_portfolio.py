"""``snipe portfolio LEDGER``: what is held, what it is worth, what was made.

Opens the ledger read-only (like ``snipe ledger``) and the reference file beside it
(``<ledger>.prices.sqlite``, or ``prices.store`` of ``--rules``, or ``--store``)
read-only; values every holding by :func:`engine.portfolio.value_portfolio`. Settings come
from the rules file's ``portfolio:`` section, and the flags override them. Sales made
elsewhere come from ``--sales FILE`` (CSV, see :mod:`engine.portfolio._sales`), read on
each run; nothing is written anywhere.

Exit status 0 (also when nothing is held or nothing has a value: that is an answer), 2 for
bad input (a missing or foreign ledger, a bad rules file, flag or sales row).
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import time
from datetime import UTC, datetime
from typing import Any

import anyio
from pydantic import ValidationError

from .._clock import SystemClock
from .._errors import ConfigError, LedgerError
from .._money import format_usd
from ..ledger import (
    BUDGET_STATES,
    IN_FLIGHT_STATES,
    SPENT_STATES,
    Ledger,
    Purchase,
    PurchaseState,
)
from ..paper import MODE_KEY, START_KEY
from ..portfolio import (
    GROUPINGS,
    Group,
    Lookup,
    Portfolio,
    Sale,
    hub_lookup,
    parse_sales,
    value_portfolio,
)
from ..reference import (
    BUCKETS,
    PriceList,
    PriceStore,
    ReferenceHub,
    parse_price_list,
    store_path_for,
)
from ..rules import (
    VALUE_SOURCES,
    PortfolioSettings,
    PricesSettings,
    format_duration,
)

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "portfolio",
        help="value what a ledger holds, and what was made",
        description=(
            "Every holding of a ledger (bought, not refunded, not sold) valued at a"
            " reference price from the file beside the ledger, with its observations and"
            " age; trade-locked holdings marked illiquid; cost, value and unrealised margin"
            " by item, rule, day and week; realised P&L of the sales given with --sales."
            " Read-only."
        ),
    )
    parser.add_argument("ledger", metavar="LEDGER", help="the ledger file (SQLite)")
    parser.add_argument(
        "--rules",
        metavar="RULES.yaml",
        help="read the portfolio: and prices: sections of this rules file",
    )
    parser.add_argument("--store", metavar="PATH", help="the reference price file itself")
    parser.add_argument(
        "--by",
        choices=GROUPINGS,
        default="rule",
        help="the grouping shown as a table (all are in --json); default rule",
    )
    parser.add_argument(
        "--value-by",
        metavar="SOURCE",
        help=f"the reference to value at: {', '.join(VALUE_SOURCES)} or file.NAME"
        " (default: portfolio.value_by, else market.p25)",
    )
    parser.add_argument(
        "--sale-fee",
        metavar="PERCENT",
        help="the fee taken from a sale, e.g. 5%% (default: portfolio.sale_fee; none)",
    )
    parser.add_argument("--channel", help="where things are sold (a label shown with the fee)")
    parser.add_argument(
        "--sales",
        metavar="CSV",
        action="append",
        default=[],
        help="sales made elsewhere: project_id,price,sold_at[,fee][,channel] (repeatable)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON (money in USD x 1000)")
    parser.set_defaults(handler=run)


def _settings(args: argparse.Namespace) -> tuple[PortfolioSettings, PricesSettings, str | None]:
    """The portfolio and prices settings, and the reference file's path if known."""
    portfolio, prices = PortfolioSettings(), PricesSettings()
    store = args.store
    if args.rules:
        from .._plugins import make_plugin_host
        from ..rules import check_rules_file

        result = check_rules_file(args.rules, host=make_plugin_host())
        if result.ruleset is None:
            first = result.errors[0] if result.errors else "unreadable"
            raise ConfigError(f"the rules file has errors, first: {first}", location=args.rules)
        portfolio, prices = result.ruleset.portfolio, result.ruleset.prices
        store = store or prices.store
    flags = {"value_by": "--value-by", "sale_fee": "--sale-fee", "channel": "--channel"}
    update = {k: getattr(args, k) for k in flags if getattr(args, k) is not None}
    if update:
        try:  # the flags alone, as written (the section's values are already parsed)
            given = PortfolioSettings.model_validate(update)
        except ValidationError as exc:
            error = exc.errors(include_url=False)[0]
            message = str(error["msg"]).removeprefix("Value error, ")
            raise ConfigError(message, location=flags[str(error["loc"][0])]) from None
        portfolio = portfolio.model_copy(update={k: getattr(given, k) for k in update})
    return portfolio, prices, store


def _read_sales(paths: list[str]) -> list[Sale]:
    sales: list[Sale] = []
    for path in paths:
        try:
            with open(path, encoding="utf-8-sig", newline="") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read the sales file: {exc}", location=path) from None
        sales += parse_sales(text, origin=path)
    return sales


async def _load(
    ledger_path: str, store_path: str | None, prices: PricesSettings, source: str, now: float
) -> tuple[list[Purchase], Lookup, str | None, dict[str, Any] | None]:
    try:
        async with await Ledger.open(ledger_path, clock=SystemClock(), readonly=True) as ledger:
            purchases = await ledger.purchases()
            paper = await paper_summary(ledger, purchases)
    except LedgerError as exc:
        raise ConfigError(str(exc)) from None
    path = store_path or store_path_for(ledger_path)
    missing = None
    if path is None or not await anyio.Path(path).exists():
        hub = ReferenceHub(prices, clock=SystemClock())
        missing = f"no reference file at {path}: no market.* or service.* reference"
    else:
        hub = await _restored(str(path), prices)
    await _read_list(hub, prices, source, now)
    return purchases, hub_lookup(hub, source, now), missing, paper


async def _restored(path: str, prices: PricesSettings) -> ReferenceHub:
    """A hub restored from the reference file, read-only."""
    try:
        store = PriceStore.open_read_only(path)
    except sqlite3.Error as exc:
        raise ConfigError(f"cannot read the reference file: {exc}", location=path) from None
    try:
        window = round(store.bucket_seconds * BUCKETS)
        if window and window != prices.market.window:  # read buckets with the width written
            market = prices.market.model_copy(update={"window": window})
            prices = prices.model_copy(update={"market": market})
        hub = ReferenceHub(prices, clock=SystemClock(), store=store)
        await hub.restore()
    except sqlite3.Error as exc:
        raise ConfigError(f"cannot read the reference file: {exc}", location=path) from None
    finally:
        store.close_sync()
    return hub


async def _read_list(hub: ReferenceHub, prices: PricesSettings, source: str, now: float) -> None:
    """A ``file.NAME`` list with a ``path`` that no run has stored yet is read now (as
    ``snipe prices`` does), its age counted from now."""
    settings = prices.lists.get(source.removeprefix("file."))
    if not source.startswith("file.") or source in hub.lists or settings is None:
        return
    if settings.path is None:
        return  # an address: only a run fetches it
    try:
        data = await anyio.Path(settings.path).read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read the price list: {exc}", location=settings.path) from None
    rows = parse_price_list(data, origin=settings.path, fmt=settings.format, unit=settings.unit)
    hub.lists[source] = PriceList(source, rows.prices, now, settings.path, len(rows.set_aside))


def run(args: argparse.Namespace) -> int:
    settings, prices, store = _settings(args)
    sales = _read_sales(args.sales)
    now = time.time()
    purchases, lookup, missing, paper = anyio.run(
        _load, args.ledger, store, prices, settings.value_by, now
    )
    portfolio = value_portfolio(purchases, lookup, settings, now=now, sales=sales)
    notes = list(portfolio.notes)
    if missing:
        notes.append(missing)
    notes.append(
        "sales on the service are not read: my-history has sell rows, but they name the"
        " item by the id it was listed under, and nothing in the interface ties that to"
        " a purchase (on the platform a traded item gets a new id); give sales with --sales"
    )
    if args.json:
        document = {"ledger": args.ledger, "paper": paper, **portfolio.to_json(), "notes": notes}
        json.dump(document, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        _print(args, portfolio, notes, paper)
    return 0


async def paper_summary(ledger: Ledger, purchases: list[Purchase]) -> dict[str, Any] | None:
    """A paper ledger's own figures (``None`` for a real ledger): nothing in it was bought;
    the simulated wallet, and its would-be purchases bought, missed (by reason) or pending."""
    settings = await ledger.settings()
    if settings.get(MODE_KEY) != "paper":
        return None
    start = settings.get(START_KEY)
    committed = sum(p.amount for p in purchases if p.state in BUDGET_STATES)
    missed: dict[str, int] = {}
    for p in purchases:
        if p.state is PurchaseState.FAILED and p.reason:
            # "missed: gone: ..." -> "gone"; "refused: the paper wallet ..." -> "refused"
            parts = p.reason.split(":")
            kind = parts[1].strip() if parts[0] == "missed" and len(parts) > 2 else parts[0]
            missed[kind] = missed.get(kind, 0) + 1
    return {
        "wallet_start": None if start is None else int(start),
        "wallet_left": None if start is None else int(start) - committed,
        "bought": sum(p.state in SPENT_STATES for p in purchases),
        "pending": sum(p.state in IN_FLIGHT_STATES for p in purchases),
        "missed": missed,
    }


def _paper_line(paper: dict[str, Any]) -> str:
    start, left = paper["wallet_start"], paper["wallet_left"]
    wallet = "not opened" if start is None else f"{format_usd(left)} left of {format_usd(start)}"
    missed = sum(paper["missed"].values())
    why = ", ".join(f"{n} {k}" for k, n in sorted(paper["missed"].items()))
    return (
        f"PAPER ledger (snipe run --paper): nothing here was bought. Simulated wallet {wallet};"
        f" {paper['bought']} would-be purchases counted, {missed} missed"
        + (f" ({why})" if why else "")
        + f", {paper['pending']} pending judgement"
    )


def _when(epoch: float | None) -> str:
    if epoch is None:
        return ""
    return datetime.fromtimestamp(epoch, tz=UTC).strftime("%Y-%m-%d %H:%M")


def _print(
    args: argparse.Namespace, p: Portfolio, notes: list[str], paper: dict[str, Any] | None
) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console(highlight=False)
    if not console.is_terminal:
        console = Console(width=240, highlight=False)  # piped: every line stays greppable
    s = p.settings
    if paper is not None:
        console.print(escape(_paper_line(paper)))
    console.print(
        f"Portfolio of {escape(args.ledger)}: valued by {s.value_by}"
        f" (min_observations {s.min_observations}, max_age {format_duration(s.max_age)});"
        f" {escape(p.fee_text)}"
    )
    table = Table(title="Holdings", title_justify="left")
    for header in ("name", "rule", "state", "bought (UTC)"):
        table.add_column(header, overflow="fold")
    for header in ("cost", "reference", "obs.", "age", "fee", "value", "margin"):
        table.add_column(header, justify="right")
    table.add_column("note", overflow="fold")
    for h in p.holdings:
        ref = h.reference
        note = h.no_value or ""
        if h.illiquid:
            unlock = _when(h.purchase.unlock_at) or "unknown"
            note = f"illiquid until {unlock}" + (f"; {note}" if note else "")
        table.add_row(
            escape(h.purchase.name),
            escape(h.purchase.rule),
            h.purchase.state.value,
            _when(h.purchase.created_at),
            format_usd(h.cost) + ("*" if h.cost_is_ceiling else ""),
            format_usd(ref.price) if ref else "-",
            "-" if ref is None or ref.observations is None else str(ref.observations),
            "-" if ref is None or ref.as_of is None else format_duration(p.now - ref.as_of),
            "-" if h.fee is None else format_usd(h.fee),
            "no value" if h.value is None else format_usd(h.value),
            "-" if h.margin is None else format_usd(h.margin),
            escape(note),
        )
    console.print(table)
    if p.realised:
        sold = Table(title="Realised (sales given)", title_justify="left")
        for header in ("name", "rule", "sold (UTC)"):
            sold.add_column(header, overflow="fold")
        for header in ("cost", "price", "fee", "realised"):
            sold.add_column(header, justify="right")
        sold.add_column("from", overflow="fold")
        for r in p.realised:
            sold.add_row(
                escape(r.purchase.name),
                escape(r.purchase.rule),
                _when(r.sale.sold_at),
                format_usd(r.cost),
                format_usd(r.sale.price),
                format_usd(r.fee),
                format_usd(r.result),
                escape(r.sale.origin),
            )
        console.print(sold)
    console.print(_groups_table(f"By {args.by}", [*p.by[args.by], p.totals]))
    for note in notes:
        console.print(f"- {escape(note)}")


def _groups_table(title: str, groups: list[Group]) -> Any:
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    table.add_column("", overflow="fold")
    for header in (
        "held",
        "cost",
        "valued",
        "value",
        "margin",
        "no value",
        "its cost",
        "illiquid",
        "sold",
        "realised",
    ):
        table.add_column(header, justify="right")
    for g in groups:
        table.add_row(
            escape(g.key),
            str(g.holdings),
            format_usd(g.cost),
            str(g.valued),
            format_usd(g.value),
            format_usd(g.margin),
            str(g.unvalued),
            format_usd(g.unvalued_cost),
            str(g.illiquid),
            str(g.sold),
            format_usd(g.realised),
        )
    return table
