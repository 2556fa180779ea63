"""The backtest report: a summary (JSON), Markdown and HTML that embed a PNG chart, the
canonical ledger, and a fingerprint of both.

The fingerprint is the SHA-256 of the canonical ledger lines and the canonical summary
(sorted keys, no wall-clock figures), so the same recording, rules and seed print the same
fingerprint on every run and every machine. Which source first showed the engine each
purchase (``seen_first``, per purchase and counted in the totals) is an observation of the
replay, not a decision: it is reported but left out of the fingerprint, so that reports
of recordings made before it existed keep theirs. The PNG is not part of it (font rendering may
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
from ._market import SOURCES
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
        digest.update(_canonical(_fingerprinted(summary)))
        self.fingerprint = digest.hexdigest()
        self.summary = {**summary, "fingerprint": self.fingerprint}
        self.ledger_lines = ledger_lines

    def to_json(self) -> str:
        return json.dumps(self.summary, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _fingerprinted(summary: dict[str, Any]) -> dict[str, Any]:
    """``summary`` without what the fingerprint leaves out (see the module docstring)."""
    out = dict(summary)
    if "totals" in out:
        out["totals"] = {k: v for k, v in out["totals"].items() if k != "seen_first"}
    if "recording" in out:
        out["recording"] = {k: v for k, v in out["recording"].items() if k != "feed_events"}
    if "purchases" in out:
        out["purchases"] = [
            {k: v for k, v in row.items() if k != "seen_first"} for row in out["purchases"]
        ]
    return out


def seen_first_counts(rows: list[dict[str, Any]]) -> dict[str, int]:
    """How many of ``rows`` each source showed the engine first (every source named)."""
    counts = dict.fromkeys((*SOURCES, "unknown"), 0)
    for row in rows:
        counts[row.get("seen_first", "unknown")] += 1
    if not counts["unknown"]:
        del counts["unknown"]
    return counts


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
            "feed_events": run.feed_events,
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
            "seen_first": seen_first_counts(held),
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
    if not held:  # only then: a report that bought something keeps its fingerprint
        summary["nothing_bought"] = why_nothing_bought(run, attempts)
    if run.portfolio is not None:
        summary["portfolio"] = run.portfolio.to_json()
    if run.feed is not None:  # only then: a replay without a feed keeps its fingerprint
        summary["feed"] = dict(run.feed)
    lines = [_canonical({"purchase": p}) for p in run.purchases]
    lines += [_canonical({"event": e}) for e in run.events]
    return Report(summary, lines)


_TOP_SKIPS = 3


def why_nothing_bought(run: BacktestRun, attempts: int) -> list[str]:
    """Why a replay bought nothing, in a few lines a newcomer can act on: no listing of a
    watched name, or each rule's most frequent reasons for turning listings down."""
    lines: list[str] = []
    if run.halt_reason:
        lines.append(f"the engine halted: {run.halt_reason}")
    if attempts:
        lines.append(
            f"{attempts} purchase attempt(s), none went through (see 'missed': lost races,"
            " listings gone before the request arrived, prices changed)"
        )
    if not run.listings_seen:
        lines.append(
            f"no listing of a name the rules watch was seen ({run.searches} searches,"
            f" {run.snapshots} snapshots): the recording may be too short, or the rules name"
            " items this market does not list"
        )
    for rule in run.ruleset.rules:
        reasons = list((run.skips.get(rule.name) or {}).items())[:_TOP_SKIPS]
        if not reasons:
            if run.listings_seen:
                lines.append(f"rule {rule.name!r}: no listing of its names was seen")
            continue
        said = "; ".join(f"{count:,} times, e.g. {reason}" for reason, count in reasons)
        lines.append(f"rule {rule.name!r} turned listings down: {said}")
    return lines


def _purchase_row(run: BacktestRun, purchase: dict[str, Any]) -> dict[str, Any]:
    trade = run.trades.get(purchase["project_id"])
    charged = purchase["charged_price"] if purchase["charged_price"] is not None else 0
    reference = trade.reference if trade is not None else None
    later = trade.later_price if trade is not None else None
    at_end = bool(trade is not None and trade.later_past_end)
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
        "later_at_end": at_end,
        # the horizon really measured: the end of the recording when it comes sooner
        "later_hours": round(
            ((run.end - purchase["created_at"]) if at_end else run.options.value_after) / 3600, 3
        ),
        "reason": purchase["reason"],
        "seen_first": run.seen_first.get(str(purchase["item_id"]), "unknown"),
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
    ``None`` without matplotlib, or when nothing was bought (nothing to draw)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    import io

    rows = [r for r in summary["purchases"] if r["state"] in _HELD]
    if not rows:  # flat lines on made-up axes say nothing: the report says why instead
        return None
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
    figure, (top, bottom) = plt.subplots(2, 1, figsize=(10, 8), dpi=100)
    top.step(x, spend, where="post", label="spent")
    top.step(x, reference, where="post", label="value at the reference price")
    top.step(x, later, where="post", label=f"value at the market price {_later_short(summary)}")
    top.set_xlabel("hours since the start of the recording")
    top.set_ylabel("USD (cumulative)")
    top.set_title("Backtest: cumulative spend and value of the purchases")
    # below the axes, so no line is ever hidden behind it
    top.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=3, fontsize=8, frameon=False)
    names = list(summary["rules"])
    margins = [summary["rules"][n]["realised_margin"] / 1000 for n in names]
    spends = [summary["rules"][n]["spend"] / 1000 for n in names]
    positions = range(len(names))
    bottom.bar([p - 0.2 for p in positions], spends, width=0.4, label="spent")
    bottom.bar([p + 0.2 for p in positions], margins, width=0.4, label="realised margin")
    bottom.set_xticks(list(positions), names, rotation=20, ha="right", fontsize=8)
    bottom.set_ylabel("USD")
    bottom.set_title("Per rule: spent and realised margin")
    bottom.axhline(0, color="black", linewidth=0.5)
    bottom.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0, fontsize=8)
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", metadata={"Software": None})
    plt.close(figure)
    return buffer.getvalue()


def _usd(value: int | None) -> str:
    return "-" if value is None else format_usd(value)


def later_label(summary: dict[str, Any]) -> str:
    """When "later" is, as measured: the horizon asked for, or the end of the recording
    for purchases it came sooner for."""
    asked = summary["settings"]["value_after_hours"]
    held = [p for p in summary["purchases"] if p["state"] in _HELD]
    short = [p["later_hours"] for p in held if p["later_at_end"]]
    if not short:
        return f"{asked:g} h later"
    span = f"{min(short):g}" if min(short) == max(short) else f"{min(short):g}-{max(short):g}"
    if len(short) == len(held):
        return f"at the end of the recording ({span} h after the purchases; {asked:g} h asked)"
    return (
        f"{asked:g} h later, or at the end of the recording for {len(short)} of "
        f"{len(held)} purchases ({span} h after them)"
    )


def _later_short(summary: dict[str, Any]) -> str:
    """The chart's short form of :func:`later_label`."""
    asked = summary["settings"]["value_after_hours"]
    ends = [p["later_at_end"] for p in summary["purchases"] if p["state"] in _HELD]
    if ends and all(ends):
        return "at the end of the recording"
    return f"{asked:g} h later" + (" (or at the recording's end)" if any(ends) else "")


def _cell(value: Any) -> str:
    """A Markdown table cell: a `|` would end the cell, a line break the row."""
    return str(value).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def _row(*cells: Any) -> str:
    return "| " + " | ".join(_cell(c) for c in cells) + " |"


def _totals_rows(summary: dict[str, Any]) -> list[tuple[str, str]]:
    totals, missed = summary["totals"], summary["missed"]
    hit = "-" if totals["hit_rate"] is None else f"{totals['hit_rate'] * 100:.1f}%"
    return [
        ("purchases", f"{totals['purchases']} of {totals['attempts']} attempts (hit rate {hit})"),
        ("refunded", str(totals["refunded"])),
        ("spend", _usd(totals["spend"])),
        ("value at reference price", _usd(totals["value_reference"])),
        (f"value at market price {later_label(summary)}", _usd(totals["value_later"])),
        ("realised margin", _usd(totals["realised_margin"])),
        ("missed: budget", str(missed["budget"])),
        ("missed: search limit (gone before any search saw them)", str(missed["search_limit"])),
        ("missed: lost race to another buyer", str(missed["lost_race"])),
        ("missed: gone before our request arrived", str(missed["gone_before_arrival"])),
        ("seen first by (purchases)", seen_first_text(totals)),
        *([("live feed", feed_text(summary["feed"]))] if "feed" in summary else []),
    ]


def feed_text(feed: dict[str, int]) -> str:
    """The replayed feed's use in a line: connections, heals, the audit, purchases."""
    return (
        f"{feed['connections']} connection(s), {feed['gaps_healed']} gap(s) healed, "
        f"{feed['missed']} listing(s) missed (found by the audit), {feed['bought']} bought "
        f"on an event, {feed['confirm_searches']} confirming search(es)"
    )


def seen_first_text(totals: dict[str, Any]) -> str:
    """``feed 2, snapshot 1, catalogue 0, search 0``: which source saw the purchases first."""
    counts = totals.get("seen_first") or {}
    return ", ".join(f"{source} {n}" for source, n in counts.items())


_RULE_HEADERS = (
    "rule",
    "bought",
    "attempts",
    "spend",
    "value later",
    "margin",
    "missed: budget",
    "missed: search limit",
)
_PURCHASE_HEADERS = ("at", "name", "rule", "state", "paid", "reference", "later", "seen first")


def _rule_rows(summary: dict[str, Any]) -> list[tuple[str, ...]]:
    return [
        (
            name,
            str(r["purchases"]),
            str(r["attempts"]),
            _usd(r["spend"]),
            _usd(r["value_later"]),
            _usd(r["realised_margin"]),
            str(r["missed_budget"]),
            str(r["missed_search_limit"]),
        )
        for name, r in summary["rules"].items()
    ]


def _purchase_rows(summary: dict[str, Any]) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for p in summary["purchases"]:
        end = f" (end of recording, {p['later_hours']:g} h)" if p["later_at_end"] else ""
        rows.append(
            (
                p["at"],
                p["name"],
                p["rule"],
                p["state"],
                _usd(p["charged"]),
                _usd(p["reference"]),
                _usd(p["later"]) + end,
                p.get("seen_first", "unknown"),
            )
        )
    return rows


def _intro(summary: dict[str, Any]) -> str:
    rec, settings = summary["recording"], summary["settings"]
    return (
        f"Recording {rec['start']} to {rec['end']} ({rec['hours']} h, "
        f"{rec['listing_events']} listing events); seed {settings['seed']}, "
        f"latency {settings['latency_ms']} ms."
    )


def markdown(summary: dict[str, Any], *, chart: bool) -> str:
    """The report as Markdown (links chart.png when there is one)."""
    totals = summary["totals"]
    lines = ["# snipe backtest", "", _intro(summary), ""]
    lines += [f"Fingerprint: `{summary['fingerprint']}`", "", "| | |", "|---|---|"]
    lines += [_row(k, v) for k, v in _totals_rows(summary)]
    lines.append("")
    if totals["halted"]:
        lines += [f"**The engine halted during the replay:** {totals['halted']}", ""]
    why = summary.get("nothing_bought")
    if why is not None:
        lines += ["## Nothing was bought", "", *(f"- {_cell(line)}" for line in why), ""]
    if chart:
        lines += ["![cumulative spend and value; per-rule results](chart.png)", ""]
    lines += ["## Per rule", "", _row(*_RULE_HEADERS), "|" + "---|" * len(_RULE_HEADERS)]
    lines += [_row(*r) for r in _rule_rows(summary)]
    references = _reference_rows(summary)
    if references:
        lines += ["", "## Margin against each reference", "", _REFERENCES_INTRO, ""]
        lines += [_row(*_REFERENCE_HEADERS), "|" + "---|" * len(_REFERENCE_HEADERS)]
        lines += [_row(*r) for r in references]
    portfolio = _portfolio_rows(summary)
    if portfolio:
        lines += ["", "## Portfolio at the end", "", _portfolio_intro(summary), ""]
        lines += [_row(*_PORTFOLIO_HEADERS), "|" + "---|" * len(_PORTFOLIO_HEADERS)]
        lines += [_row(*r) for r in portfolio]
        lines += [""] + [f"- {note}" for note in summary["portfolio"]["notes"]]
    lines += ["", "## Purchases", "", _row(*_PURCHASE_HEADERS)]
    lines.append("|" + "---|" * len(_PURCHASE_HEADERS))
    lines += [_row(*r) for r in _purchase_rows(summary)]
    return "\n".join(lines) + "\n"


_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>snipe backtest {fingerprint}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em auto; max-width: 72em; }}
table {{ border-collapse: collapse; margin: 1em 0; }}
th, td {{ border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; }}
td.n {{ text-align: right; font-variant-numeric: tabular-nums; }}
img {{ max-width: 100%; }}
</style></head>
<body>
<h1>snipe backtest</h1>
<p>{intro}</p>
<p>Fingerprint: <code>{fingerprint}</code></p>
{halted}<table>{totals}</table>
{nothing}{chart}
<h2>Per rule</h2>
<table>{rules}</table>
{references}{portfolio}<h2>Purchases</h2>
<table>{purchases}</table>
</body></html>
"""


def _html_table(headers: tuple[str, ...] | None, rows: list[tuple[str, ...]]) -> str:
    out = []
    if headers:
        out.append("<tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in headers) + "</tr>")
    for row in rows:
        cells = []
        for i, cell in enumerate(row):
            numeric = i > 0 and (cell[:1] in "$-" or cell[:1].isdigit())
            cls = ' class="n"' if numeric else ""
            cells.append(f"<td{cls}>{html.escape(cell)}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    return "\n".join(out)


_REFERENCES_INTRO = (
    "What each reference said the purchases were worth: `platform_price` at purchase, "
    "`market later` the cheapest listing later, the others at the end of the recording."
)
_REFERENCE_HEADERS = ("reference", "purchases priced", "paid", "worth", "margin", "margin %")


def _reference_rows(summary: dict[str, Any]) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for source, r in (summary.get("references") or {}).items():
        percent = "-" if r["margin_percent"] is None else f"{r['margin_percent']:.2f}%"
        rows.append(
            (
                source,
                str(r["purchases"]),
                _usd(r["paid"]),
                _usd(r["worth"]),
                _usd(r["margin"]),
                percent,
            )
        )
    return rows


def _nothing_html(why: list[str] | None) -> str:
    if why is None:
        return ""
    items = "".join(f"<li>{html.escape(line)}</li>" for line in why)
    return f"<h2>Nothing was bought</h2>\n<ul>{items}</ul>\n"


def html_page(summary: dict[str, Any], png: bytes | None) -> str:
    """The report as one self-contained HTML page: real tables, the chart embedded."""
    chart = ""
    if png is not None:
        data = base64.b64encode(png).decode()
        chart = (
            '<img alt="cumulative spend and value; per-rule results" '
            f'src="data:image/png;base64,{data}">'
        )
    halted = summary["totals"]["halted"]
    return _PAGE.format(
        fingerprint=html.escape(summary["fingerprint"]),
        intro=html.escape(_intro(summary)),
        halted=(
            f"<p><strong>The engine halted during the replay:</strong> {html.escape(halted)}</p>\n"
            if halted
            else ""
        ),
        totals=_html_table(None, [(k, v) for k, v in _totals_rows(summary)]),
        nothing=_nothing_html(summary.get("nothing_bought")),
        chart=chart,
        rules=_html_table(_RULE_HEADERS, _rule_rows(summary)),
        references=(
            "<h2>Margin against each reference</h2>\n"
            f"<p>{html.escape(_REFERENCES_INTRO)}</p>\n"
            f"<table>{_html_table(_REFERENCE_HEADERS, _reference_rows(summary))}</table>\n"
            if _reference_rows(summary)
            else ""
        ),
        portfolio=_portfolio_html(summary),
        purchases=_html_table(_PURCHASE_HEADERS, _purchase_rows(summary)),
    )


_PORTFOLIO_HEADERS = (
    "rule",
    "held",
    "cost",
    "valued",
    "value",
    "unrealised margin",
    "no value",
    "illiquid",
)


def _portfolio_intro(summary: dict[str, Any]) -> str:
    p = summary["portfolio"]
    return (
        f"What was held when the replay ended, valued by `{p['settings']['value_by']}` "
        f"(the same code as `snipe portfolio`): {p['fee']}. Holdings without a usable "
        "reference are left out of value and margin."
    )


def _portfolio_rows(summary: dict[str, Any]) -> list[tuple[str, ...]]:
    p = summary.get("portfolio")
    if p is None:
        return []
    return [
        (
            g["key"],
            str(g["holdings"]),
            _usd(g["cost"]),
            str(g["valued"]),
            _usd(g["value"]),
            _usd(g["margin"]),
            str(g["unvalued"]),
            str(g["illiquid"]),
        )
        for g in [*p["by"]["rule"], p["totals"]]
    ]


def _portfolio_html(summary: dict[str, Any]) -> str:
    rows = _portfolio_rows(summary)
    if not rows:
        return ""
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in summary["portfolio"]["notes"])
    return (
        "<h2>Portfolio at the end</h2>\n"
        f"<p>{html.escape(_portfolio_intro(summary))}</p>\n"
        f"<table>{_html_table(_PORTFOLIO_HEADERS, rows)}</table>\n<ul>{notes}</ul>\n"
    )
