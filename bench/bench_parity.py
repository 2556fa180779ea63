"""Backtest-to-live parity, measured (issue 19): a sandbox live run recorded with
``snipe run --record`` and replayed with ``snipe backtest RULES DIR --against LEDGER``.

A ``snipe sandbox`` process (127.0.0.1, ``--speed``, the torture's faults: slow, lost and
refused buy answers, 5xx and HTML pages, search 429s, snapshot errors) serves a living
market; ``snipe run RULES --record DIR`` buys on it for ``--minutes`` market minutes on
the same sped-up clock; then ``snipe backtest RULES DIR --against LEDGER --json`` replays
the recording through the engine and compares decision by decision.

Printed: the decisions either side made, how many agreed, live-only and replay-only, the
agreement (target: at least 95%), each disagreement with its named cause (target: none
unexplained), and the agreed decisions whose outcome differed (not counted against
parity: fills are the market's). Exit status 1 when a target is missed.

The live run polls (``account.feed: off``) unless ``--feed``: then it reads the sandbox's
live feed, whose events ``--record`` writes as format 2's ``feed`` records and the replay
hands to the engine at their times.

Run: ``python bench/bench_parity.py [--minutes 30] [--speed 10] [--seed 7] [--feed]`` (30 market
minutes at 10x: about 3 minutes of wall time, then the replay).

Last runs (2026-11-24, branch i19-parity, 30 market minutes at 10x, 2 shared cores):
seed 7: 52 decisions, 50 agreed (96.2%), 2 live-only "timing"; seed 3: 60 decisions,
59 agreed (98.3%), 1 live-only "reference not yet learned". With ``--feed`` (main, same
day, quiet machine), seed 7: 60 decisions, 59 agreed (98.3%), 1 replay-only "answer not
recorded" (a listing nowhere in the recording); the first such run had HALTed on a cap
race between the feed and a search, since fixed (see the README)
("Backtest-to-live parity").
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import torture

RULES = """version: 1
account:
  base_url: "{url}"
  trade_link: "{link}"
  ledger: "{ledger}"
  feed: "{feed}"
budgets: {{per_day: "250.00", total: "250.00"}}
rules:
  - name: few
    match: {{patterns: ["*"], game: csgo}}
    discount: 30
    max_price: "60.00"
    max_count: 6
    priority: 5
  - name: deals
    match: {{patterns: ["*"], game: csgo}}
    discount: 20
    max_price: "15.00"
"""

TARGET = 0.95


def run_live(workdir: Path, args: argparse.Namespace) -> tuple[Path, Path, Path, float]:
    settings = torture.Settings(seed=args.seed, speed=args.speed, size=args.size, balance="500")
    origin = time.time()
    ledger = workdir / "ledger.sqlite"
    recording = workdir / "recording"
    rules = workdir / "rules.yaml"
    env = {**os.environ, "SNIPE_API_KEY": torture.KEY, "SNIPE_PLUGINS": "", "PYTHONUNBUFFERED": "1"}
    began = time.time()
    with torture.sandbox_process(workdir, settings, origin, scenario=True) as (url, _):
        feed = "auto" if args.feed else "off"
        rules.write_text(RULES.format(url=url, link=torture.TRADE_LINK, ledger=ledger, feed=feed))
        command = [*torture.SNIPE, "run", str(rules), "--record", str(recording)]
        command += ["--speed", f"{args.speed:g}", "--origin", repr(origin)]
        command += ["--for", f"{args.minutes * 60:g}"]
        with (workdir / "run.log").open("wb") as log:
            subprocess.run(command, stdout=log, stderr=log, env=env, cwd=torture.ROOT, check=True)
    return rules, recording, ledger, time.time() - began


def replay(rules: Path, recording: Path, ledger: Path) -> tuple[dict[str, Any], float]:
    began = time.time()
    command = [*torture.SNIPE, "backtest", str(rules), str(recording), "--against", str(ledger)]
    env = {**os.environ, "SNIPE_PLUGINS": ""}
    answer = subprocess.run(
        [*command, "--json"], capture_output=True, text=True, env=env, cwd=torture.ROOT, check=True
    )
    return json.loads(answer.stdout), time.time() - began


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0, help="market minutes (30)")
    parser.add_argument("--speed", type=float, default=10.0, help="market s per real s (10)")
    parser.add_argument("--size", type=int, default=1500, help="listings on the market (1500)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--workdir", type=Path)
    parser.add_argument(
        "--feed", action="store_true", help="the live run reads the sandbox's feed (default: polls)"
    )
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="snipe-parity-"))
    workdir.mkdir(parents=True, exist_ok=True)
    rules, recording, ledger, live_seconds = run_live(workdir, args)
    parity, replay_seconds = replay(rules, recording, ledger)
    rows = parity["rows"]
    total = len(rows)
    share = parity["agreement"]
    way = "feed" if args.feed else "polling"
    print(
        f"== parity: {args.minutes:g} market minutes at {args.speed:g}x, seed {args.seed}, {way} =="
    )
    print(f"  live run          {live_seconds:.0f} s wall, recording {_size(recording)}")
    print(f"  replay            {replay_seconds:.1f} s wall")
    print(
        f"  decisions         {total}: agreed {parity['agreed']}, live-only"
        f" {parity['live_only']}, replay-only {parity['replay_only']}"
    )
    figure = "-" if share is None else f"{share * 100:.1f}%"
    print(f"  agreement         {figure} (target {TARGET * 100:.0f}%)")
    for cause, n in parity["causes"].items():
        print(f"  cause             {n} x {cause}")
    for row in rows:
        if row["verdict"] != "agreed":
            print(f"    {row['verdict']}: {row['name']} [{row['item_id']}]: {row['cause']}:"
                  f" {row['detail']}")  # fmt: skip
    print(f"  outcomes differing among agreed decisions: {parity['outcome_differences']}")
    unexplained = [
        r for r in rows if r["verdict"] != "agreed" and r["cause"] in (None, "unexplained")
    ]
    ok = share is not None and share >= TARGET and not unexplained and total > 0
    verdict = "ok" if ok else "FAILED"
    print(f"  [{verdict}] at least {TARGET * 100:.0f}% agree, every disagreement named")
    print(f"  workdir {workdir}")
    return 0 if ok else 1


def _size(path: Path) -> str:
    size = sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    return f"{size / 1024:.0f} KiB"


if __name__ == "__main__":
    sys.exit(main())
