"""``snipe backtest``: replay a recording through the engine and report (or sweep)."""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path
from typing import Any

import anyio

from .._errors import ConfigError
from .._money import format_usd, parse_usd

__all__ = ["register"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "backtest",
        help="replay a recording through the engine and report what the rules would do",
        description="Replay a recording (snipe record) through the same decision and purchase "
        "code as live: a replay marketplace, an in-memory ledger, a simulated clock. Prints "
        "a summary and its fingerprint; --report writes JSON, Markdown, HTML and a chart.",
    )
    parser.add_argument("rules", nargs="?", metavar="RULES.yaml", help="rules file")
    parser.add_argument("recording", nargs="?", metavar="DIR", help="recording directory")
    parser.add_argument("--data", metavar="DIR", help="recording directory (or give it as DIR)")
    parser.add_argument(
        "--against",
        metavar="LEDGER",
        help="compare the replay's decisions with this live ledger (the run recorded with "
        "`snipe run --record DIR`): agreed, live-only and replay-only, each with its cause",
    )
    parser.add_argument("--report", metavar="DIR", help="write the report files here")
    parser.add_argument("--seed", type=int, default=0, help="fill model seed (0)")
    parser.add_argument(
        "--latency", type=float, default=250.0, metavar="MS", help="request latency (250 ms)"
    )
    parser.add_argument("--balance", help="account balance in dollars (the total budget)")
    parser.add_argument(
        "--value-after",
        type=float,
        default=24.0,
        metavar="HOURS",
        help="value purchases at the market price this long after (24 h)",
    )
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--sweep", metavar="SWEEP.yaml", help="run and rank rule variants")
    parser.add_argument(
        "--jobs",
        type=int,
        help="--sweep workers (processes, or Ray actors with --ray), each reading the"
        " recording once (default: all cores)",
    )
    parser.add_argument(
        "--ray",
        metavar="ADDRESS",
        help="run the --sweep on Ray actors instead: a cluster address, or `local`"
        " (a private instance on 127.0.0.1, no dashboard; snipe[ray])",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    logging.getLogger("snipe").setLevel(logging.ERROR)
    if args.recording and args.data and args.recording != args.data:
        raise ConfigError("give the recording once (DIR or --data)", location="--data")
    args.data = args.data or args.recording
    if not args.data:
        raise ConfigError("a recording directory is needed (DIR or --data)", location="DIR")
    if args.against:
        if args.sweep:
            raise ConfigError(
                "--against compares one replay; not with --sweep", location="--against"
            )
        return _against(args)
    if args.sweep:
        return _sweep(args)
    if not args.rules:
        raise ConfigError("a rules file is needed (or --sweep)", location="RULES.yaml")
    from .._plugins import make_plugin_host
    from ..backtest import (
        build_report,
        read_records,
        recording_span,
        replaying,
        run_backtest,
        write_report,
    )
    from ..rules import load_rules

    host = make_plugin_host()
    ruleset = load_rules(args.rules, host=host)
    start, end = recording_span(args.data)
    options = _options(args)
    began = time.perf_counter()

    async def main(progress: Any) -> Any:
        return await run_backtest(
            ruleset, read_records(args.data), host=host, end=end, options=options, progress=progress
        )

    with replaying(args.data):  # for plugins that read recorded history
        quiet = args.quiet or args.json
        result = anyio.run(main, None) if quiet else _with_progress(main, start, end)
    elapsed = time.perf_counter() - began
    report = build_report(result)
    if args.report:
        for path in write_report(report, args.report):
            print(f"wrote {path}", file=sys.stderr)
    if args.json:
        print(report.to_json(), end="")
    else:
        _print_summary(report.summary)
    print_warnings({text: (n, 1) for text, n in result.warnings.items()})
    rate = result.events_replayed / elapsed if elapsed > 0 else 0.0
    print(
        f"replayed {result.events_replayed} listing events of "
        f"{(end - start) / 3600:.2f} h in {elapsed:.1f} s ({rate:,.0f} events/s)",
        file=sys.stderr,
    )
    return 0


def _options(args: argparse.Namespace) -> Any:
    from ..backtest import BacktestOptions

    if args.latency < 0:
        raise ConfigError("must be zero or more", location="--latency")
    balance = None
    if args.balance is not None:
        try:
            balance = parse_usd(args.balance)
        except ValueError as exc:
            raise ConfigError(str(exc), location="--balance") from None
    return BacktestOptions(
        seed=args.seed,
        latency=args.latency / 1000,
        balance=balance,
        value_after=args.value_after * 3600,
    )


def _against(args: argparse.Namespace) -> int:
    """``--against LEDGER``: the parity table (or ``--json``), exit 0."""
    from .._plugins import make_plugin_host
    from ..backtest import run_against
    from ..rules import load_rules

    if not args.rules:
        raise ConfigError("a rules file is needed", location="RULES.yaml")
    if not Path(args.against).exists():
        raise ConfigError("no such ledger file", location=args.against)
    host = make_plugin_host()
    ruleset = load_rules(args.rules, host=host)
    options = _options(args)

    async def main() -> Any:
        return await run_against(ruleset, args.data, args.against, host=host, options=options)

    parity, result = anyio.run(main)
    if args.json:
        print(json.dumps(parity.to_json(), indent=2, sort_keys=True))
    else:
        for line in parity.table():
            print(line)
    print_warnings({text: (n, 1) for text, n in result.warnings.items()})
    return 0


def _with_progress(main: Any, start: float, end: float) -> Any:
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (
        TextColumn("replaying"),
        BarColumn(),
        TextColumn("{task.percentage:>5.1f}% of {task.fields[hours]:.1f} h"),
        TimeRemainingColumn(),
    )
    with Progress(*columns, transient=True) as bar:
        task = bar.add_task("replay", total=max(end - start, 1.0), hours=(end - start) / 3600)
        shown = [0.0]

        def progress(now: float) -> None:
            if now - shown[0] >= 60.0 or now >= end:
                shown[0] = now
                bar.update(task, completed=now - start)

        return anyio.run(main, progress)


def _print_summary(summary: dict[str, Any]) -> None:
    from ..backtest import feed_text, later_label, seen_first_text

    totals, missed = summary["totals"], summary["missed"]
    hit = "-" if totals["hit_rate"] is None else f"{totals['hit_rate'] * 100:.1f}%"
    print(
        f"purchases {totals['purchases']} of {totals['attempts']} attempts (hit rate {hit}), "
        f"refunded {totals['refunded']}"
    )
    print(
        f"spend {format_usd(totals['spend'])}, value at reference "
        f"{format_usd(totals['value_reference'])}, at market {later_label(summary)} "
        f"{format_usd(totals['value_later'])}, realised margin "
        f"{format_usd(totals['realised_margin'])}"
    )
    print(
        f"missed: budget {missed['budget']}, search limit {missed['search_limit']}, "
        f"lost race {missed['lost_race']}, gone before arrival {missed['gone_before_arrival']}"
    )
    print(f"seen first by: {seen_first_text(totals)}")
    if "feed" in summary:
        print(f"live feed: {feed_text(summary['feed'])}")
    for name, rule in summary["rules"].items():
        print(
            f"  {name}: {rule['purchases']} bought, spend {format_usd(rule['spend'])}, "
            f"margin {format_usd(rule['realised_margin'])}"
        )
    for line in summary.get("nothing_bought") or ():
        print(f"nothing bought: {line}")
    print(f"fingerprint {summary['fingerprint']}")


def print_warnings(warnings: dict[str, tuple[int, int]], *, of: int = 1) -> None:
    """Each warning once, with how often it came (and in how many of ``of`` variants)."""
    for text, (count, variants) in sorted(warnings.items()):
        times = "once" if count == 1 else f"{count:,} times"
        where = f" in {variants} of {of} variants" if of > 1 else ""
        print(f"snipe backtest: warning ({times}{where}): {text}", file=sys.stderr)


def _sweep(args: argparse.Namespace) -> int:
    from ..backtest import load_sweep, run_sweep

    if args.jobs is not None and args.jobs < 1:
        raise ConfigError(f"{args.jobs}: at least 1 worker", location="--jobs")
    sweep = load_sweep(args.sweep)
    if args.rules:
        sweep = type(sweep)(Path(args.rules).resolve(), sweep.variants, sweep.seed, sweep.latency)
    results = run_sweep(sweep, args.data, jobs=args.jobs, ray_address=args.ray)
    warnings: dict[str, tuple[int, int]] = {}
    for r in results:
        for text, n in (r.pop("warnings", None) or {}).items():
            total, variants = warnings.get(text, (0, 0))
            warnings[text] = (total + n, variants + 1)
    print_warnings(warnings, of=len(results))
    if args.json:
        print(json.dumps(results, indent=2, sort_keys=True))
        return 0
    for r in results:
        totals = r["totals"]
        print(
            f"{r['rank']:>3}. {r['variant']}: margin {format_usd(totals['realised_margin'])}, "
            f"spend {format_usd(totals['spend'])}, {totals['purchases']} bought  "
            f"[{r['fingerprint'][:12]}]"
        )
    return 0
