"""``snipe plugins``: the loaded plugins, the hooks each implements, the rule keys and
price sources they contribute, and any plugin that failed or was not allowed."""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import Console
from rich.markup import escape

__all__ = ["register"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "plugins",
        help="list the loaded plugins and the hooks they implement",
        description="List the loaded plugins (built-in first), the hooks each implements, "
        "the rule keys and price sources they add, and plugins that failed to load. "
        "Set SNIPE_PLUGINS=name,name to load only those installed plugins.",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from .._plugins import PLUGINS_ENV, make_plugin_host

    host = make_plugin_host()
    console = Console(highlight=False, soft_wrap=True)
    criteria = host.criteria()
    sources = host.price_sources()
    for info in host.plugins():
        adds = [f"key {c.key}" for c in criteria if c.plugin == info.name]
        adds += [f"price source {n}" for n in sources if host.source_owners[n] == info.name]
        console.print(f"[bold]{escape(info.name)}[/]  ({escape(info.source)})")
        console.print(f"    hooks: {', '.join(info.hooks) or 'none'}")
        if adds:
            console.print(f"    adds:  {escape(', '.join(adds))}")
    for name in host.not_allowed:
        console.print(f"not loaded: {escape(name)} (installed, not in {PLUGINS_ENV})")
    for failure in host.failures:
        console.print(f"[red]failed[/]: {escape(str(failure))}")
    return 1 if host.failures else 0
