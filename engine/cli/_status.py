"""``snipe status LEDGER``: is the bot healthy, and where does it stand? One screen from the
ledger (opened read-only) and the running engine's status file (``LEDGER.status.json``):
state, uptime, spend against the caps, purchases today, the latest errors.

Exit status: 0 when the engine is running, 1 when the ledger cannot be read, 4 when the
engine is HALTED, 5 when it is not running (no status file, a stale one, or stopped): a
service monitor can act on it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from typing import Any

import anyio

from .._clock import SystemClock
from .._money import format_usd
from ..ledger import Ledger, Purchase, summarize, utc_day_start
from ..sniper._bandwidth import format_bytes
from ..sniper._statusfile import read_status_file, status_path_for

__all__ = ["register"]

EXIT_RUNNING, EXIT_HALTED, EXIT_NOT_RUNNING = 0, 4, 5
_STALE_GRACE = 10.0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "status",
        help="one-screen health and spend summary of a bot and its ledger",
        description=(
            "Show whether the bot using LEDGER runs, is HALTED or stopped, its uptime, spend"
            " against the caps, purchases today and the latest errors. Reads LEDGER"
            " (read-only) and LEDGER.status.json, which snipe run keeps up to date."
        ),
    )
    parser.add_argument("ledger", metavar="LEDGER", help="the ledger file (SQLite)")
    parser.add_argument("--json", action="store_true", help="print JSON (money in USD x 1000)")
    parser.set_defaults(handler=run)


async def _load(path: str) -> list[Purchase]:
    async with await Ledger.open(path, clock=SystemClock(), readonly=True) as ledger:
        return await ledger.purchases()


def run(args: argparse.Namespace) -> int:
    purchases = anyio.run(_load, args.ledger)
    document = read_status_file(status_path_for(args.ledger))
    now = time.time()
    report = build_report(purchases, document, now)
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        print()
    else:
        print(render(args.ledger, report, now))
    state = report["state"]
    if state == "running":
        return EXIT_RUNNING
    return EXIT_HALTED if state == "halted" else EXIT_NOT_RUNNING


def engine_state(document: dict[str, Any] | None, now: float) -> str:
    """``running``, ``starting``, ``halted``, ``stopped``, ``stale`` (the file is no longer
    being written: the process died) or ``unknown`` (no status file)."""
    if document is None:
        return "unknown"
    mode = str(document.get("mode", "unknown"))
    if mode == "stopped":
        return mode
    updated = _number(document.get("updated_at"))
    every = _number(document.get("write_every")) or 5.0
    if updated is None or now - updated > 3 * every + _STALE_GRACE:
        return "stale"
    return mode


def build_report(
    purchases: list[Purchase], document: dict[str, Any] | None, now: float
) -> dict[str, Any]:
    """What ``snipe status`` shows, as JSON values."""
    day = utc_day_start(now)
    totals = summarize(purchases)
    today = [p for p in purchases if p.created_at >= day]
    today_totals = summarize(today)
    doc = document or {}
    return {
        "state": engine_state(document, now),
        "halt_reason": doc.get("halt_reason"),
        "pid": doc.get("pid"),
        "started_at": doc.get("started_at"),
        "updated_at": doc.get("updated_at"),
        "caps": doc.get("caps"),
        "spent_total": totals.committed,
        "spent_today": today_totals.committed,
        "in_flight": totals.in_flight,
        "refunded": totals.refunded,
        "purchases_today": dict(sorted(Counter(p.state.value for p in today).items())),
        "purchases_total": len(purchases),
        "search_budget": doc.get("search_budget"),
        "rate_limited": doc.get("rate_limited"),
        "snapshot_bytes": doc.get("snapshot_bytes"),
        "notifications": doc.get("notifications"),
        "metrics_port": doc.get("metrics_port"),
        "errors": list(doc.get("errors") or [])[-5:],
        "stopped_by": doc.get("stopped_by"),
    }


def render(ledger: str, report: dict[str, Any], now: float) -> str:
    """The one-screen text form of ``report``."""
    lines = [f"snipe status: {ledger}", f"state       {_state_line(report, now)}"]
    caps = report.get("caps") or {}
    day_cap, total_cap = caps.get("per_day"), caps.get("total")
    lines.append(
        f"spend       today {_of(report['spent_today'], day_cap)} | "
        f"total {_of(report['spent_total'], total_cap)}"
    )
    lines.append(
        f"            in flight {format_usd(report['in_flight'])}, "
        f"refunded {format_usd(report['refunded'])}"
    )
    by_state = report["purchases_today"]
    listing = ", ".join(f"{k.lower()} {v}" for k, v in by_state.items()) or "none"
    lines.append(f"purchases   today: {listing} | all time {report['purchases_total']}")
    budget = report.get("search_budget")
    if budget:
        limit = budget.get("limit")
        lines.append(
            f"searches    {budget.get('used')}/{limit if limit is not None else '∞'} in the "
            f"window | 429s {report.get('rate_limited') or 0}"
        )
    downloaded = report.get("snapshot_bytes")
    if downloaded:
        parts = ", ".join(f"{g} {format_bytes(n)}" for g, n in sorted(downloaded.items()))
        lines.append(f"snapshots   {format_bytes(sum(downloaded.values()))} this run ({parts})")
    for name, stats in sorted((report.get("notifications") or {}).items()):
        lines.append(
            f"notify      {name}: sent {stats.get('sent')}, failed {stats.get('failed')}, "
            f"dropped {stats.get('dropped')}"
        )
    if report.get("metrics_port"):
        lines.append(f"metrics     port {report['metrics_port']} (/metrics, /healthz)")
    errors = report["errors"]
    lines.append("last errors " + ("none" if not errors else f"({len(errors)}, newest last)"))
    lines.extend(f"  - {e[:200]}" for e in errors)
    return "\n".join(lines)


def _state_line(report: dict[str, Any], now: float) -> str:
    state = report["state"]
    updated = _number(report.get("updated_at"))
    started = _number(report.get("started_at"))
    if state == "unknown":
        return "not running (no status file: snipe run writes LEDGER.status.json)"
    why = f"; {report['stopped_by']}" if report.get("stopped_by") else ""
    if state == "stale":
        ago = _ago(now - (updated or 0))
        return f"not running? the status file was last written {ago} ago{why}"
    text = state.upper() if state == "halted" else state
    if state == "halted" and report.get("halt_reason"):
        text += f": {report['halt_reason']}"
    if state == "stopped":
        return f"{text} ({_ago(now - (updated or 0))} ago){why}"
    if started is not None:
        text += f", up {_ago(now - started)}"
    return f"{text} (pid {report.get('pid')})"


def _of(amount: int, cap: int | None) -> str:
    if not cap:
        return f"{format_usd(amount)} (cap unknown)"
    return f"{format_usd(amount)} of {format_usd(cap)} ({amount * 100 // cap}%)"


def _ago(seconds: float) -> str:
    seconds = max(0, int(seconds))
    days, rest = divmod(seconds, 86_400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h {minutes}m"
    if hours:
        return f"{hours}h {minutes}m"
    return f"{minutes}m {secs}s" if minutes else f"{secs}s"


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
