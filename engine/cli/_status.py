"""``snipe status LEDGER``: is the bot healthy, and where does it stand? One screen from the
ledger (opened read-only) and the running engine's status file (``LEDGER.status.json``):
state, uptime, spend against the caps, purchases today, the latest errors.

Exit status: 0 when the engine is running, 2 when the ledger cannot be read (bad input), 4 when the
engine is HALTED, 5 when it is not running (no status file, a stale one, or stopped): a
service monitor can act on it.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Sequence
from typing import Any

import anyio

from .._clock import Clock, SystemClock
from .._errors import ConfigError, LedgerError
from .._money import format_usd
from ..ledger import BuyOrderRecord, Ledger, Purchase, is_overdue, summarize, utc_day_start
from ..sniper import format_bytes, read_status_file, status_file_problem, status_path_for

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


async def _load(path: str) -> tuple[list[Purchase], list[BuyOrderRecord]]:
    try:
        async with await Ledger.open(path, clock=SystemClock(), readonly=True) as ledger:
            return await ledger.purchases(), await ledger.orders()
    except LedgerError as exc:
        # the file named on the command line is missing, foreign or corrupt: bad input
        raise ConfigError(str(exc)) from None


def run(args: argparse.Namespace, *, clock: Clock | None = None) -> int:
    """``clock`` decides what "today" is and whether the status file is stale (the
    system clock unless a test injects one)."""
    purchases, orders = anyio.run(_load, args.ledger)
    document = read_status_file(status_path_for(args.ledger))
    now = (clock or SystemClock()).now()
    report = build_report(purchases, document, now, orders=orders)
    if document is None:
        report["status_file_error"] = status_file_problem(status_path_for(args.ledger))
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
    purchases: list[Purchase],
    document: dict[str, Any] | None,
    now: float,
    *,
    orders: Sequence[BuyOrderRecord] = (),
) -> dict[str, Any]:
    """What ``snipe status`` shows, as JSON values. ``spent_*`` are purchases (spent and
    in flight); ``order_exposure`` is what live buy orders may still buy; ``counted_*``
    is their sum, what the caps count."""
    day = utc_day_start(now)
    totals = summarize(purchases)
    today = [p for p in purchases if p.created_at >= day]
    today_totals = summarize(today)
    exposure = sum(o.exposure for o in orders)
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
        "order_exposure": exposure,
        "counted_total": totals.committed + exposure,
        "counted_today": today_totals.committed + exposure,
        "buy_orders": len(orders),
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
        "set_aside": [x for x in doc.get("set_aside") or [] if isinstance(x, dict)],
        "stopped_by": doc.get("stopped_by"),
        "overdue": _overdue(purchases, doc, now),
        "waiting": doc.get("waiting"),
        "start_attempts": doc.get("start_attempts"),
        "feed": doc.get("feed") if isinstance(doc.get("feed"), dict) else None,
        "paper": doc.get("paper") if isinstance(doc.get("paper"), dict) else None,
    }


def _overdue(purchases: list[Purchase], doc: dict[str, Any], now: float) -> int:
    """Open trades past ``send_until`` that the service still calls open: what the running
    engine last saw, or what the ledger knows when it is not running."""
    seen = doc.get("overdue")
    known = sum(1 for p in purchases if is_overdue(p, now))
    return max(known, seen if isinstance(seen, int) else 0)


def render(ledger: str, report: dict[str, Any], now: float) -> str:
    """The one-screen text form of ``report``."""
    lines = [f"snipe status: {ledger}", f"state       {_state_line(report, now)}"]
    paper = report.get("paper")
    if paper:
        lines.append(f"PAPER       {_paper_line(paper)}")
    caps = report.get("caps") or {}
    day_cap, total_cap = caps.get("per_day"), caps.get("total")
    exposure = report.get("order_exposure") or 0
    lines.append(
        f"spend       today {_of(report['spent_today'] + exposure, day_cap)} | "
        f"total {_of(report['spent_total'] + exposure, total_cap)}"
    )
    held = (
        f"buy-order exposure {format_usd(exposure)} included above"
        f" ({report.get('buy_orders') or 0} live order(s))"
        if exposure
        else "no buy-order exposure"
    )
    lines.append(
        f"            in flight {format_usd(report['in_flight'])}, "
        f"refunded {format_usd(report['refunded'])}, {held}"
    )
    if report.get("overdue"):
        lines.append(
            f"overdue     {report['overdue']} trade(s) past send_until that the service still"
            " calls open (counted as spent, not refunded until the service says so)"
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
    feed = report.get("feed")
    if feed:
        lines.append(f"feed        {_feed_line(feed)}")
    for name, stats in sorted((report.get("notifications") or {}).items()):
        lines.append(
            f"notify      {name}: sent {stats.get('sent')}, failed {stats.get('failed')}, "
            f"dropped {stats.get('dropped')}"
        )
    if report.get("metrics_port"):
        lines.append(f"metrics     port {report['metrics_port']} (/metrics, /healthz)")
    lines.extend(_set_aside_lines(report.get("set_aside") or []))
    errors = report["errors"]
    lines.append("last errors " + ("none" if not errors else f"({len(errors)}, newest last)"))
    lines.extend(f"  - {e[:200]}" for e in errors)
    return "\n".join(lines)


def _paper_line(paper: dict[str, Any]) -> str:
    """A paper run as the running engine last wrote it: nothing is bought; its verdicts
    and wallet (values read leniently: a file from another version still shows)."""
    told = paper.get("judged")
    judged: dict[str, Any] = told if isinstance(told, dict) else {}
    missed = sum(int(v) for k, v in judged.items() if k != "bought" and isinstance(v, int))
    words = (
        f"nothing is bought: {paper.get('pending', 0)} pending, {judged.get('bought', 0)}"
        f" bought on paper, {missed} missed this run"
    )
    start, left = paper.get("wallet_start"), paper.get("wallet_left")
    if isinstance(start, int) and isinstance(left, int):
        words += f", wallet {format_usd(left)} of {format_usd(start)}"
    return words


def _feed_line(feed: dict[str, Any]) -> str:
    """The live listing feed as the running engine last wrote it (values read leniently:
    the file is another process's)."""
    rate = _number(feed.get("events_per_second"))
    since = _number(feed.get("seconds_since_event"))
    per_day = _number(feed.get("bytes_per_day"))
    parts = [
        str(feed.get("state") or "?"),
        f"{rate:.1f} events/s" if rate is not None else "no rate yet",
        f"last event {_ago(since)} ago" if since is not None else "no event yet",
        f"{feed.get('reconnects', 0)} reconnect(s)",
        f"{feed.get('gaps_healed', 0)} gap(s) healed",
        *([f"{feed['errors']} error(s) retried"] if _number(feed.get("errors")) else []),
        f"{feed.get('missed', 0)} missed by the audit" + _missed_tiers(feed),
    ]
    if per_day is not None:
        parts.append(f"{format_bytes(int(per_day))}/day")
    return " | ".join(parts)


def _missed_tiers(feed: dict[str, Any]) -> str:
    """`` (full 1, cheap 2; 40 cheap audits, 3 suspects)``: which audit tier found them
    (absent from a status file written before the tiers)."""
    if "audits_cheap" not in feed:
        return ""
    return (
        f" (full {feed.get('missed_full', 0)}, cheap {feed.get('missed_cheap', 0)}; "
        f"{feed.get('audits_full', 0)} full and {feed.get('audits_cheap', 0)} cheap "
        f"audits, {feed.get('suspects', 0)} suspect(s) searched)"
    )


def _set_aside_lines(kinds: list[dict[str, Any]]) -> list[str]:
    """Unreadable items of the service's answers that were left out (the rest was used)."""
    if not kinds:
        return []
    total = sum(int(k.get("count") or 0) for k in kinds)
    lines = [f"set aside   {total} unreadable item(s) in answers, the rest used:"]
    for kind in kinds:
        lines.append(
            f"  - {kind.get('count')} x {kind.get('endpoint')} field {kind.get('field')}"
            f"; latest: {str(kind.get('example') or '')[:160]}"
        )
    return lines


def _state_line(report: dict[str, Any], now: float) -> str:
    state = report["state"]
    updated = _number(report.get("updated_at"))
    started = _number(report.get("started_at"))
    if state == "unknown" and report.get("status_file_error"):
        return f"unknown: the status file {report['status_file_error']}"
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
    if state == "starting" and report.get("waiting"):
        text += f", waiting (attempt {report.get('start_attempts')}): {report['waiting']}"
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
