"""``snipe sandbox``: serve the sandbox marketplace on a local socket."""

from __future__ import annotations

import argparse
import sys
import time
from datetime import UTC, datetime
from typing import Any

import anyio

from .._clock import ScaledClock
from .._errors import ConfigError
from .._money import format_usd, parse_usd

__all__ = ["register"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "sandbox",
        help="serve the sandbox marketplace locally (paper trading, demos, tests)",
        description=(
            "Serve a local marketplace that behaves like the real one: a seeded living "
            "market, every documented limit and refusal, trade locks, and failures on "
            "demand. Point a client at the printed address with the printed key."
        ),
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (127.0.0.1)")
    parser.add_argument("--port", type=int, default=8787, help="port (8787; 0 picks one)")
    parser.add_argument("--seed", type=int, default=1, help="market seed (1)")
    parser.add_argument(
        "--speed", type=float, default=1.0, help="market seconds per real second (1.0)"
    )
    parser.add_argument(
        "--origin",
        metavar="EPOCH",
        type=float,
        help="the real epoch second at which market time equals real time (default: now); "
        "give `snipe run` the same --speed and --origin to share the market's clock",
    )
    parser.add_argument("--scenario", help="YAML/JSON file of faults to inject")
    parser.add_argument("--api-key", help="key of the funded default account (random)")
    parser.add_argument("--balance", default="1000", help="its balance in dollars (1000)")
    parser.add_argument("--size", type=int, default=3000, help="listings on the market (3000)")
    parser.add_argument(
        "--jitter-ms",
        metavar="LOW-HIGH",
        help="network delay of every request, each way, drawn from LOW-HIGH market "
        "milliseconds (seeded); limits are counted when a request arrives (none)",
    )
    parser.add_argument(
        "--partner",
        action="store_true",
        help="partner account: no search rate limit (regular accounts: 20 per 60 s)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..sandbox import LimitConfig, MarketConfig, Sandbox, SandboxConfig

    if args.speed <= 0:
        raise ConfigError("must be positive", location="--speed")
    if args.size < 0:
        raise ConfigError("must be zero or more", location="--size")
    try:
        balance = parse_usd(args.balance)
    except ValueError as exc:
        raise ConfigError(str(exc), location="--balance") from None
    jitter = _jitter(args.jitter_ms) if args.jitter_ms else (0.0, 0.0)
    config = SandboxConfig(
        jitter=jitter,
        seed=args.seed,
        market=MarketConfig(size=args.size),
        api_key=args.api_key,
        balance=balance,
        limits=LimitConfig(search=None) if args.partner else LimitConfig(),
    )
    clock = ScaledClock.from_origin(time.time() if args.origin is None else args.origin, args.speed)
    sandbox = Sandbox(config, clock=clock, scenario=args.scenario)

    def announce(url: str) -> None:
        market_time = datetime.fromtimestamp(clock.now(), UTC).strftime("%Y-%m-%d %H:%M:%S")
        # the first line ends with the bare address: scripts and tests read it from there
        print(f"snipe sandbox: serving {url}", flush=True)
        feed = url.replace("http://", "ws://", 1)
        print(f"  live listing feed: {feed}/socket.io/?EIO=4&transport=websocket", flush=True)
        print(
            f"  seed {args.seed}, speed {args.speed:g}x, market time {market_time} UTC, "
            f"{len(sandbox.market.listings)} listings",
            flush=True,
        )
        print(
            f"  api key of the funded default account ({format_usd(balance)}): {sandbox.api_key}",
            flush=True,
        )
        print(f"  try: curl '{url}/v1/user?api={sandbox.api_key}'", flush=True)
        print(f"  ground truth: {url}/_sandbox/ground-truth  (Ctrl-C stops)", flush=True)

    try:
        anyio.run(_serve, sandbox, args.host, args.port, announce)
    except OSError as exc:
        raise ConfigError(
            f"cannot listen on {_address(args.host, args.port)}: {exc.strerror or exc}",
            location="--host/--port",
        ) from None
    except KeyboardInterrupt:
        print("snipe sandbox: stopped", file=sys.stderr)
    return 0


def _address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _jitter(text: str) -> tuple[float, float]:
    low, sep, high = text.replace(",", "-").partition("-")
    try:
        values = (float(low), float(high if sep else low))
    except ValueError:
        raise ConfigError(
            f"expected LOW-HIGH milliseconds, got {text!r}", location="--jitter-ms"
        ) from None
    if not 0 <= values[0] <= values[1] < float("inf"):
        raise ConfigError(
            f"expected 0 <= LOW <= HIGH milliseconds, got {text!r}", location="--jitter-ms"
        )
    return values[0] / 1000, values[1] / 1000


async def _serve(sandbox: Any, host: str, port: int, announce: Any) -> None:
    from ..sandbox import serve

    await serve(sandbox, host=host, port=port, on_ready=announce)
