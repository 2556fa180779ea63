"""``snipe check RULES.yaml``: validate a rules file and summarise it.

Exit status 0 when the file is usable (warnings are printed), 2 when it has errors (every
error is printed with ``file:line:column`` and field).
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from .._money import format_usd
from ..notify import describe_channels
from ..rules import RuleSet, check_rules_file, explain
from ..sniper import daily_estimate
from ._prices import reference_lines

__all__ = ["register"]

EXIT_OK = 0
EXIT_INVALID = 2


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "check",
        help="validate a rules file and print a summary",
        description="Validate a rules file: exit 0 and print a summary when it is usable, "
        "exit 2 and print every error (file:line:column, field) when it is not.",
    )
    parser.add_argument("rules", metavar="RULES.yaml", help="the rules file to check")
    parser.add_argument(
        "--why",
        metavar="NAME",
        action="append",
        default=[],
        help="explain which rules watch the item NAME and why the others do not (repeatable)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from .._plugins import make_plugin_host

    console = Console(highlight=False, soft_wrap=True)
    result = check_rules_file(args.rules, host=make_plugin_host())
    for problem in result.errors:
        console.print(f"[bold red]error[/]: {escape(str(problem))}")
    if result.ruleset is None:
        count = len(result.errors)
        console.print(f"[red]{escape(args.rules)}: {count} error{'s' * (count != 1)}[/]")
        return EXIT_INVALID
    _summary(console, result.ruleset)
    for name in args.why:
        console.print(f"[bold]why {escape(name)}[/]")
        for line in (*explain(result.ruleset, name), *_why_more(result.ruleset, name)):
            console.print(f"  {escape(line)}")
        for line in reference_lines(result.ruleset, name):
            console.print(f"  {escape(line)}")
    for problem in result.warnings:
        console.print(f"[yellow]warning[/]: {escape(str(problem))}")
    console.print(f"[green]ok[/]: {escape(args.rules)}")
    return EXIT_OK


def _why_more(ruleset: RuleSet, name: str) -> list[str]:
    """What ``explain`` leaves out: buy-order rules (they place an order, they do not
    search) and rules switched off with ``enabled: false``."""
    lines = []
    view = ruleset.view(name)
    for rule in ruleset.buy_order_rules:
        reason = rule.why_not_watched(view)
        if reason is None:
            lines.append(
                f"buy-order rule {rule.name!r} places an order for {name!r}: "
                f"{rule.order_amount} at up to {format_usd(rule.order_price or 0)}"
            )
        else:
            lines.append(f"buy-order rule {rule.name!r} does not order {name!r}: {reason}")
    for rule_name in ruleset.disabled:
        lines.append(f"rule {rule_name!r} is disabled (enabled: false): it buys nothing")
    return lines


def _summary(console: Console, ruleset: RuleSet) -> None:
    account = ruleset.account
    key_state = ""
    if account.api_key is None and account.api_key_file is None:
        key_state = " (set)" if os.environ.get(account.api_key_env) else " (not set now)"
    console.print(f"[bold]{escape(ruleset.filename)}[/]")
    console.print(f"  service     {escape(account.base_url)}")
    console.print(f"  API key     {escape(account.api_key_source())}{key_state}")
    console.print(f"  trade link  {'set' if account.trade_link else 'not set (needed to buy)'}")
    console.print(f"  ledger      {escape(account.ledger)}")
    limits = account.rate_limits
    console.print(
        f"  limits      {limits.search_per_minute} searches/min, "
        f"{limits.buy_orders_per_minute} buy-order changes/min"
    )
    budgets = ruleset.budgets
    console.print(
        f"  budgets     {format_usd(budgets.per_day)} per day, {format_usd(budgets.total)} in total"
    )
    console.print(f"  bandwidth   {escape(daily_estimate(ruleset).describe())}")
    for channel in describe_channels(ruleset.notify):
        console.print(f"  notify      {escape(channel)}")
    table = Table(title=None, show_lines=False, pad_edge=False)
    # A rule name is what a user searches for in the file: never cut mid-word; the other
    # columns give way (they wrap at spaces).
    table.add_column("rule", no_wrap=True, overflow="fold")
    for column in ("prio", "action", "max price", "caps", "criteria"):
        table.add_column(column, overflow="fold")
    for rule in (*ruleset.rules, *ruleset.buy_order_rules):
        caps = []
        if rule.max_count is not None:
            caps.append(f"{rule.max_count} item{'s' * (rule.max_count != 1)}")
        if rule.max_spend is not None:
            caps.append(format_usd(rule.max_spend))
        action = rule.action
        if rule.order_price is not None:
            action += f" {rule.order_amount} at {format_usd(rule.order_price)}"
        table.add_row(
            escape(rule.name),
            str(rule.priority),
            action,
            format_usd(rule.max_price),
            ", ".join(caps) or "budgets only",
            ", ".join(rule.criteria),
        )
    console.print(table)
    if ruleset.disabled:
        console.print(f"  disabled    {escape(', '.join(ruleset.disabled))}")
    total = len(ruleset.rules) + len(ruleset.buy_order_rules)
    console.print(
        f"  {total} rule{'s' * (total != 1)}, {len(ruleset.watched_names)} names watched "
        "by exact name (patterns match more):"
    )
    for name in sorted(ruleset.watched_names):
        console.print(f"    {escape(name)}")
    for rule_name, patterns in ruleset.watched_patterns.items():
        console.print(f"    {escape(rule_name)}: patterns {escape(', '.join(patterns))}")
