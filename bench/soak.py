"""Soak: a day of market (sped up) with faults and a 10-minute outage, the engine on it.

A `snipe sandbox` process (127.0.0.1, ``--speed``) serves a living market; the engine
runs in this process exactly as `snipe run` assembles it (``open_engine`` +
``operations``, status file, file ledger), on the same sped-up market clock. Faults are
armed once the engine trades (5xx and HTML pages, "System busy", 429 storms, lost buy
answers); in the middle of the run every interface endpoint answers 503 for 10 market
minutes (the outage), then the faults come back. After ``--hours`` of market time the
faults are disarmed, the engine gets ``--settle`` market seconds to resolve what is open,
and is stopped.

Printed: RSS of this process at each quarter of the run (flat within 10% is the target),
ledger and status file sizes, event-loop stalls over 100 ms (a task that wakes every
10 ms real time and measures how late it is), the search budget used (searches sent
against what the limit allowed), 429s, snapshot bytes, and the ground-truth comparison of
bench/torture.py (no item twice, every charge in the ledger at its price, no cap exceeded,
nothing unresolved).

Run: ``python bench/soak.py [--hours 24] [--speed 120] [--backend asyncio]`` (24 market
hours at 120x: about 12 minutes of wall time).

Last run (2026-11-23, main, ``--hours 24 --speed 120 --seed 5``, asyncio, 2 shared cores;
738 s of wall time, 24.25 market hours with the settling):

- running 17 market s after start; outage 11.92 h to 12.08 h; faults disarmed at 24.0 h
- RSS by quarter: 69.6, 69.5, 70.1, 70.4 MB (6, 12, 18, 24 h); max/Q1 1.012 (target 1.10)
- ledger 454,656 bytes (with its WAL), status file 1,298 bytes
- event-loop stalls over 100 ms: 0 of 66,692 wakes (idle baseline 0 of 982); worst
  lateness 66 ms (baseline 1 ms)
- searches 22,457 (77% of the budget at 120x); 429s 219, all injected, 0 self-caused
- snapshots 8,548, 103.3 MB; 135 purchases charged (COMPLETED 128, REFUNDED 7)
- ground truth: no item committed twice, every charged purchase in the ledger with its
  charged price, no cap exceeded at any moment, nothing unresolved: all hold

An earlier run (branch i13-torture, before the merges, under load): RSS 67.8 to 69.8 MB
(1.03), 30 stalls of 63,426 wakes (worst 254 ms), 73% of the budget, same verdicts.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torture

from engine import ScaledClock
from engine._plugins import make_plugin_host
from engine.ops import OpsSettings, operations
from engine.rules import load_rules
from engine.sniper import (
    EngineMode,
    EngineSettings,
    SessionOptions,
    format_bytes,
    open_engine,
    status_path_for,
)

CENTS = 1000
CAPS = torture.Caps(total=3000 * CENTS, per_day=250 * CENTS, rules={})

FAULTS: list[dict[str, Any]] = [
    {"endpoint": "GET /v1/buy-one-p2p", "kind": "timeout_after_commit", "probability": 0.05,
     "seconds": 120},
    {"endpoint": "GET /v1/buy-one-p2p", "kind": "drop_connection", "probability": 0.03},
    {"endpoint": "GET /v1/check-many-project-id", "kind": "system_busy", "probability": 0.05},
    {"endpoint": "GET /v1/check-many-project-id", "kind": "http_error", "probability": 0.03},
    {"endpoint": "GET /v1/user", "kind": "html_200", "probability": 0.03},
    {"endpoint": "/v2/search-items-by-name", "kind": "http_error", "probability": 0.02},
    {"endpoint": "/v2/search-items-by-name", "kind": "rate_limit", "probability": 0.01,
     "retry_ms": 5000},
    {"endpoint": "GET /v1/prices/snapshot", "kind": "http_error", "probability": 0.02},
]  # fmt: skip

OUTAGE = {"endpoint": "*", "kind": "http_error", "status": 503, "probability": 1.0}

RULES = """version: 1
account:
  base_url: "{url}"
  trade_link: "{link}"
  ledger: "{ledger}"
budgets: {{per_day: "250.00", total: "3000.00"}}
rules:
  - name: deals
    match: {{patterns: ["*"], game: csgo}}
    discount: 25
    max_price: "20.00"
  - name: knives
    match: {{patterns: ["★ *"], game: csgo}}
    discount: 20
    max_price: "150.00"
"""


def rss_bytes() -> int:
    """This process's resident set size now (Linux), else its peak."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def post_json(url: str, body: dict[str, Any] | None = None, method: str = "POST") -> Any:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method)
    with urllib.request.urlopen(request, timeout=60) as answer:  # 127.0.0.1 only
        return json.loads(answer.read())


class Stalls:
    """Event-loop lateness, sampled every 10 ms of real time."""

    def __init__(self) -> None:
        self.count = 0
        self.worst = 0.0
        self.samples = 0

    async def run(self) -> None:
        while True:
            before = time.monotonic()
            await anyio.sleep(0.01)
            late = time.monotonic() - before - 0.01
            self.samples += 1
            self.worst = max(self.worst, late)
            if late > 0.1:
                self.count += 1


async def soak(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    settings = torture.Settings(seed=args.seed, speed=args.speed, size=args.size, balance="5000")
    origin = time.time()
    (workdir / "engine.log").touch()
    ledger = workdir / "ledger.sqlite"
    status_file = status_path_for(ledger)
    duration = args.hours * 3600.0
    with torture.sandbox_process(workdir, settings, origin, scenario=False) as (url, _):
        rules_path = workdir / "rules.yaml"
        rules_path.write_text(RULES.format(url=url, link=torture.TRADE_LINK, ledger=ledger))
        host = make_plugin_host()
        ruleset = load_rules(str(rules_path), host=host)
        clock = ScaledClock.from_origin(origin, args.speed)
        stalls = Stalls()
        quarters: list[tuple[str, int]] = []
        timeline: list[str] = []
        # same-run baseline: the loop's lateness on this machine with no engine running
        baseline = Stalls()
        with anyio.move_on_after(args.baseline):
            await baseline.run()
        start = clock.now()  # market time is measured from the engine's start
        async with open_engine(
            ruleset,
            api_key=torture.KEY,
            clock=clock,
            host=host,
            settings=EngineSettings(snapshot_every=float(ruleset.account.snapshot_every)),
            options=SessionOptions(ledger=ledger),
        ) as engine:

            async def conductor() -> None:
                while engine.status.mode is EngineMode.STARTING:  # noqa: ASYNC110 - no event to wait on
                    await anyio.sleep(0.01)
                timeline.append(f"running after {clock.now() - start:.0f} market s")
                for fault in FAULTS:
                    await anyio.to_thread.run_sync(post_json, f"{url}/_sandbox/faults", fault)
                marks = [duration * q / 4 for q in (1, 2, 3, 4)]
                outage_at = duration / 2 - 300.0
                outage_done = False
                while marks:
                    await clock.sleep_until(start + min(marks[0], outage_at))
                    elapsed = clock.now() - start
                    if not outage_done and elapsed >= outage_at:
                        await _outage(url, clock, timeline, start)
                        outage_done = True
                        outage_at = float("inf")
                        continue
                    quarters.append((f"Q{5 - len(marks)} ({elapsed / 3600:.1f} h)", rss_bytes()))
                    marks.pop(0)
                await anyio.to_thread.run_sync(
                    lambda: post_json(f"{url}/_sandbox/faults", method="DELETE")
                )
                timeline.append(f"faults disarmed at {(clock.now() - start) / 3600:.1f} h")

            async with (
                operations(engine, OpsSettings(status_file=status_file)),
                anyio.create_task_group() as tg,
            ):
                tg.start_soon(stalls.run)
                tg.start_soon(conductor)
                await engine.run(duration=duration + args.settle)
                tg.cancel_scope.cancel()
            status_line = await engine.status_line()
            status = engine.status
            used_limit = engine.limiter.usage("search")[1] or 0
        truth = torture.http_json(f"{url}/_sandbox/ground-truth")
    rows = torture.read_ledger(ledger)
    market_minutes = (duration + args.settle) / 60.0
    failures = torture.check_ledger(truth, rows, CAPS)
    ledger_bytes = _ledger_bytes(workdir)
    base = quarters[0][1] if quarters else 1
    requests = truth["requests"]
    search_429 = requests.get("GET /v2/search-items-by-name 429", 0)
    injected = sum(
        1
        for f in truth["faults_fired"]
        if f["kind"] == "rate_limit" and f["endpoint"].endswith("/v2/search-items-by-name")
    )
    return {
        "market_hours": round((duration + args.settle) / 3600, 2),
        "speed": args.speed,
        "wall_seconds": round(time.time() - origin),
        "timeline": timeline,
        "rss_by_quarter_mb": [(q, round(r / 2**20, 1)) for q, r in quarters],
        "rss_max_vs_q1": round(max(r for _, r in quarters) / base, 3) if quarters else None,
        "ledger_bytes": ledger_bytes,
        "status_file_bytes": status_file.stat().st_size if status_file.exists() else None,
        "loop_stalls_over_100ms": f"{stalls.count} of {stalls.samples} wakes "
        f"({_per_mille(stalls)} per mille; idle baseline {baseline.count} of "
        f"{baseline.samples}, {_per_mille(baseline)} per mille)",
        "loop_worst_lateness_ms": f"{stalls.worst * 1000:.0f} (idle baseline "
        f"{baseline.worst * 1000:.0f})",
        "searches": status.searches,
        "search_budget_used": round(status.searches / (used_limit * market_minutes), 3)
        if used_limit
        else None,
        "search_429": f"{search_429} ({injected} injected by rate_limit faults, "
        f"{search_429 - injected} self-caused)",
        "snapshots": status.snapshots,
        "snapshot_bytes": format_bytes(status.snapshot_bytes.total()),
        "mode_at_end": status.mode.value,
        "halt_reason": status.halt_reason,
        "purchases_charged": sum(
            1 for p in truth["purchases"] if p["account"] == truth["default_account"]
        ),
        "ledger_rows": dict(Counter(r["state"] for r in rows.values())),
        "faults_fired": dict(Counter(f["kind"] for f in truth["faults_fired"])),
        "status_line": status_line,
        "failures": failures,
        "workdir": str(workdir),
    }


def _per_mille(stalls: Stalls) -> str:
    return f"{1000 * stalls.count / max(1, stalls.samples):.1f}"


def _ledger_bytes(workdir: Path) -> int:
    """The ledger file with its WAL and shared-memory files."""
    files = workdir.glob("ledger.sqlite*")
    return sum(p.stat().st_size for p in files if not p.name.endswith(".json"))


async def _outage(url: str, clock: ScaledClock, timeline: list[str], start: float) -> None:
    """Every interface endpoint answers 503 for 10 market minutes; then the faults return."""
    await anyio.to_thread.run_sync(lambda: post_json(f"{url}/_sandbox/faults", method="DELETE"))
    await anyio.to_thread.run_sync(post_json, f"{url}/_sandbox/faults", OUTAGE)
    timeline.append(f"outage from {(clock.now() - start) / 3600:.2f} h")
    await clock.sleep(600.0)
    await anyio.to_thread.run_sync(lambda: post_json(f"{url}/_sandbox/faults", method="DELETE"))
    for fault in FAULTS:
        await anyio.to_thread.run_sync(post_json, f"{url}/_sandbox/faults", fault)
    timeline.append(f"outage over at {(clock.now() - start) / 3600:.2f} h")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hours", type=float, default=24.0, help="market hours (24)")
    parser.add_argument("--speed", type=float, default=120.0, help="market s per real s (120)")
    parser.add_argument("--settle", type=float, default=900.0, help="market s to settle (900)")
    parser.add_argument("--size", type=int, default=1500, help="listings on the market (1500)")
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument(
        "--baseline", type=float, default=10.0, help="real s of idle loop measured first (10)"
    )
    parser.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio")
    parser.add_argument("--workdir", type=Path)
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="snipe-soak-"))
    workdir.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("SNIPE_PLUGINS", "")
    result = anyio.run(soak, args, workdir, backend=args.backend)
    print(f"== soak, {args.backend} ==")
    for key, value in result.items():
        if key != "failures":
            print(f"  {key:24s} {value}")
    for name, problems in result["failures"].items():
        verdict = "ok" if not problems else f"FAILED ({len(problems)})"
        print(f"  [{verdict}] {name}")
        for problem in problems[:8]:
            print(f"      {problem}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
