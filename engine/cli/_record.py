"""``snipe record``: record the market for backtests (docs/recording-format.md).

Exit status: 0 when something was recorded; 1 when nothing was (nothing answered, or
every answer failed): a new folder is then removed, a resumed one is left as it was;
2 for bad input."""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import time
from typing import Any

import anyio

from .._clock import Clock, ScaledClock, SystemClock
from .._errors import ConfigError
from .._limiter import DEFAULT_LIMITS, RateLimiter
from ._args import duration

__all__ = ["register"]

_DEFAULT_URL = "http://127.0.0.1:8787"


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "record",
        help="record prices snapshots and search answers for backtests",
        description="Record the prices snapshot every 10 s (as compressed diffs), searches of "
        "the names that changed (within the search limit), the best-discount catalogue "
        "pages and the live listing feed's events (when the service serves it: --feed), "
        "with their times, into DIR. Run it again on the same DIR to resume. The "
        "API key (for searches) comes from SNIPE_API_KEY; without one only snapshots "
        "are recorded.",
    )
    parser.add_argument("--out", required=True, metavar="DIR", help="recording directory")
    parser.add_argument(
        "--base-url",
        default=os.environ.get("SNIPE_BASE_URL", _DEFAULT_URL),
        help=f"marketplace address (SNIPE_BASE_URL, else {_DEFAULT_URL}: `snipe sandbox`)",
    )
    parser.add_argument(
        "--for",
        dest="seconds",
        metavar="DURATION",
        type=duration,
        help="stop after this long: 600 (seconds), 90s, 10m, 1h30m, 2d",
    )
    parser.add_argument(
        "--progress",
        metavar="DURATION",
        type=duration,
        default=60.0,
        help="print what was recorded so far this often (60s)",
    )
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
    parser.add_argument(
        "--feed",
        choices=("auto", "on", "off"),
        default="auto",
        help="record the live listing feed: auto (when it answers the handshake; the "
        "default), on (keep trying), off (as account.feed in a rules file)",
    )
    parser.add_argument(
        "--feed-url",
        metavar="URL",
        help="where the feed is (the website's host; default: the host of --base-url, "
        "where `snipe sandbox` serves it)",
    )
    parser.add_argument("--api-key-env", default="SNIPE_API_KEY", help="key variable")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..backtest import Recorder, RecorderSettings, RecordWriter
    from ..client import GAMES, MarketClient
    from ..sniper import feed_client

    for option, value in (("--speed", args.speed), ("--segment-mb", args.segment_mb)):
        if value <= 0:
            raise ConfigError("must be positive", location=option)
    key = os.environ.get(args.api_key_env)
    clock: Clock = (
        SystemClock() if args.speed == 1.0 else ScaledClock(start=time.time(), speed=args.speed)
    )
    account = _feed_account(args)
    created = not os.path.exists(args.out)
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
                searches=key is not None,
                catalogue_pages=2 if key is not None else 0,
                feed=account.feed,
            )
            # the engine's own way to the feed (rules file: account.feed, feed_url)
            feed = feed_client(account, games=sorted(GAMES), api_key=key, clock=clock)
            recorder = Recorder(
                client, writer, clock, limiter, settings=settings, on_error=warn, feed=feed
            )
            recorders.append(recorder)
            try:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(_progress, recorder, args.progress)
                    await recorder.run(args.seconds)
                    tg.cancel_scope.cancel()
            finally:
                print(f"snipe record: {_so_far(recorder)} -> {args.out}", file=sys.stderr)

    recorders: list[Any] = []  # what main() recorded, read after a Ctrl-C too
    with writer, contextlib.suppress(KeyboardInterrupt):
        anyio.run(main)
    if recorders and _recorded(recorders[0]):
        return 0
    if created:  # a folder holding only a header is refused by `snipe backtest`: not left
        shutil.rmtree(args.out, ignore_errors=True)
        left = f"{args.out} removed"
    else:
        left = f"{args.out} left as it was"
    print(f"snipe record: error: nothing was recorded ({left})", file=sys.stderr)
    return 1


def _feed_account(args: argparse.Namespace) -> Any:
    """The command line's feed options checked as a rules file's ``account`` is."""
    from pydantic import ValidationError

    from ..rules import Account

    try:
        return Account(base_url=args.base_url, feed=args.feed, feed_url=args.feed_url)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = "--feed-url" if "feed_url" in error["loc"] else "--base-url"
        raise ConfigError(str(error["msg"]), location=where) from None


def _recorded(recorder: Any) -> int:
    stats = recorder.stats
    return int(stats.snapshots + stats.searches + stats.catalogue_pages)


def _so_far(recorder: Any) -> str:
    stats = recorder.stats
    feed = f"{stats.feed_events} feed events, " if recorder.feed is not None else ""
    return (
        f"{stats.snapshots} snapshots, {stats.searches} searches, "
        f"{stats.catalogue_pages} catalogue pages, {feed}{stats.errors} errors"
    )


async def _progress(recorder: Any, every: float) -> None:
    """A line of what was recorded so far, every ``every`` real seconds: a long recording
    says it is alive."""
    while True:
        await anyio.sleep(every)
        print(f"snipe record: so far {_so_far(recorder)}", file=sys.stderr, flush=True)
