"""The backtest report: a summary (JSON), Markdown and HTML that embed a PNG chart, the
canonical ledger, and a fingerprint of both.

The fingerprint is the SHA-256 of the canonical ledger lines and the canonical summary
(sorted keys, no wall-clock figures), so the same recording, rules and seed print the same
fingerprint on every run and every machine. The PNG is not part of it (font rendering may
differ between machines); it needs the optional ``matplotlib`` (``pip install
'snipe[report]'``), and without it the report says so and goes on.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .._money import format_usd
from ..ledger import PurchaseState
from ._run import BacktestRun

__all__ = ["Report", "build_report", "write_report"]

REPORT_VERSION = 1
_HELD = {PurchaseState.BOUGHT.value, PurchaseState.RESERVED.value, PurchaseState.COMPLETED.value}


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


class Report:
    """A finished report: ``summary`` (JSON-ready), ``ledger_lines`` and ``fingerprint``."""

    def __init__(self, summary: dict[str, Any], ledger_lines: list[bytes]) -> None:
        digest = hashlib.sha256()
        for line in ledger_lines:
            digest.update(line + b"\n")
        digest.update(_canonical(summary))
        self.fingerprint = digest.hexdigest()
        self.summary = {**summary, "fingerprint": self.fingerprint}
        self.ledger_lines = ledger_lines

    def to_json(self) -> str:
        return json.dumps(self.summary, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def build_report(run: BacktestRun) -> Report:
    """The report of one backtest run (pure: no files, no clock)."""
    rows = [_purchase_row(run, p) for p in run.purchases]
    held = [r for r in rows if r["state"] in _HELD]
    spend = sum(r["charged"] for r in held)
    value_reference = sum(r["reference"] or 0 for r in held)
    value_later = sum(r["later"] for r in held)
    unseen_by_rule = _unseen_by_rule(run)
    rules: dict[str, dict[str, Any]] = {}
    for rule in run.ruleset.rules:
        mine = [r for r in held if r["rule"] == rule.name]
        rule_spend = sum(r["charged"] for r in mine)
        rule_later = sum(r["later"] for r in mine)
        rules[rule.name] = {
            "purchases": len(mine),
            "attempts": sum(1 for r in rows if r["rule"] == rule.name),
            "spend": rule_spend,
            "value_reference": sum(r["reference"] or 0 for r in mine),
            "value_later": rule_later,
            "realised_margin": rule_later - rule_spend,
            "missed_budget": run.missed_budget.get(rule.name, 0),
            "missed_search_limit": unseen_by_rule.get(rule.name, 0),
        }
    attempts = len(rows)
    options = run.options
    summary: dict[str, Any] = {
        "report": "snipe-backtest",
        "version": REPORT_VERSION,
        "recording": {
            "start": _iso(run.start),
            "end": _iso(run.end),
            "hours": round((run.end - run.start) / 3600, 3),
            "records": run.records_replayed,
            "listing_events": run.events_replayed,
        },
        "settings": {
            "seed": options.seed,
            "latency_ms": round(options.latency * 1000, 3),
            "value_after_hours": round(options.value_after / 3600, 3),
        },
        "totals": {
            "purchases": len(held),
            "attempts": attempts,
            "refunded": sum(1 for r in rows if r["state"] == PurchaseState.REFUNDED.value),
            "spend": spend,
            "value_reference": value_reference,
            "value_later": value_later,
            "realised_margin": value_later - spend,
            "hit_rate": round(len(held) / attempts, 4) if attempts else None,
            "searches": run.searches,
            "snapshots": run.snapshots,
            "halted": run.halt_reason,
        },
        "missed": {
            "budget": sum(run.missed_budget.values()),
            "search_limit": sum(unseen_by_rule.values()),
            "lost_race": run.refusals.get("lost race", 0),
            "gone_before_arrival": run.refusals.get("gone", 0),
            "price_changed": run.refusals.get("price changed", 0),
        },
        "rules": rules,
        "purchases": rows,
        "references": reference_margins(run, held),
    }
    lines = [_canonical({"purchase": p}) for p in run.purchases]
    lines += [_canonical({"event": e}) for e in run.events]
    return Report(summary, lines)


def _purchase_row(run: BacktestRun, purchase: dict[str, Any]) -> dict[str, Any]:
    trade = run.trades.get(purchase["project_id"])
    charged = purchase["charged_price"] if purchase["charged_price"] is not None else 0
    reference = trade.reference if trade is not None else None
    later = trade.later_price if trade is not None else None
    return {
        "at": _iso(purchase["created_at"]),
        "t": purchase["created_at"],
        "project_id": purchase["project_id"],
        "name": purchase["name"],
        "rule": purchase["rule"],
        "state": purchase["state"],
        "charged": charged,
        "reference": reference,
        # No listing of the name left then: valued at its reference price.
        "later": later if later is not None else (reference or charged),
        "later_at_end": bool(trade is not None and trade.later_past_end),
        "reason": purchase["reason"],
    }


def reference_margins(run: BacktestRun, held: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per reference source: the purchases it priced, what they cost, what the reference
    said they were worth at the end of the replay, and the margin. ``platform_price`` is
    the listing's own at purchase; ``market later`` the cheapest listing ``value_after``
    later (the totals' measure)."""
    sums: dict[str, list[int]] = {}

    def add(source: str, paid: int, worth: int | None) -> None:
        if worth:
            entry = sums.setdefault(source, [0, 0, 0])
            entry[0] += 1
            entry[1] += paid
            entry[2] += worth

    for row in held:
        paid = row["charged"]
        add("platform_price", paid, row["reference"])
        add("market later", paid, row["later"])
        for source, worth in sorted(run.references_later.get(row["project_id"], {}).items()):
            add(source, paid, worth)
    return {
        source: {
            "purchases": n,
            "paid": paid,
            "worth": worth,
            "margin": worth - paid,
            "margin_percent": round((worth - paid) * 100 / paid, 2) if paid else None,
        }
        for source, (n, paid, worth) in sorted(sums.items())
    }


def _unseen_by_rule(run: BacktestRun) -> dict[str, int]:
    counts: dict[str, int] = {}
    for name, count in sorted(run.unseen_by_name.items()):
        rules = run.ruleset.view(name).rules
        if rules:
            counts[rules[0].name] = counts.get(rules[0].name, 0) + count
    return counts


# -- files ---------------------------------------------------------------------------------


def write_report(report: Report, directory: str | Path) -> list[Path]:
    """Write report.json, ledger.jsonl, report.md, report.html and chart.png (when
    matplotlib is installed) into ``directory``; returns the paths written."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    (out / "report.json").write_text(report.to_json(), encoding="utf-8")
    (out / "ledger.jsonl").write_bytes(b"".join(line + b"\n" for line in report.ledger_lines))
    written += [out / "report.json", out / "ledger.jsonl"]
    png = render_chart(report.summary)
    if png is not None:
        (out / "chart.png").write_bytes(png)
        written.append(out / "chart.png")
    (out / "report.md").write_text(markdown(report.summary, chart=png is not None), "utf-8")
    (out / "report.html").write_text(html_page(report.summary, png), encoding="utf-8")
    written += [out / "report.md", out / "report.html"]
    return written


def render_chart(summary: dict[str, Any]) -> bytes | None:
    """The chart as PNG bytes: cumulative spend and value over time, and per-rule results;
    ``None`` without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    import io

    rows = [r for r in summary["purchases"] if r["state"] in _HELD]
    start = datetime.fromisoformat(summary["recording"]["start"].replace("Z", "+00:00"))
    hours = [(r["t"] - start.timestamp()) / 3600 for r in rows]
    spend, reference, later = [0.0], [0.0], [0.0]
    for r in rows:
        spend.append(spend[-1] + r["charged"] / 1000)
        reference.append(reference[-1] + (r["reference"] or 0) / 1000)
        later.append(later[-1] + r["later"] / 1000)
    x = [0.0, *hours, summary["recording"]["hours"]]
    for series in (spend, reference, later):
        series.append(series[-1])
    figure, (top, bottom) = plt.subplots(2, 1, figsize=(9, 7), dpi=100)
    top.step(x, spend, where="post", label="spend")
    top.step(x, reference, where="post", label="value at reference price")
    top.step(x, later, where="post", label="value at market price later")
    top.set_xlabel("hours since the start of the recording")
    top.set_ylabel("USD (cumulative)")
    top.set_title(f"snipe backtest {summary['fingerprint'][:12]}")
    top.legend(loc="upper left")
    names = list(summary["rules"])
    margins = [summary["rules"][n]["realised_margin"] / 1000 for n in names]
    spends = [summary["rules"][n]["spend"] / 1000 for n in names]
    positions = range(len(names))
    bottom.bar([p - 0.2 for p in positions], spends, width=0.4, label="spend")
    bottom.bar([p + 0.2 for p in positions], margins, width=0.4, label="realised margin")
    bottom.set_xticks(list(positions), names, rotation=20, ha="right", fontsize=8)
    bottom.set_ylabel("USD")
    bottom.axhline(0, color="black", linewidth=0.5)
    bottom.legend(loc="upper right")
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", metadata={"Software": None})
    plt.close(figure)
    return buffer.getvalue()


def _usd(value: int | None) -> str:
    return "-" if value is None else format_usd(value)


def markdown(summary: dict[str, Any], *, chart: bool) -> str:
    """The report as Markdown (links chart.png when there is one)."""
    totals, missed, rec = summary["totals"], summary["missed"], summary["recording"]
    hit = "-" if totals["hit_rate"] is None else f"{totals['hit_rate'] * 100:.1f}%"
    lines = [
        "# snipe backtest",
        "",
        f"Recording {rec['start']} to {rec['end']} ({rec['hours']} h, "
        f"{rec['listing_events']} listing events); seed {summary['settings']['seed']}, "
        f"latency {summary['settings']['latency_ms']} ms.",
        "",
        f"Fingerprint: `{summary['fingerprint']}`",
        "",
        "| | |",
        "|---|---|",
        f"| purchases | {totals['purchases']} of {totals['attempts']} attempts (hit rate {hit}) |",
        f"| refunded | {totals['refunded']} |",
        f"| spend | {_usd(totals['spend'])} |",
        f"| value at reference price | {_usd(totals['value_reference'])} |",
        f"| value at market price {summary['settings']['value_after_hours']} h later | "
        f"{_usd(totals['value_later'])} |",
        f"| realised margin | {_usd(totals['realised_margin'])} |",
        f"| missed: budget | {missed['budget']} |",
        f"| missed: search limit (gone before any search saw them) | {missed['search_limit']} |",
        f"| missed: lost race to another buyer | {missed['lost_race']} |",
        f"| missed: gone before our request arrived | {missed['gone_before_arrival']} |",
        "",
    ]
    if totals["halted"]:
        lines += [f"**The engine halted during the replay:** {totals['halted']}", ""]
    if chart:
        lines += ["![cumulative spend and value; per-rule results](chart.png)", ""]
    lines += [
        "## Per rule",
        "",
        "| rule | bought | attempts | spend | value later | margin | missed: budget |"
        " missed: search limit |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, r in summary["rules"].items():
        lines.append(
            f"| {name} | {r['purchases']} | {r['attempts']} | {_usd(r['spend'])} | "
            f"{_usd(r['value_later'])} | {_usd(r['realised_margin'])} | {r['missed_budget']} | "
            f"{r['missed_search_limit']} |"
        )
    lines += _reference_lines(summary)
    lines += ["", "## Purchases", "", "| at | name | rule | state | paid | reference | later |"]
    lines.append("|---|---|---|---|---|---|---|")
    for p in summary["purchases"]:
        end = " (end)" if p["later_at_end"] else ""
        lines.append(
            f"| {p['at']} | {p['name']} | {p['rule']} | {p['state']} | {_usd(p['charged'])} | "
            f"{_usd(p['reference'])} | {_usd(p['later'])}{end} |"
        )
    return "\n".join(lines) + "\n"


def _reference_lines(summary: dict[str, Any]) -> list[str]:
    references = summary.get("references") or {}
    if not references:
        return []
    lines = [
        "",
        "## Margin against each reference",
        "",
        "What each reference said the purchases were worth: `platform_price` at purchase, "
        "`market later` the cheapest listing later, the others at the end of the recording.",
        "",
        "| reference | purchases priced | paid | worth | margin | margin % |",
        "|---|---|---|---|---|---|",
    ]
    for source, r in references.items():
        percent = "-" if r["margin_percent"] is None else f"{r['margin_percent']:.2f}%"
        lines.append(
            f"| {source} | {r['purchases']} | {_usd(r['paid'])} | {_usd(r['worth'])} | "
            f"{_usd(r['margin'])} | {percent} |"
        )
    return lines


def html_page(summary: dict[str, Any], png: bytes | None) -> str:
    """The report as one self-contained HTML page (the chart embedded)."""
    body = html.escape(markdown(summary, chart=False))
    image = ""
    if png is not None:
        data = base64.b64encode(png).decode()
        image = f'<img alt="chart" src="data:image/png;base64,{data}">'
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>snipe backtest</title>"
        "</head><body>" + image + "<pre>" + body + "</pre></body></html>\n"
    )
