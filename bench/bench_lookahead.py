"""The look-ahead check's cost against one backtest of the same recording.

A recording of ``--minutes`` (default 20) of a small in-process sandbox market is made
(as the backtest tests make theirs: the client recording through the sandbox app, on a
virtual clock), kept in ``--keep DIR`` when given. Then, in this process, one after the
other: (a) one backtest of the rules below (the baseline); (b) ``snipe lookahead``'s
check with ``--cuts`` (default 4) cuts. Prints both wall times and their ratio; the
expected ratio is about 1 + N/2 (the full run, then N runs each as long as its cut).

    python bench/bench_lookahead.py [--minutes 20] [--cuts 4] [--keep DIR]

Last measured (2 shared cores, CPython 3.11, loaded by other work): 20 minutes, 393
decision steps: one backtest 13.96 s, the check with 4 cuts 40.02 s (clean), ratio 2.87
(expected about 3.0).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import anyio

NAMES = ("AK-47 | Redline (Field-Tested)", "AWP | Asiimov (Field-Tested)")
RULES = """
version: 1
account: {base_url: "http://replay", trade_link: "https://steamcommunity.com/tradeoffer/new/?partner=123456789&token=AbCdEfGh"}
budgets: {per_day: "300.00", total: "300.00"}
rules:
  - name: redlines
    match: {names: ["AK-47 | Redline (Field-Tested)"], game: csgo}
    discount: 10
    max_price: "60.00"
  - name: asiimovs
    match: {names: ["AWP | Asiimov (Field-Tested)"], game: csgo}
    discount: {min: 10, versus: market.p25, min_observations: 3}
    max_price: "200.00"
"""


async def record(directory: Path, minutes: int) -> None:
    import httpx

    from engine import VirtualClock
    from engine._limiter import DEFAULT_LIMITS, RateLimiter
    from engine.backtest import Recorder, RecordWriter
    from engine.client import MarketClient
    from engine.sandbox import MarketConfig, Sandbox, SandboxConfig

    clock = VirtualClock()
    market = MarketConfig(size=400, featured=NAMES, featured_share=0.5)
    sandbox = Sandbox(SandboxConfig(seed=11, market=market), clock=clock)
    limiter = RateLimiter(clock, DEFAULT_LIMITS)
    transport = httpx.ASGITransport(app=sandbox.app)
    async with MarketClient(
        sandbox.api_key,
        base_url="http://sandbox",
        transport=transport,
        limiter=limiter,
        clock=clock,
    ) as client:
        with RecordWriter(directory, include_hold=True) as writer:
            recorder = Recorder(client, writer, clock, limiter)
            for _ in range(minutes * 6):
                await recorder.step()
                clock.advance(10.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=int, default=20)
    parser.add_argument("--cuts", type=int, default=4)
    parser.add_argument("--keep", type=Path)
    args = parser.parse_args()

    from engine._plugins import make_plugin_host
    from engine.backtest import check_lookahead, read_records, recording_span, run_backtest
    from engine.rules import load_rules_text

    with tempfile.TemporaryDirectory() as scratch:
        data = args.keep or Path(scratch) / "rec"
        if not (data / "recording.json").exists():
            began = time.perf_counter()
            anyio.run(record, data, args.minutes)
            print(
                f"recording of {args.minutes} market minutes made in "
                f"{time.perf_counter() - began:.1f} s"
            )

        def host(extra: object = ()) -> object:
            return make_plugin_host(load_entry_points=False, plugins=extra)  # type: ignore[arg-type]

        _, end = recording_span(data)

        async def one_backtest() -> int:
            ruleset = load_rules_text(RULES, host=host())  # type: ignore[arg-type]
            run = await run_backtest(ruleset, read_records(data), host=host(), end=end)  # type: ignore[arg-type]
            return len(run.decision_times)

        began = time.perf_counter()
        steps = anyio.run(one_backtest)
        baseline = time.perf_counter() - began
        print(f"(a) one backtest: {baseline:.2f} s ({steps} decision steps)")

        async def the_check() -> object:
            return await check_lookahead(
                lambda h: load_rules_text(RULES, host=h),
                data,
                make_host=host,  # type: ignore[arg-type]
                cuts=args.cuts,
            )

        began = time.perf_counter()
        report = anyio.run(the_check)
        checked = time.perf_counter() - began
        found = "look-ahead FOUND" if report.found else "clean"  # type: ignore[attr-defined]
        print(f"(b) the check, {args.cuts} cuts: {checked:.2f} s ({found})")
        print(f"ratio (b)/(a): {checked / baseline:.2f} (expected about {1 + args.cuts / 2:.1f})")


if __name__ == "__main__":
    main()
