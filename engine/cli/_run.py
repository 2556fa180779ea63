"""``snipe run RULES.yaml``: the sniping bot.

Exit status (``docs/snipe.service`` restarts exactly those a restart can fix):

- 0 after a clean stop (``--for`` elapsed, SIGINT or SIGTERM), the start-up gate
  passed or not (a line says when it never did): not restarted;
- 1 a crash: an unexpected error outside the engine's loops (one line here, the
  traceback in the log): restarted;
- 2 a rules file, argument, secret or ledger file that cannot be used: not restarted;
- 3 refused to trade: the API key was rejected or the trade link is invalid (transient
  failures at start are waited out, never exit 3): not restarted;
- 4 stopped while HALTED (a loop's unexpected errors included): not restarted, a person
  looks first.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
import math
import signal
import sys
import time
from contextlib import ExitStack
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import anyio
import httpx

from .._clock import Clock, ScaledClock, SystemClock
from .._errors import ConfigError, InvalidRequest
from .._money import format_usd, parse_usd
from .._plugins import make_plugin_host
from ..api import api_options
from ..ops import ListenError, OpsSettings, operations
from ..paper import PaperSettings, paper_path_for
from ..rules import RuleSet, format_duration, load_rules
from ..sniper import (
    Engine,
    EngineMode,
    EngineSettings,
    FeedSettings,
    HeapSettings,
    SessionOptions,
    TradingRefused,
    describe,
    describe_orders,
    open_engine,
    status_path_for,
)
from ._args import duration

if TYPE_CHECKING:
    from ..backtest import LiveRecorder

__all__ = ["register"]

EXIT_OK, EXIT_CRASH, EXIT_CONFIG, EXIT_REFUSED, EXIT_HALTED = 0, 1, 2, 3, 4


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "run",
        help="watch the market and buy what the rules accept",
        description="Run the sniping bot with a rules file. The API key comes from the "
        "environment (SNIPE_API_KEY by default) or the key file the rules name.",
    )
    parser.add_argument("rules", metavar="RULES.yaml", help="the rules file")
    parser.add_argument("--base-url", metavar="URL", help="override account.base_url")
    parser.add_argument("--ledger", metavar="PATH", help="override account.ledger")
    parser.add_argument(
        "--for",
        dest="duration",
        metavar="DURATION",
        type=duration,
        help="stop after this long: 600 (seconds), 90s, 10m, 1h30m, 2d",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="decide and report, never buy (memory ledger)"
    )
    paper = parser.add_argument_group(
        "paper trading (a persistent simulation: decides and records as the real mode does,"
        " sends no purchase and no buy order)"
    )
    paper.add_argument(
        "--paper",
        action="store_true",
        help="run on paper: would-be purchases go to their own ledger file and a simulated"
        " wallet, each judged bought or missed by what the market shows next; survives"
        " restarts; `snipe portfolio PAPER_LEDGER` values it",
    )
    paper.add_argument(
        "--paper-ledger",
        metavar="PATH",
        help="the paper ledger (default: beside the real one, .paper before its suffix:"
        " snipe.sqlite -> snipe.paper.sqlite); never the real ledger",
    )
    paper.add_argument(
        "--paper-balance",
        metavar="USD",
        type=_usd,
        help="the simulated wallet's start, e.g. 500.00 (default: the account's balance"
        " when the paper ledger first runs); kept in the paper ledger",
    )
    parser.add_argument(
        "--record",
        metavar="DIR",
        help="record what the engine receives (snapshots, search and catalogue answers, the"
        " price lists it reads, its decisions) into DIR while it runs, for `snipe backtest"
        " RULES DIR --against LEDGER`",
    )
    parser.add_argument("--kill-file", metavar="PATH", help="halt buying while this file exists")
    parser.add_argument(
        "--remove-orders",
        action="store_true",
        help="remove every open buy order snipe placed (as the ledger has them), say which,"
        " then exit without buying anything",
    )
    parser.add_argument(
        "--metrics-port",
        metavar="PORT",
        type=_port,
        help="serve Prometheus metrics on /metrics and a health probe on /healthz",
    )
    parser.add_argument(
        "--metrics-host",
        metavar="ADDRESS",
        default="127.0.0.1",
        help="the address the metrics server binds (default 127.0.0.1)",
    )
    parser.add_argument(
        "--api",
        metavar="HOST:PORT",
        help="serve the control-plane API (token-protected; tokens from "
        "SNIPE_API_CONTROL_TOKEN / SNIPE_API_READ_TOKEN or api.token_file); overrides "
        "api.listen; anything but loopback needs TLS or api.behind_proxy",
    )
    parser.add_argument(
        "--no-gc-freeze",
        dest="gc_freeze",
        action="store_false",
        help="leave Python's cyclic garbage collector as it is: by default the start-up "
        "heap (and, hourly, what the engine learnt) is frozen out of its full passes, "
        "each of which would hold the event loop ~1 us an object (docs/architecture.md)",
    )
    testing = parser.add_argument_group(
        "against a sped-up sandbox (tests and benchmarks; never against the real service)"
    )
    testing.add_argument(
        "--speed",
        metavar="FACTOR",
        type=_positive_factor,
        default=1.0,
        help="run the engine's clock FACTOR times faster than real time, to share the "
        "market time of `snipe sandbox --speed FACTOR --origin EPOCH` (1)",
    )
    testing.add_argument(
        "--origin",
        metavar="EPOCH",
        type=float,
        help="the real epoch second at which the sped-up clock equals real time (the "
        "sandbox's --origin; default: now)",
    )
    testing.add_argument(
        "--backend",
        choices=["asyncio", "trio"],
        default="asyncio",
        help="the async library the process runs on (asyncio)",
    )
    add_logging_arguments(parser)
    parser.set_defaults(handler=run)


def _positive_factor(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def engine_clock(speed: float, origin: float | None) -> Clock:
    """Real time, or (``speed`` other than 1, or an ``origin``) the sped-up market time a
    sandbox started with the same ``--speed`` and ``--origin`` keeps."""
    if speed == 1.0 and origin is None:
        return SystemClock()
    return ScaledClock.from_origin(time.time() if origin is None else origin, speed)


def _usd(text: str) -> int:
    try:
        return parse_usd(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def paper_ledger_path(args: argparse.Namespace, ruleset: RuleSet) -> str:
    """The paper ledger of ``snipe run --paper``: ``--paper-ledger``, else beside the real
    ledger (``--ledger`` or ``account.ledger``) with ``.paper`` before its suffix."""
    if args.paper_ledger:
        return str(args.paper_ledger)
    return str(paper_path_for(args.ledger or ruleset.account.ledger))


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port from 0 to 65535, got {text!r}")
    return value


def add_logging_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--log-level",
        default="INFO",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="DEBUG shows every decision with its reasons",
    )
    parser.add_argument("--log-format", default="text", choices=["text", "json"])


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": round(record.created, 3),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            entry["error"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


def setup_logging(level: str, fmt: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # httpx logs every URL at INFO; the client keeps the key out of it, but the lines are noise
    logging.getLogger("httpx").setLevel(logging.WARNING)


def run(args: argparse.Namespace) -> int:
    setup_logging(args.log_level, args.log_format)
    if args.backend == "trio" and importlib.util.find_spec("trio") is None:
        print("snipe run: --backend trio: trio is not installed", file=sys.stderr)
        return EXIT_CONFIG
    clash = _clash(args)
    if clash is not None:
        print(f"snipe run: {clash}", file=sys.stderr)
        return EXIT_CONFIG
    host = make_plugin_host()
    try:
        ruleset = load_rules(args.rules, host=host)
        key = ruleset.account.resolve_api_key(relative_to=args.rules)
        api = api_options(ruleset.api, args.api)
    except ConfigError as exc:
        print(f"snipe run: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    settings = EngineSettings(
        dry_run=args.dry_run,
        paper=PaperSettings(start_balance=args.paper_balance) if args.paper else None,
        kill_file=args.kill_file,
        snapshot_every=float(ruleset.account.snapshot_every),
        feed=FeedSettings(
            mode=ruleset.account.feed,
            audit_every=float(ruleset.account.audit_every),
            full_audit_every=float(ruleset.account.full_audit_every),
            sticker_prices_for=float(ruleset.account.sticker_prices_for),
        ),
        heap=HeapSettings(freeze=args.gc_freeze),
    )
    print(banner(ruleset, args), file=sys.stderr, flush=True)
    ledger_path = None if args.dry_run else (args.ledger or ruleset.account.ledger)
    if args.paper:
        ledger_path = paper_ledger_path(args, ruleset)
    options = SessionOptions(base_url=args.base_url, ledger=ledger_path, limit_journal=True)
    ops_settings = OpsSettings(
        metrics_port=args.metrics_port,
        metrics_host=args.metrics_host,
        status_file=status_path_for(ledger_path) if ledger_path else None,
        api=api,
        secrets=(key.get_secret_value(),),
    )

    async def main() -> int:
        clock = engine_clock(args.speed, args.origin)
        with ExitStack() as stack:
            session = options
            recorder = None
            if args.record and not args.remove_orders:
                from ..backtest import LiveRecorder, attach_recorder

                recorder = stack.enter_context(
                    LiveRecorder(args.record, source=args.base_url or ruleset.account.base_url)
                )
                session = recording_options(options, recorder, clock)
            async with open_engine(
                ruleset,
                api_key=key.get_secret_value(),
                clock=clock,
                host=host,
                settings=settings,
                options=session,
            ) as engine:
                if recorder is not None:
                    attach_recorder(engine, recorder)
                code = await _main(engine)
        if recorder is not None:  # closed: everything queued is written
            print(recorder.describe(), file=sys.stderr)
        return code

    async def _main(engine: Engine) -> int:
        if args.remove_orders:
            return await _remove_orders(engine)
        async with operations(engine, ops_settings):
            await _run_until_signal(engine, args.duration)
        print(await engine.status_line(), file=sys.stderr)
        gate = gate_words(engine)
        if gate is not None:
            print(gate, file=sys.stderr)
        if not (args.dry_run or args.paper):
            for line in await orders_at_stop(engine):
                print(line, file=sys.stderr)
        return EXIT_HALTED if engine.status.mode is EngineMode.HALTED else EXIT_OK

    try:
        return anyio.run(main, backend=args.backend)
    except TradingRefused as exc:
        print(f"snipe run: refusing to trade: {exc}", file=sys.stderr)
        return EXIT_REFUSED
    except (ConfigError, InvalidRequest) as exc:
        print(f"snipe run: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except ListenError as exc:  # the metrics or the API port cannot be bound
        print(f"snipe run: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except Exception as exc:
        # not an exception group on the terminal: one line here, the traceback in the log
        error = _unwrap(exc)
        logging.getLogger("snipe").error(
            "stopped by an unexpected error", exc_info=(type(error), error, error.__traceback__)
        )
        print(f"snipe run: stopped by an unexpected error: {describe(error)}", file=sys.stderr)
        return EXIT_CRASH


def _clash(args: argparse.Namespace) -> str | None:
    """Flags that cannot go together, said in one line (``None``: none)."""
    if args.remove_orders and (args.dry_run or args.paper):
        return (
            "--remove-orders withdraws the orders the ledger file holds;"
            f" it cannot be combined with {'--dry-run' if args.dry_run else '--paper'}"
        )
    if args.paper and args.dry_run:
        return "--paper and --dry-run are two ways not to buy: choose one"
    if not args.paper and (args.paper_ledger or args.paper_balance is not None):
        return "--paper-ledger and --paper-balance need --paper"
    return None


def _unwrap(exc: Exception) -> Exception:
    while isinstance(exc, ExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def recording_options(
    options: SessionOptions, recorder: LiveRecorder, clock: Clock
) -> SessionOptions:
    """``options`` with the client's transport teeing its answers into ``recorder``; the
    feed stays as ``account.feed`` says (a transport given would turn it off)."""
    from ..backtest import RecordingTransport

    inner = options.transport or httpx.AsyncHTTPTransport(retries=0)
    return replace(options, transport=RecordingTransport(inner, recorder, clock), feed=True)


def banner(ruleset: RuleSet, args: argparse.Namespace) -> str:
    """What this run will do, said before it starts: dry or live, where, which ledger,
    which caps."""
    account, budgets = ruleset.account, ruleset.budgets
    address = args.base_url or account.base_url
    caps = f"caps {format_usd(budgets.per_day)} a day, {format_usd(budgets.total)} in total"
    stop = f", stopping after {format_duration(args.duration)}" if args.duration else ""
    if getattr(args, "remove_orders", False):
        return (
            f"snipe run: removing every open buy order ledger {args.ledger or account.ledger}"
            f" holds, at {address}; buys nothing"
        )
    if getattr(args, "paper", False):
        wallet = (
            format_usd(args.paper_balance)
            if args.paper_balance is not None
            else "the account's balance at the first start"
        )
        return (
            f"snipe run: PAPER run of {ruleset.filename} against {address}: decides as the"
            f" real mode does, sends no purchase and no buy order; paper ledger"
            f" {paper_ledger_path(args, ruleset)} (the real ledger is not touched); wallet"
            f" {wallet}; {caps}{stop}"
        )
    if args.dry_run:
        ledger = args.ledger or account.ledger
        return (
            f"snipe run: DRY RUN of {ruleset.filename} against {address}: decides and reports "
            f"what it would buy, buys nothing; ledger in memory ({ledger} is not touched); "
            f"{caps}{stop}"
        )
    return (
        f"snipe run: {ruleset.filename} against {address}: BUYS what the rules accept; "
        f"ledger {args.ledger or account.ledger}; {caps}{stop}"
    )


async def _run_until_signal(engine: Engine, duration: float | None) -> None:
    """``engine.run`` until ``duration`` or SIGINT/SIGTERM; its errors (a refusal to trade)
    come out as themselves, not wrapped in an exception group. ``duration`` bounds the
    whole run, the start-up gate included: a script's ``--for`` ends even when the
    service never answers."""
    error: Exception | None = None
    async with anyio.create_task_group() as tg:
        tg.start_soon(_stop_on_signal, tg.cancel_scope)
        if duration is not None:
            tg.start_soon(_stop_after, engine, duration, tg.cancel_scope)
        tg.start_soon(_stop_on_request, engine, tg.cancel_scope)
        try:
            await engine.run(duration=duration)
        except Exception as exc:
            error = exc
        tg.cancel_scope.cancel()
    if error is not None:
        raise error


async def _stop_after(engine: Engine, duration: float, scope: anyio.CancelScope) -> None:
    await engine.clock.sleep(duration)
    scope.cancel()


def gate_words(engine: Engine) -> str | None:
    """The line said when a run ended before its start-up gate passed (``--for`` or a
    signal while the service could not be reached), else ``None``."""
    if engine.status.buying_since is not None or engine.status.halted:
        return None
    waiting = engine.status.waiting or "the first check had not answered yet"
    return (
        f"snipe run: never passed the start-up gate ({engine.status.start_attempts}"
        f" attempt(s); last: {waiting}): nothing was bought"
    )


async def _remove_orders(engine: Engine) -> int:
    """``--remove-orders``: withdraw every open buy order snipe placed, say which, exit
    (0 when none is left open, 1 when the service could not be asked: try again)."""
    removed, still = await engine.orders.withdraw()
    if removed:
        print(f"snipe run: removed {describe_orders(removed)}", file=sys.stderr)
    elif not still:
        print("snipe run: no open buy order to remove", file=sys.stderr)
    if still:
        print(
            f"snipe run: {describe_orders(still)} could not be removed and may still buy"
            f" (see the log): run with --remove-orders again",
            file=sys.stderr,
        )
        return EXIT_CRASH
    return EXIT_OK


async def orders_at_stop(engine: Engine) -> list[str]:
    """At a clean stop: withdraw the open buy orders (``orders.on_stop: remove``, the
    default, or HALTED) or leave them (``keep``), and say which in either case."""
    policy = engine.ruleset.orders.on_stop
    setting = f"(orders.on_stop: {policy})"
    if policy == "keep" and not engine.status.halted:
        left = await engine.orders.left_open()
        return (
            [f"snipe run: {describe_orders(left)} left open on the service {setting}"]
            if left
            else []
        )
    removed, still = await engine.orders.withdraw()
    lines = [f"snipe run: removed {describe_orders(removed)} {setting}"] if removed else []
    if still:
        lines.append(
            f"snipe run: {describe_orders(still)} could not be removed and may still buy:"
            " run `snipe run RULES --remove-orders`"
        )
    return lines


async def _stop_on_request(engine: Engine, scope: anyio.CancelScope) -> None:
    """Stop as on SIGTERM when asked through the API (:meth:`Engine.request_stop`)."""
    await engine.stop_requested.wait()
    logging.getLogger("snipe").warning(
        "%s: finishing purchases in flight, then stopping", engine.stop_reason
    )
    scope.cancel()


async def _stop_on_signal(scope: anyio.CancelScope) -> None:
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for signum in signals:
            logging.getLogger("snipe").warning(
                "%s: finishing purchases in flight, then stopping", signal.Signals(signum).name
            )
            scope.cancel()
            return
