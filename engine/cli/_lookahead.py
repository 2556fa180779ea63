"""``snipe lookahead``: is any decision of a backtest made with data from its future?

Exit status: 0 when every cut decided as the full run did, 1 when look-ahead was found (a
decision that changed when only the future changed, or a price list file written after
the decisions that read it), 2 on bad input. Meant to gate a strategy's CI.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from typing import Any

import anyio

from .._errors import ConfigError
from .._money import parse_usd

__all__ = ["register"]

MAX_CUTS = 100


def _cuts(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if not 1 <= value <= MAX_CUTS:
        raise argparse.ArgumentTypeError(f"expected 1 to {MAX_CUTS} cuts, got {value}")
    return value


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "lookahead",
        help="check that no backtest decision depends on the future (plugins, price lists)",
        description="Replay a recording whole, then cut at N times spread over it, and "
        "compare: every decision made before a cut must be the same with or without the "
        "records after it. A difference is a decision that read the future (a plugin, a "
        "price source, a cache kept between runs); a price list file written after the "
        "decisions that read it is reported too. Exit 1 when look-ahead is found, 0 when "
        "clean, 2 on bad input.",
    )
    parser.add_argument("rules", metavar="RULES.yaml", help="rules file")
    parser.add_argument("--data", required=True, metavar="DIR", help="recording directory")
    parser.add_argument(
        "--cuts", type=_cuts, default=4, metavar="N", help="cut times spread over the span (4)"
    )
    parser.add_argument("--seed", type=int, default=0, help="fill model seed (0)")
    parser.add_argument(
        "--latency", type=float, default=250.0, metavar="MS", help="request latency (250 ms)"
    )
    parser.add_argument("--balance", help="account balance in dollars (the total budget)")
    parser.add_argument("--json", action="store_true", help="print the findings as JSON")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    logging.getLogger("snipe").setLevel(logging.ERROR)
    from .._plugins import make_plugin_host
    from ..backtest import BacktestOptions, check_lookahead, recording_span
    from ..rules import load_rules

    if args.latency < 0:
        raise ConfigError("must be zero or more", location="--latency")
    balance = None
    if args.balance is not None:
        try:
            balance = parse_usd(args.balance)
        except ValueError as exc:
            raise ConfigError(str(exc), location="--balance") from None
    load_rules(args.rules, host=make_plugin_host())  # bad rules: said before any replay
    start, end = recording_span(args.data)
    if not end > start:
        raise ConfigError("the recording spans no time: nothing to cut", location=args.data)
    options = BacktestOptions(seed=args.seed, latency=args.latency / 1000, balance=balance)

    def say(text: str) -> None:
        if not args.quiet:
            print(f"snipe lookahead: {text}", file=sys.stderr, flush=True)

    report = anyio.run(
        lambda: check_lookahead(
            lambda host: load_rules(args.rules, host=host),
            args.data,
            make_host=lambda extra: make_plugin_host(plugins=extra),
            cuts=args.cuts,
            options=options,
            progress=say,
        )
    )
    for warning in report.warnings:
        print(f"snipe lookahead: warning: {warning}", file=sys.stderr)
    compared = sum(c.compared for c in report.cuts)
    if not compared:
        print(
            "snipe lookahead: warning: nothing was compared: the rules decided nothing "
            "before any cut in this recording",
            file=sys.stderr,
        )
    if args.json:
        print(json.dumps(report.to_json(), indent=2, sort_keys=True))
    else:
        _print(report)
    ratio = report.seconds / report.full_seconds if report.full_seconds > 0 else 0.0
    say(
        f"checked in {report.seconds:.1f} s, {ratio:.1f} x one backtest "
        f"({report.full_seconds:.1f} s)"
    )
    return 1 if report.found else 0


def _print(report: Any) -> None:
    compared = sum(c.compared for c in report.cuts)
    print(
        f"{len(report.cuts)} cut{'s' if len(report.cuts) != 1 else ''} of "
        f"{(report.end - report.start) / 3600:.2f} h of recording: "
        f"the full run made {report.decisions:,} decisions; the cut runs' "
        f"{compared:,} before their cuts were compared with them"
    )
    for cut in report.cuts:
        if cut.clean:
            continue
        print(f"LOOK-AHEAD: cut at {cut.when} (the records after it removed) changed:")
        for difference in cut.differences:
            for line in difference.describe():
                print(f"  {line}")
        if cut.more:
            print(
                f"  ... and {cut.more:,} more differing decisions after these "
                "(they may follow from the first)"
            )
    for finding in report.lists:
        print(f"LOOK-AHEAD: {finding.describe()}")
    if report.suspects:
        print("suspects: " + ", ".join(f"plugin {name!r}" for name in report.suspects))
    elif not all(c.clean for c in report.cuts):
        print(
            "suspects: no plugin; see what is involved above (a reference store or price "
            "list kept between runs), else it is a bug of snipe's: please report it"
        )
    if report.found:
        print("look-ahead found: these decisions depend on data from after their time")
    else:
        print("no look-ahead found: every decision before each cut was the same")
