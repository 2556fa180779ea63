"""Hand-written recordings and a one-call backtest, for the backtest tests."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from engine._plugins import make_plugin_host
from engine.backtest import (
    BacktestOptions,
    BacktestRun,
    RecordWriter,
    read_records,
    recording_span,
    run_backtest,
)
from engine.client import (
    FeedConnected,
    FeedDisconnected,
    FeedListingEvent,
    FeedRemovalEvent,
)
from engine.models import FeedListing, FeedRemoval
from engine.rules import RuleSet, load_rules_text

T0 = 1_767_225_600.0
REDLINE = "AK-47 | Redline (Field-Tested)"
TRADE_LINK = "https://steamcommunity.com/tradeoffer/new/?partner=123456789&token=AbCdEfGh"

Step = tuple[float, str, Any]
"""``(seconds after T0, "snap" | "search", rows | entries)``"""


def rules(
    *, discount: int = 15, max_price: str = "50.00", budget: str = "100.00", hold: str = ""
) -> RuleSet:
    text = f"""
version: 1
account: {{base_url: "http://replay", trade_link: "{TRADE_LINK}"}}
budgets: {{per_day: "{budget}", total: "{budget}"}}
rules:
  - name: deals
    match: {{names: ["{REDLINE}"], game: csgo}}
    discount: {discount}
    max_price: "{max_price}"
{hold}
"""
    return load_rules_text(text, host=make_plugin_host(load_entry_points=False))


def listing(
    item_id: str,
    price: int,
    *,
    unlock_in: float | None = None,
    send_in: float | None = None,
    name: str = REDLINE,
) -> tuple[Any, ...]:
    unlock = None if unlock_in is None else int(T0 + unlock_in)
    send = None if send_in is None else int(T0 + send_in)
    return (item_id, name, price, unlock, send)


def entry(item_id: str, price: int, reference: int, *, name: str = REDLINE) -> dict[str, Any]:
    return {"name": name, "item_id": item_id, "price": price, "platform_price": reference}


def write(
    directory: Path,
    steps: Sequence[Step],
    *,
    include_hold: bool = False,
    segment_bytes: int = 32 << 20,
) -> Path:
    with RecordWriter(directory, include_hold=include_hold, segment_bytes=segment_bytes) as w:
        for offset, kind, payload in steps:
            if kind == "snap":
                w.snapshot(T0 + offset, payload)
            else:
                names = sorted({e["name"] for e in payload})
                items = {n: [e for e in payload if e["name"] == n] for n in names}
                w.search(T0 + offset, names, None, items)
    return directory


def market(
    seconds: int, rows: Sequence[tuple[Any, ...]], *, reference: int = 10_000, every: float = 10.0
) -> list[Step]:
    """The same listings on every snapshot for ``seconds``, with a search answer giving
    their reference price first."""
    steps: list[Step] = [(0.0, "snap", list(rows))]
    steps.append((0.0, "search", [entry(r[0], r[2], reference, name=r[1]) for r in rows]))
    t = every
    while t <= seconds:
        steps.append((t, "snap", list(rows)))
        t += every
    return steps


async def backtest(ruleset: RuleSet, data: Path, **options: Any) -> BacktestRun:
    _, end = recording_span(data)
    return await run_backtest(
        ruleset,
        read_records(data),
        host=make_plugin_host(load_entry_points=False),
        end=end,
        options=BacktestOptions(**options),
    )


SANDBOX_NAMES = (REDLINE, "AWP | Asiimov (Field-Tested)", "Glock-18 | Fade (Factory New)")


def sandbox_rules(*, discount: int = 10) -> RuleSet:
    """Rules for the sandbox recording of conftest.py."""
    text = f"""
version: 1
account: {{base_url: "http://replay", trade_link: "{TRADE_LINK}"}}
budgets: {{per_day: "300.00", total: "300.00"}}
rules:
  - name: redlines
    match: {{names: ["{REDLINE}"], game: csgo}}
    discount: {discount}
    max_price: "60.00"
  - name: glock-fades
    match: {{patterns: ["Glock-18 | *"], game: csgo}}
    discount: {discount}
    max_price: "200.00"
    hold: {{max_wait: 7d, min_send_window: 1h}}
    action: bulk
"""
    return load_rules_text(text, host=make_plugin_host(load_entry_points=False))


# -- the live feed in recordings (format version 2) ---------------------------------------


def up(t: float, generation: int = 1) -> FeedConnected:
    return FeedConnected(generation, t, "sid-1", ("csgo",), 25.0, 20.0)


def down(t: float, generation: int = 1) -> FeedDisconnected:
    return FeedDisconnected(generation, t, "stall", "no frame for 45 s")


def told(t: float, item_id: str, price: int, *, kind: str = "new") -> FeedListingEvent:
    item = FeedListing.model_validate(
        {
            "item_id": item_id,
            "name": REDLINE,
            "price": price,
            "platform_price": 10_000,
            "game": "csgo",
        }
    )
    return FeedListingEvent("new" if kind == "new" else "update", item, t, 1)


def removed(t: float, item_id: str) -> FeedRemovalEvent:
    return FeedRemovalEvent(FeedRemoval(item_id=item_id, name=REDLINE, price=1), t, 1)


def write_with_feed(directory: Path, steps: list[tuple[float, str, Any]]) -> Path:
    """Like support.write, with ``("feed", event)`` steps (times are the events')."""
    with RecordWriter(directory) as w:
        for offset, kind, payload in steps:
            if kind == "snap":
                w.snapshot(T0 + offset, payload)
            elif kind == "search":
                w.search(T0 + offset, [REDLINE], None, {REDLINE: payload})
            else:
                w.feed(T0 + offset, payload)
    return directory
