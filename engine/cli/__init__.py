"""The ``snipe`` command.

Exit status 2 means bad input, for every subcommand (:data:`EXIT_BAD_INPUT`).

Each subcommand lives in its own module under ``engine.cli`` and exposes
``register(subparsers)``, which adds its parser and sets ``handler`` (a function taking the
parsed namespace and returning the exit code). Add a module to ``_COMMAND_MODULES`` to add a
subcommand.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence

from .._errors import ConfigError, SnipeError

__all__ = ["EXIT_BAD_INPUT", "build_parser", "main"]

EXIT_BAD_INPUT = 2
"""Every subcommand: bad input (a missing or unreadable file, a bad value, a line or field
of a file, an address) exits with 2, as argparse does for a bad option."""

_COMMAND_MODULES: tuple[str, ...] = (
    "._run",
    "._demo",
    "._ledger",
    "._check",
    "._plugins",
    "._sandbox",
    "._record",
    "._backtest",
    "._lookahead",
    "._status",
    "._prices",
    "._portfolio",
)

Handler = Callable[[argparse.Namespace], int]


def build_parser() -> argparse.ArgumentParser:
    from .. import __version__

    parser = argparse.ArgumentParser(
        prog="snipe",
        description="A headless, rule-driven buying engine for a game-item marketplace.",
    )
    parser.add_argument("--version", action="version", version=f"snipe {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name in _COMMAND_MODULES:
        module = importlib.import_module(module_name, __name__)
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        # argparse reports a subcommand's unknown option with the top-level usage, which
        # does not show the option the user meant: show the subcommand's own
        _subcommand(parser, getattr(args, "command", None)).error(
            f"unrecognized arguments: {' '.join(unknown)}"
        )
    handler: Handler | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 0
    try:
        return handler(args)
    except ConfigError as exc:
        # bad input (a file, a line, a field, an option, an address): the usage exit status
        print(f"snipe {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except SnipeError as exc:
        print(f"snipe {args.command}: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def _subcommand(parser: argparse.ArgumentParser, name: str | None) -> argparse.ArgumentParser:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and name in action.choices:
            found: argparse.ArgumentParser = action.choices[name]
            return found
    return parser


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
