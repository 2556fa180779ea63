"""Crash torture: the real `snipe run` process, SIGKILLed again and again, against a
`snipe sandbox` process with faults on, then compared with the sandbox's ground truth.

For each anyio backend (``snipe run --backend``), a fresh sandbox (127.0.0.1, port 0,
sped up with ``--speed``; the engine shares its market clock with ``--speed --origin``)
and a fresh ledger; then ``--crashes`` times: start ``python -m engine run`` on the same
ledger, and SIGKILL it at a seeded moment, either

- **in flight**: as soon as a purchase written by this life is still ``INTENT`` in the
  ledger (read read-only while the engine runs; buy requests are slowed by a ``latency``
  fault so the window is wide), or
- **at random**: a seeded delay after start (during start-up, the gate, searches...).

Finally the faults are disarmed (``DELETE /_sandbox/faults``), the engine is started once
more and left to resolve everything, then stopped with SIGTERM. The ledger is compared
with ``GET /_sandbox/ground-truth``:

1. no item committed twice (ground truth and ledger), no project_id charged twice;
2. every charged purchase is in the ledger, spent, with the charged price; the ledger
   claims no purchase the service did not make, and no refund it did not make;
3. no cap (total, per day, per rule spend and count) exceeded at any moment of the ground
   truth's timeline (charges and refunds in time order);
4. nothing left unresolved (INTENT/UNKNOWN) at the end;
5. the final run exits 0 on SIGTERM;
6. how long the bot could not buy after each start: from the process start to the first
   status file (``LEDGER.status.json``, written every 5 engine seconds) whose ``mode`` is
   ``running`` with this process's pid (buying is allowed exactly in that mode). In market
   seconds (the engine's clock; real start-up costs are multiplied by ``--speed`` in it, so
   this figure is pessimistic) and in real seconds. Target: p95 under 90 s.

Every life's exit status is kept; an exit 3 (refused to trade) or 4 (HALTED) is a bot that
a supervisor following docs/snipe.service would not restart: reported as a failure with
the log line that says why, and restarted anyway so the series goes on.

Run: ``python bench/torture.py [--crashes 30] [--seed 7] [--speed 10] [--backends
asyncio,trio]`` (about 10 to 30 minutes); ``tests/sniper/test_torture.py`` runs a short
version.

Last run (2026-11-23, main with the search-window journal, ``--crashes 30 --speed 10``, 2
shared cores, 496 s of wall time):

==========================================  ===================  ===================
                                             asyncio              trio
==========================================  ===================  ===================
SIGKILLs / lives / reached running           30 / 31 / 31         30 / 31 / 31
final exit                                   0                    0
unable to buy, market s p50 / p95            10.6 / 12.8          10.9 / 12.6
purchases charged (USD)                      43 ($168.81)         45 ($168.75)
search 429s (injected by the fault)          6 (6)                11 (11)
==========================================  ===================  ===================

Held on both: no item committed twice; every charged purchase in the ledger with its
charged price; no cap exceeded at any moment; nothing unresolved at the end; final exit 0;
no life stopped for good; p95 under 90 s; no self-caused 429 (the search window a killed
process used is restored from ``<ledger>.limits``). The run before that journal (same
day, 532 s): the same verdicts, p95 10.8 (asyncio) and 12.4 (trio) market s, but 26 and 32
self-caused 429s. Before the start-up gate fix (issue 13 point 1) asyncio's p95 was 312
market s and 2 to 4 lives per series exited 3 after one transient answer.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
KEY = "torture-key-0b7d"
SNIPE = [sys.executable, "-m", "engine"]
TRADE_LINK = "https://steamcommunity.com/tradeoffer/new/?partner=123456789&token=AbCdEfGh"
CENTS = 1000  # USD x 1000

# Faults on every endpoint the engine uses, the start-up gate's included. Buy answers are
# slowed (latency) so that purchases stay in flight long enough to be killed there.
SCENARIO = """
faults:
  - {endpoint: GET /v1/buy-one-p2p, kind: latency, probability: 0.6, seconds: 8}
  - {endpoint: GET /v1/buy-one-p2p, kind: timeout_after_commit, probability: 0.08, seconds: 600}
  - {endpoint: GET /v1/buy-one-p2p, kind: drop_connection, probability: 0.05}
  - {endpoint: GET /v1/buy-one-p2p, kind: http_error, probability: 0.03, commit: true}
  - {endpoint: GET /v1/check-many-project-id, kind: system_busy, probability: 0.05}
  - {endpoint: GET /v1/check-many-project-id, kind: http_error, probability: 0.03}
  - {endpoint: POST /v1/check-tradelink, kind: http_error, probability: 0.03}
  - {endpoint: GET /v1/user, kind: html_200, probability: 0.03}
  - {endpoint: /v2/search-items-by-name, kind: http_error, probability: 0.03}
  - {endpoint: /v2/search-items-by-name, kind: rate_limit, probability: 0.02, retry_ms: 2000}
  - {endpoint: GET /v1/prices/snapshot, kind: http_error, probability: 0.03}
busy_probability: 0.03
"""

BUDGET_TOTAL = 200 * CENTS
BUDGET_DAY = 160 * CENTS
RULE_CAPS = {"few": {"max_count": 4, "max_spend": 120 * CENTS}}


def rules_yaml(base_url: str, ledger: Path) -> str:
    return f"""version: 1
account:
  base_url: "{base_url}"
  trade_link: "{TRADE_LINK}"
  ledger: "{ledger}"
budgets: {{per_day: "{BUDGET_DAY // CENTS}.00", total: "{BUDGET_TOTAL // CENTS}.00"}}
rules:
  - name: few
    match: {{patterns: ["*"], game: csgo}}
    discount: 30
    max_price: "60.00"
    max_count: {RULE_CAPS["few"]["max_count"]}
    max_spend: "{RULE_CAPS["few"]["max_spend"] // CENTS}.00"
    priority: 5
  - name: deals
    match: {{patterns: ["*"], game: csgo}}
    discount: 20
    max_price: "15.00"
"""


# -- processes -----------------------------------------------------------------------------


@dataclass
class Settings:
    crashes: int = 30
    seed: int = 7
    speed: float = 10.0
    size: int = 1500
    balance: str = "1000"
    """The sandbox account's balance, dollars."""
    in_flight_share: float = 0.6
    random_kill: tuple[float, float] = (0.3, 6.0)
    """Real seconds after start for a kill at random."""
    in_flight_wait: float = 40.0
    """Real seconds a life waits for a purchase in flight before it is killed anyway."""
    final_timeout: float = 240.0
    """Real seconds the final run may take to resolve everything."""
    workdir: Path | None = None
    quiet: bool = False


@contextmanager
def sandbox_process(
    workdir: Path, settings: Settings, origin: float, *, scenario: bool = True
) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """`snipe sandbox` on 127.0.0.1 (a free port), with the torture's faults unless
    ``scenario`` is false; yields its address."""
    log = (workdir / "sandbox.log").open("w")
    command = [*SNIPE, "sandbox", "--port", "0", "--api-key", KEY, "--seed", str(settings.seed)]
    command += ["--speed", f"{settings.speed:g}", "--origin", repr(origin)]
    command += ["--size", str(settings.size), "--balance", settings.balance]
    if scenario:
        path = workdir / "faults.yaml"
        path.write_text(SCENARIO)
        command += ["--scenario", str(path)]
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        cwd=ROOT,
    )
    try:
        url = None
        assert process.stdout is not None
        for line in iter(process.stdout.readline, ""):
            if "serving http://127.0.0.1:" in line:
                url = line.split("serving ", 1)[1].split()[0]
                break
        if url is None:
            raise RuntimeError(f"the sandbox did not start; see {workdir / 'sandbox.log'}")
        yield url, process
    finally:
        process.terminate()
        with suppress(subprocess.TimeoutExpired):
            process.wait(timeout=20)
        if process.poll() is None:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()
        log.close()


def http_json(url: str, method: str = "GET") -> Any:
    request = urllib.request.Request(url, method=method)
    with urllib.request.urlopen(request, timeout=60) as answer:  # 127.0.0.1 only
        return json.loads(answer.read())


@dataclass
class Life:
    """One run of `snipe run`, from start to exit."""

    index: int
    backend: str
    started: float  # real epoch seconds
    started_market: float
    plan: str  # "in_flight", "random", "final"
    running_at: float | None = None  # real seconds when the status file said running
    running_market: float | None = None
    killed_at: float | None = None
    killed_in_flight: str | None = None
    exit_code: int | None = None
    why: str | None = None


class Series:
    """One crash series: one backend, one sandbox, one ledger."""

    def __init__(self, settings: Settings, backend: str, workdir: Path) -> None:
        self.settings = settings
        self.backend = backend
        self.workdir = workdir
        self.ledger = workdir / "ledger.sqlite"
        self.status_file = Path(f"{self.ledger}.status.json")
        self.origin = time.time()
        self.rng = random.Random(f"torture:{settings.seed}:{backend}")
        self.lives: list[Life] = []
        self.log_path = workdir / "engine.log"

    def market_now(self) -> float:
        return self.origin + (time.time() - self.origin) * self.settings.speed

    def run(self) -> dict[str, Any]:
        with sandbox_process(self.workdir, self.settings, self.origin) as (url, _):
            self.url = url
            rules = self.workdir / "rules.yaml"
            rules.write_text(rules_yaml(url, self.ledger))
            self.rules = rules
            # Lives that exit by themselves (3, 4) are not crashes: go on until enough
            # SIGKILLs landed (with a bound, should every life refuse).
            index = 0
            while self._kills() < self.settings.crashes and index < 3 * self.settings.crashes:
                draw = self.rng.random()
                self._life(index, "in_flight" if draw < self.settings.in_flight_share else "random")
                index += 1
            http_json(f"{url}/_sandbox/faults", "DELETE")  # the service calms down
            final = self._final()
            truth = http_json(f"{url}/_sandbox/ground-truth")
        purchases = read_ledger(self.ledger)
        return report(self, truth, purchases, final)

    def _kills(self) -> int:
        return sum(1 for life in self.lives if life.killed_at is not None)

    # -- one life ----------------------------------------------------------------------

    def _spawn(self, index: int, plan: str) -> tuple[Life, subprocess.Popen[bytes]]:
        command = [*SNIPE, "run", str(self.rules), "--ledger", str(self.ledger)]
        command += ["--speed", f"{self.settings.speed:g}", "--origin", repr(self.origin)]
        command += ["--backend", self.backend]
        env = {**os.environ, "SNIPE_API_KEY": KEY, "SNIPE_PLUGINS": "", "PYTHONUNBUFFERED": "1"}
        with self.log_path.open("a") as log:
            log.write(f"\n===== life {index} ({plan}) =====\n")
        life = Life(index, self.backend, time.time(), self.market_now(), plan)
        with self.log_path.open("ab") as log:  # the child keeps its own descriptor
            process = subprocess.Popen(
                command, stdout=subprocess.DEVNULL, stderr=log, env=env, cwd=ROOT
            )
        self.lives.append(life)
        return life, process

    def _watch_status(
        self,
        life: Life,
        process: subprocess.Popen[bytes],
        rows: dict[str, dict[str, Any]] | None = None,
        known: set[str] | None = None,
    ) -> None:
        """Has this life been able to buy yet? Its status file says ``running``, or (the
        file is written every 5 engine seconds) it has already written a purchase."""
        if life.running_at is not None:
            return
        document = _read_json(self.status_file)
        if document and document.get("pid") == process.pid and document.get("mode") == "running":
            life.running_at = time.time()
            life.running_market = self.market_now()
        if rows is not None and known is not None:
            written = [r["created_at"] for p, r in rows.items() if p not in known]
            if written:
                first = min(written)
                life.running_market = min(first, life.running_market or first)
                life.running_at = life.started + (life.running_market - life.started_market) / (
                    self.settings.speed
                )

    def _life(self, index: int, plan: str) -> None:
        known = set(read_ledger(self.ledger))
        life, process = self._spawn(index, plan)
        if plan == "random":
            deadline = time.time() + self.rng.uniform(*self.settings.random_kill)
            target = None
        else:
            deadline = time.time() + self.settings.in_flight_wait
            target = "wait"
        delay = self.rng.uniform(0.0, 0.2)
        while process.poll() is None and time.time() < deadline:
            rows = read_ledger(self.ledger)
            self._watch_status(life, process, rows, known)
            if target is not None:
                fresh = [
                    p for p, row in rows.items() if p not in known and row["state"] == "INTENT"
                ]
                if fresh:
                    time.sleep(delay)  # somewhere in the request's flight
                    target = fresh[0]
                    break
            time.sleep(0.01)
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
            life.killed_at = time.time()
            if target not in (None, "wait"):
                row = read_ledger(self.ledger).get(str(target))
                if row is not None and row["state"] == "INTENT":
                    life.killed_in_flight = str(target)
        life.exit_code = process.wait()
        self._watch_status(life, process, read_ledger(self.ledger), known)
        if life.exit_code not in (0, -signal.SIGKILL):
            life.why = last_error(self.log_path)
        if not self.settings.quiet:
            print(_life_line(life), flush=True)

    def _final(self) -> Life:
        """Start once more, let it resolve everything, stop it with SIGTERM. A life that
        exits by itself (3: refused, 4: HALTED) is restarted, as in the series."""
        deadline = time.time() + self.settings.final_timeout
        while True:
            known = set(read_ledger(self.ledger))
            life, process = self._spawn(len(self.lives), "final")
            settled_since: float | None = None
            while process.poll() is None and time.time() < deadline:
                rows = read_ledger(self.ledger)
                self._watch_status(life, process, rows, known)
                open_rows = [r for r in rows.values() if r["state"] in ("INTENT", "UNKNOWN")]
                if life.running_at is not None and not open_rows:
                    settled_since = settled_since or time.time()
                    if time.time() - settled_since >= 1.0:
                        break
                else:
                    settled_since = None
                time.sleep(0.02)
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    life.exit_code = process.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    process.kill()
                    life.exit_code = process.wait()
            else:
                life.exit_code = process.returncode
            self._watch_status(life, process)
            if life.exit_code != 0:
                life.why = last_error(self.log_path)
            if not self.settings.quiet:
                print(_life_line(life), flush=True)
            if life.exit_code == 0 or time.time() >= deadline:
                return life


def _life_line(life: Life) -> str:
    up = (
        f"running after {life.running_market - life.started_market:6.1f} market s "
        f"({life.running_at - life.started:5.2f} s)"
        if life.running_at is not None and life.running_market is not None
        else "never running"
    )
    flight = f" killed in flight ({life.killed_in_flight})" if life.killed_in_flight else ""
    why = f" | {life.why}" if life.why else ""
    return (
        f"  [{life.backend}] life {life.index:2d} {life.plan:9s} {up}, exit {life.exit_code}"
        f"{flight}{why}"
    )


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def last_error(log: Path) -> str | None:
    """The last line of the engine log that says why it stopped."""
    try:
        lines = log.read_text("utf-8", errors="replace").splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        if "refusing to trade" in line or "HALTED" in line or "Traceback" in line:
            return line.strip()[:300]
    return None


def read_ledger(path: Path) -> dict[str, dict[str, Any]]:
    """Every purchase in the ledger by project_id, read-only while the engine writes."""
    if not path.exists():
        return {}
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5) as db:
            db.row_factory = sqlite3.Row
            rows = db.execute("SELECT * FROM purchases").fetchall()
    except sqlite3.OperationalError:
        return {}  # not created yet
    return {row["project_id"]: dict(row) for row in rows}


# -- the comparison ------------------------------------------------------------------------


SPENT = {"BOUGHT", "RESERVED", "COMPLETED"}
FREE = {"FAILED", "RELEASED"}
UNRESOLVED = {"INTENT", "UNKNOWN"}


@dataclass(frozen=True)
class Caps:
    """The caps of the rules file, as the comparison checks them (USD x 1000)."""

    total: int = BUDGET_TOTAL
    per_day: int = BUDGET_DAY
    rules: dict[str, dict[str, int]] = field(default_factory=lambda: dict(RULE_CAPS))


def check_ledger(
    truth: dict[str, Any], ledger: dict[str, dict[str, Any]], caps: Caps | None = None
) -> dict[str, list[str]]:
    """Each invariant's failures (an empty list: it holds), with the evidence."""
    account = truth["default_account"]
    bought = [
        p for p in truth["purchases"] if p["account"] == account and p["source"] != "buy-order"
    ]
    refunded = {r["trade_id"] for r in truth["refunds"] if r["account"] == account}
    failures: dict[str, list[str]] = {
        "no item committed twice": [],
        "every charged purchase in the ledger with its charged price": [],
        "no cap exceeded at any moment": [],
        "nothing unresolved at the end": [],
    }
    twice = failures["no item committed twice"]
    for item, n in Counter(p["item_id"] for p in bought).items():
        if n > 1:
            twice.append(f"service charged item {item} {n} times")
    for pid, n in Counter(p["project_id"] for p in bought).items():
        if n > 1:
            twice.append(f"service charged project_id {pid} {n} times")
    # live as the ledger itself counts it when it writes an intent (Ledger.record_intent):
    # FAILED and RELEASED (the service's word said not bought) free the item; a RELEASED
    # row the service did charge is caught below (charged, but not spent in the ledger)
    live = Counter(r["item_id"] for r in ledger.values() if r["state"] not in FREE)
    twice.extend(f"ledger holds item {i} live {n} times" for i, n in live.items() if n > 1)

    missing = failures["every charged purchase in the ledger with its charged price"]
    by_pid = {p["project_id"]: p for p in bought}
    for p in bought:
        row = ledger.get(p["project_id"])
        if row is None:
            missing.append(f"{p['project_id']} ({p['name']}, {p['price']}) not in the ledger")
            continue
        want = "REFUNDED" if p["trade_id"] in refunded else None
        if row["state"] not in SPENT | {"REFUNDED"}:
            missing.append(f"{p['project_id']} charged {p['price']} but {row['state']} in ledger")
        elif row["charged_price"] != p["price"]:
            missing.append(
                f"{p['project_id']} charged {p['price']}, ledger says {row['charged_price']}"
            )
        if row["state"] == "REFUNDED" and want is None:
            missing.append(f"{p['project_id']} REFUNDED in the ledger, not by the service")
    for pid, row in ledger.items():
        if row["state"] in SPENT | {"REFUNDED"} and pid not in by_pid:
            missing.append(f"{pid} is {row['state']} in the ledger, never charged by the service")

    failures["no cap exceeded at any moment"] = cap_breaches(truth, bought, ledger, caps or Caps())
    failures["nothing unresolved at the end"] = [
        f"{pid} {row['state']} ({row['name']})"
        for pid, row in ledger.items()
        if row["state"] in UNRESOLVED
    ]
    return failures


def cap_breaches(
    truth: dict[str, Any],
    bought: list[dict[str, Any]],
    ledger: dict[str, dict[str, Any]],
    limits: Caps,
) -> list[str]:
    """Replay the service's charges and refunds in time order against every cap."""
    by_trade = {p["trade_id"]: p for p in bought}
    events: list[tuple[float, int, dict[str, Any]]] = [(p["at"], +1, p) for p in bought]
    for r in truth["refunds"]:
        if r["trade_id"] in by_trade:
            events.append((r["at"], -1, by_trade[r["trade_id"]]))
    events.sort(key=lambda e: (e[0], e[1]))
    total = 0
    per_day: dict[int, int] = defaultdict(int)
    rule_spend: dict[str, int] = defaultdict(int)
    rule_count: dict[str, int] = defaultdict(int)
    breaches: list[str] = []
    for at, sign, p in events:
        day = int(p["at"]) // 86_400
        rule = (ledger.get(p["project_id"]) or {}).get("rule", "?")
        total += sign * p["price"]
        per_day[day] += sign * p["price"]
        rule_spend[rule] += sign * p["price"]
        if sign > 0:
            rule_count[rule] += 1  # a count cap counts every purchase that went through
        if total > limits.total:
            breaches.append(f"at {at:.0f}: total {total} > cap {limits.total}")
        if per_day[day] > limits.per_day:
            breaches.append(f"at {at:.0f}: day {per_day[day]} > cap {limits.per_day}")
        caps = limits.rules.get(rule, {})
        if "max_spend" in caps and rule_spend[rule] > caps["max_spend"]:
            breaches.append(f"at {at:.0f}: rule {rule} spent {rule_spend[rule]}")
        if "max_count" in caps and rule_count[rule] > caps["max_count"]:
            breaches.append(f"at {at:.0f}: rule {rule} bought {rule_count[rule]}")
    return breaches


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    k = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[k]


def report(
    series: Series, truth: dict[str, Any], ledger: dict[str, dict[str, Any]], final: Life
) -> dict[str, Any]:
    lives = series.lives
    crashes = [life for life in lives if life.plan != "final"]
    up_market = [
        life.running_market - life.started_market
        for life in lives
        if life.running_market is not None
    ]
    up_real = [life.running_at - life.started for life in lives if life.running_at is not None]
    failures = check_ledger(truth, ledger)
    exits = Counter(str(life.exit_code) for life in lives)
    stopped_for_good = [
        f"life {life.index}: exit {life.exit_code}: {life.why}"
        for life in lives
        if life.exit_code not in (0, -signal.SIGKILL)
    ]
    failures["final run exits 0 on SIGTERM"] = (
        [] if final.exit_code == 0 else [f"exit {final.exit_code}: {final.why}"]
    )
    failures["never stops for good (no exit 3/4)"] = stopped_for_good
    p95 = percentile(up_market, 95)
    failures["able to buy within 90 s of start (p95)"] = (
        [] if p95 is not None and p95 < 90.0 else [f"p95 {p95} market s"]
    )
    account = truth["default_account"]
    charged = [p for p in truth["purchases"] if p["account"] == account]
    requests = truth["requests"]
    return {
        "backend": series.backend,
        "crashes": sum(1 for life in crashes if life.killed_at is not None),
        "killed_in_flight": sum(1 for life in crashes if life.killed_in_flight),
        "lives": len(lives),
        "exit_codes": dict(exits),
        "reached_running": f"{len(up_market)}/{len(lives)}",
        "unable_to_buy_market_s": _spread(up_market),
        "unable_to_buy_real_s": _spread(up_real),
        "purchases_charged": len(charged),
        "charged_usd": sum(p["price"] for p in charged) / CENTS,
        "refunds": sum(1 for r in truth["refunds"] if r["account"] == account),
        "ledger_rows": dict(Counter(r["state"] for r in ledger.values())),
        "faults_fired": dict(Counter(f["kind"] for f in truth["faults_fired"])),
        "search_429": requests.get("GET /v2/search-items-by-name 429", 0),
        "market_seconds": truth["now"] - series.origin,
        "wall_seconds": time.time() - series.origin,
        "failures": failures,
        "workdir": str(series.workdir),
    }


def _spread(values: list[float]) -> dict[str, float | None]:
    return {
        "n": len(values),
        "p50": _round(percentile(values, 50)),
        "p95": _round(percentile(values, 95)),
        "max": _round(max(values) if values else None),
    }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def run_torture(settings: Settings, backends: list[str]) -> list[dict[str, Any]]:
    results = []
    base = settings.workdir or Path(tempfile.mkdtemp(prefix="snipe-torture-"))
    for backend in backends:
        workdir = base / backend
        workdir.mkdir(parents=True, exist_ok=True)
        results.append(Series(settings, backend, workdir).run())
    return results


def print_report(result: dict[str, Any]) -> None:
    print(f"== torture, backend {result['backend']} ==")
    for key, value in result.items():
        if key not in ("failures", "backend"):
            print(f"  {key:24s} {value}")
    for name, problems in result["failures"].items():
        verdict = "ok" if not problems else f"FAILED ({len(problems)})"
        print(f"  [{verdict}] {name}")
        for problem in problems[:8]:
            print(f"      {problem}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--crashes", type=int, default=30, help="SIGKILLs per backend (30)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--speed", type=float, default=10.0, help="market s per real s (10)")
    parser.add_argument("--backends", default="asyncio,trio")
    parser.add_argument("--workdir", type=Path, help="keep ledgers and logs here")
    args = parser.parse_args()
    settings = Settings(
        crashes=args.crashes, seed=args.seed, speed=args.speed, workdir=args.workdir
    )
    started = time.time()
    results = run_torture(settings, args.backends.split(","))
    for result in results:
        print_report(result)
    print(f"wall time {time.time() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
