"""``snipe record``: record the market for backtests (docs/recording-format.md)."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from typing import Any

import anyio

from .._clock import Clock, ScaledClock, SystemClock
from .._errors import ConfigError
from .._limiter import DEFAULT_LIMITS, RateLimiter

__all__ = ["register"]

_DEFAULT_URL = "http://127.0.0.1:8787"


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "record",
        help="record prices snapshots and search answers for backtests",
        description="Record the prices snapshot every 10 s (as compressed diffs), searches of "
        "the names that changed (within the search limit) and the best-discount catalogue "
        "pages, with their times, into DIR. Run it again on the same DIR to resume. The "
        "API key (for searches) comes from SNIPE_API_KEY; without one only snapshots "
        "are recorded.",
    )
    parser.add_argument("--out", required=True, metavar="DIR", help="recording directory")
    parser.add_argument(
        "--base-url",
        default=os.environ.get("SNIPE_BASE_URL", _DEFAULT_URL),
        help=f"marketplace address (SNIPE_BASE_URL, else {_DEFAULT_URL}: `snipe sandbox`)",
    )
    parser.add_argument("--for", dest="seconds", type=float, help="stop after SECONDS")
    parser.add_argument(
        "--include-hold", action="store_true", help="record trade-locked listings too"
    )
    parser.add_argument("--segment-mb", type=float, default=32.0, help="segment size (32 MB)")
    parser.add_argument(
        "--max-mb", type=float, default=2048.0, help="delete the oldest segments beyond (2048)"
    )
    parser.add_argument(
        "--speed",
        type=float,
        default=1.0,
        help="market seconds per real second, to match `snipe sandbox --speed` (1)",
    )
    parser.add_argument("--api-key-env", default="SNIPE_API_KEY", help="key variable")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..backtest import Recorder, RecorderSettings, RecordWriter
    from ..client import MarketClient

    for option, value in (("--speed", args.speed), ("--segment-mb", args.segment_mb)):
        if value <= 0:
            raise ConfigError("must be positive", location=option)
    if args.seconds is not None and args.seconds <= 0:
        raise ConfigError("must be positive", location="--for")
    key = os.environ.get(args.api_key_env)
    clock: Clock = (
        SystemClock() if args.speed == 1.0 else ScaledClock(start=time.time(), speed=args.speed)
    )
    writer = RecordWriter(
        args.out,
        include_hold=args.include_hold,
        source=args.base_url,
        segment_bytes=int(args.segment_mb * (1 << 20)),
        max_bytes=int(args.max_mb * (1 << 20)),
    )
    if writer.resumed:
        print(f"snipe record: resuming {args.out}", file=sys.stderr)
    if key is None:
        print(
            f"snipe record: {args.api_key_env} is not set: recording snapshots only",
            file=sys.stderr,
        )

    def warn(message: str) -> None:
        if "ConnectError" in message:
            message += f" (nothing answers at {args.base_url})"
        print(f"snipe record: {message}", file=sys.stderr)

    async def main() -> None:
        limiter = RateLimiter(clock, DEFAULT_LIMITS)
        async with MarketClient(
            key or "none", base_url=args.base_url, limiter=limiter, clock=clock
        ) as client:
            settings = RecorderSettings(
                searches=key is not None, catalogue_pages=2 if key is not None else 0
            )
            recorder = Recorder(client, writer, clock, limiter, settings=settings, on_error=warn)
            try:
                await recorder.run(args.seconds)
            finally:
                stats = recorder.stats
                print(
                    f"snipe record: {stats.snapshots} snapshots, {stats.searches} searches, "
                    f"{stats.catalogue_pages} catalogue pages, {stats.errors} errors -> "
                    f"{args.out}",
                    file=sys.stderr,
                )

    with writer, contextlib.suppress(KeyboardInterrupt):
        anyio.run(main)
    return 0
