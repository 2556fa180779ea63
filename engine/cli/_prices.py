"""``snipe prices NAME [--phase P] [--json]``: every reference source's price for an item.

Reads the reference file a run keeps beside its ledger (``--rules RULES.yaml`` finds it,
as ``snipe run`` does; ``--store PATH`` names it): the learned ``market.*`` statistics and
the last copy of each price list, each with its age and observation count. A ``file.*``
list with a ``path`` that no run has read yet is read now. Nothing is written.

Exit status 0 (also when no source knows the item: that is an answer), 2 for bad input.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

import anyio
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from .._clock import SystemClock
from .._errors import ConfigError
from .._money import format_usd
from ..models import Listing
from ..reference import (
    BUCKETS,
    PriceList,
    PriceStore,
    ReferenceHub,
    SourceReading,
    parse_price_list,
    store_path_for,
)
from ..rules import EvalContext, PricesSettings, RuleSet, format_duration, split_name

__all__ = ["reference_lines", "register"]

EXIT_OK = 0
EXIT_INVALID = 2


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "prices",
        help="show every reference price source's price for an item",
        description="Show each reference source's price for NAME (market.* learned from "
        "the snapshot, service.* from GET /v1/prices, file.* price lists), its age and "
        "observation count, from the reference file beside the ledger.",
    )
    parser.add_argument("name", metavar="NAME", help="the item's market name")
    parser.add_argument("--phase", help="a Doppler phase (Ruby, Phase 2, ...)")
    # required: the project ships no rules.yaml, and guessing a file is worse than asking
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument(
        "--rules",
        metavar="RULES.yaml",
        help="the rules file whose ledger the references sit beside",
    )
    where.add_argument("--store", metavar="PATH", help="the reference file itself")
    parser.add_argument("--json", action="store_true", help="print JSON (money in USD x 1000)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    try:
        settings, path = _locate(args)
        readings, base, phase = anyio.run(_read, settings, path, args.name, args.phase)
    except ConfigError as exc:
        print(f"snipe prices: error: {exc}", file=sys.stderr)
        return EXIT_INVALID
    now = time.time()
    if args.json:
        document = {
            "name": base,
            "phase": phase,
            "store": str(path),
            "sources": [_json_row(r, now) for r in readings],
        }
        json.dump(document, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return EXIT_OK
    console = Console(highlight=False, soft_wrap=True)
    title = base + (f" [{phase}]" if phase else "")
    console.print(f"[bold]{escape(title)}[/]  ({escape(str(path))})")
    table = Table(pad_edge=False)
    for column in ("source", "reference", "age", "observations", "note"):
        table.add_column(column)
    for r in readings:
        table.add_row(
            r.source,
            format_usd(r.price) if r.price else "-",
            format_duration(now - r.as_of) if r.as_of is not None else "-",
            str(r.observations) if r.observations is not None else "-",
            escape(r.note),
        )
    console.print(table)
    return EXIT_OK


def _json_row(r: SourceReading, now: float) -> dict[str, Any]:
    return {
        "source": r.source,
        "price": r.price,
        "age_seconds": round(now - r.as_of, 3) if r.as_of is not None else None,
        "observations": r.observations,
        "note": r.note or None,
    }


def _locate(args: argparse.Namespace) -> tuple[PricesSettings, str]:
    if args.store:
        return PricesSettings(), args.store
    from .._plugins import make_plugin_host
    from ..rules import check_rules_file

    result = check_rules_file(args.rules, host=make_plugin_host())
    if result.ruleset is None:
        first = result.errors[0] if result.errors else "unreadable"
        raise ConfigError(f"the rules file has errors, first: {first}", location=args.rules)
    ruleset = result.ruleset
    path = ruleset.prices.store or store_path_for(ruleset.account.ledger)
    if path is None:
        raise ConfigError("the ledger is in memory: no reference file", location=args.rules)
    return ruleset.prices, str(path)


async def _read(
    settings: PricesSettings, path: str, name: str, phase: str | None
) -> tuple[list[SourceReading], str, str | None]:
    parts = split_name(name)
    base, phase = parts.base_name, phase or parts.phase
    store = PriceStore.open_read_only(path)
    clock = SystemClock()
    hub = ReferenceHub(_as_written(settings, store), clock=clock, store=store)
    try:
        await hub.restore()
    finally:
        store.close_sync()
    for list_name, list_settings in settings.lists.items():
        source = f"file.{list_name}"
        if source in hub.lists or list_settings.path is None:
            continue
        try:
            data = await anyio.Path(list_settings.path).read_bytes()
        except OSError as exc:
            raise ConfigError(
                f"cannot read the price list: {exc}", location=list_settings.path
            ) from None
        rows = parse_price_list(
            data, origin=list_settings.path, fmt=list_settings.format, unit=list_settings.unit
        )
        hub.lists[source] = PriceList(source, rows.prices, clock.now(), list_settings.path)
    return hub.readings(base, phase, clock.now()), base, phase


def reference_lines(ruleset: RuleSet, name: str) -> list[str]:
    """For ``snipe check --why NAME``: each watching rule's discount reference for the
    item now, read from the reference file beside the ledger (if a run made one): the
    source used and its value, or why there is none (the guard that failed)."""
    view = ruleset.view(name)
    rules = [r for r in view.rules if r.describers]
    if not rules:
        return []
    path = ruleset.prices.store or store_path_for(ruleset.account.ledger)
    if path is not None and not os.path.exists(path):
        path = None
    try:
        hub = anyio.run(_hub_for, ruleset.prices, path)
    except ConfigError as exc:
        return [f"reference prices: {exc}"]
    now = time.time()
    probe = Listing(item_id="0", name=name, price=1)
    context = EvalContext(now=now, references=hub.quotes([probe], ruleset.view, now))
    lines = []
    for rule in rules:
        for _, describe in rule.describers:
            text = describe(probe, view, context)
            used = text.split(" vs ", 1)[1] if " vs " in text else text
            lines.append(f"rule {rule.name!r} measures against {used}")
    if path is None:
        lines.append("(no reference file beside the ledger: nothing learned yet)")
    return lines


async def _hub_for(settings: PricesSettings, path: str | os.PathLike[str] | None) -> ReferenceHub:
    clock = SystemClock()
    if path is None:
        return ReferenceHub(settings, clock=clock)
    store = PriceStore.open_read_only(path)
    hub = ReferenceHub(_as_written(settings, store), clock=clock, store=store)
    try:
        await hub.restore()
    finally:
        store.close_sync()
    return hub


def _as_written(settings: PricesSettings, store: PriceStore) -> PricesSettings:
    """The settings with the window the file was written with (its buckets are that
    wide; read with another width they would mean other times)."""
    window = round(store.bucket_seconds * BUCKETS)
    if not window or window == settings.market.window:
        return settings
    market = settings.market.model_copy(update={"window": window})
    return settings.model_copy(update={"market": market})
