"""Backtest reports a person can read: escaped Markdown, the horizon really measured, an
HTML page of real tables (issue 11)."""

from __future__ import annotations

import html
from typing import Any

import pytest

from engine.backtest._report import html_page, later_label, markdown

NAME = "AK-47 | Redline (Field-Tested)"


def _summary(*, at_end: bool) -> dict[str, Any]:
    purchase = {
        "at": "2026-01-01T00:10:00Z",
        "t": 1_767_226_200,
        "project_id": "p1",
        "name": NAME,
        "rule": "red|line",
        "state": "COMPLETED",
        "charged": 3_496,
        "reference": 5_700,
        "later": 4_000,
        "later_at_end": at_end,
        "later_hours": 0.333 if at_end else 24.0,
        "reason": None,
    }
    return {
        "fingerprint": "f" * 64,
        "recording": {
            "start": "2026-01-01T00:00:00Z",
            "end": "2026-01-01T00:30:00Z",
            "hours": 0.5,
            "records": 10,
            "listing_events": 100,
        },
        "settings": {"seed": 0, "latency_ms": 250.0, "value_after_hours": 24.0},
        "totals": {
            "purchases": 1,
            "attempts": 1,
            "refunded": 0,
            "spend": 3_496,
            "value_reference": 5_700,
            "value_later": 4_000,
            "realised_margin": 504,
            "hit_rate": 1.0,
            "searches": 3,
            "snapshots": 3,
            "halted": None,
        },
        "missed": {
            "budget": 0,
            "search_limit": 0,
            "lost_race": 0,
            "gone_before_arrival": 0,
            "price_changed": 0,
        },
        "rules": {
            "red|line": {
                "purchases": 1,
                "attempts": 1,
                "spend": 3_496,
                "value_reference": 5_700,
                "value_later": 4_000,
                "realised_margin": 504,
                "missed_budget": 0,
                "missed_search_limit": 0,
            }
        },
        "purchases": [purchase],
    }


def _cells(row: str) -> list[str]:
    """Split a Markdown table row on the `|` that are not escaped."""
    parts, cell, escaped = [], "", False
    for ch in row.strip()[1:-1]:
        if ch == "|" and not escaped:
            parts.append(cell)
            cell = ""
        else:
            cell += ch
        escaped = ch == "\\" and not escaped
    return [*parts, cell]


def test_markdown_tables_keep_their_columns_with_a_pipe_in_names() -> None:
    text = markdown(_summary(at_end=False), chart=False)
    rows = [line for line in text.splitlines() if line.startswith("| 2026-")]
    (row,) = rows
    assert len(_cells(row)) == 8  # at, name, rule, state, paid, reference, later, seen first
    assert "AK-47 \\| Redline (Field-Tested)" in row
    (rule_row,) = [line for line in text.splitlines() if line.startswith("| red")]
    assert len(_cells(rule_row)) == 8


def test_later_says_the_horizon_measured() -> None:
    assert later_label(_summary(at_end=False)) == "24 h later"
    short = _summary(at_end=True)
    label = later_label(short)
    assert "end of the recording" in label
    assert "0.333" in label
    text = markdown(short, chart=False)
    assert "24.0 h later |" not in text
    assert "value at market price at the end of the recording" in text
    assert "(end of recording, 0.333 h)" in text


def test_the_html_report_is_real_tables_not_pre() -> None:
    page = html_page(_summary(at_end=True), None)
    assert "<pre>" not in page
    assert page.count("<table>") == 3
    assert f"<td>{html.escape(NAME)}</td>" in page
    assert "<th>later</th>" in page
    assert "end of the recording" in page


def test_the_chart_says_what_it_shows_and_keeps_its_legend_off_the_lines(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    matplotlib = pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    from engine.backtest._report import render_chart

    seen: list[Figure] = []
    real_savefig = Figure.savefig

    def keep(self: Figure, *args: Any, **kwargs: Any) -> None:
        seen.append(self)
        real_savefig(self, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", keep)
    summary = _summary(at_end=True)
    png = render_chart(summary)
    assert png is not None
    assert png[:4] == b"\x89PNG"
    assert matplotlib.get_backend().lower() == "agg"
    (figure,) = seen
    top, bottom = figure.axes
    assert "cumulative spend and value" in top.get_title()
    assert summary["fingerprint"][:12] not in top.get_title()
    assert "per rule" in bottom.get_title().lower()
    labels = [t.get_text() for t in top.get_legend().get_texts()]
    assert "value at the market price at the end of the recording" in labels
    for axes in (top, bottom):
        # anchored outside the axes (below or to the right): it covers no line
        x, y = axes.get_legend().get_bbox_to_anchor().transformed(axes.transAxes.inverted()).p0
        assert y < 0 or x > 1
