"""What ``snipe demo`` shows while it runs and after: a live panel on a terminal, plain
progress lines otherwise, and the final tables (at most :data:`WIDTH` columns, every reason
written out in full, each rule's criteria once).

Everything here reads the engine's view (:meth:`~engine.sniper.Engine.view`) or its
counters; nothing changes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.console import Group, RenderableType
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

from .._money import format_usd
from ..rules import RuleSet
from ..sniper import Engine, EngineView, Outcome, PurchaseRecord

__all__ = ["WIDTH", "Progress", "bought_table", "purchase_line", "rules_table", "skipped_table"]

WIDTH = 100
"""The widest line the demo prints, whatever the terminal."""

_WENT_THROUGH = (Outcome.BOUGHT, Outcome.RESERVED)


@dataclass(frozen=True)
class Progress:
    """The engine's counters at one moment, as the panel and the progress lines show them."""

    market_seconds: float
    total_seconds: float
    searches: int
    searches_in_window: int
    search_limit: int | None
    snapshots: int
    watched: int
    listings: int
    candidates: int
    bought: int
    spent: int
    cap: int
    recent: tuple[PurchaseRecord, ...] = ()
    """The latest purchase attempts (at most five)."""
    feed_events: int | None = None
    """Listing events the live feed told (``None``: the feed is off). ``listings`` counts
    search answers and catalogue pages only: once the feed is trusted it tells what is
    listed, and the searches mostly stop."""

    @classmethod
    async def of(cls, engine: Engine, started: float, total: float) -> Progress:
        view = await engine.view()
        return cls(
            market_seconds=min(total, max(0.0, view.now - started)),
            total_seconds=total,
            searches=view.searches,
            searches_in_window=view.search_used,
            search_limit=view.search_limit,
            snapshots=view.snapshots,
            watched=view.watched,
            listings=view.listings_seen,
            candidates=view.candidates,
            bought=view.bought,
            spent=view.spent_total,
            cap=view.cap_total,
            recent=view.recent[-5:],
            feed_events=None if view.feed is None else view.feed.events,
        )

    def line(self) -> str:
        """One plain progress line (for output that is not a terminal)."""
        return (
            f"market {_clock(self.market_seconds)} of {_clock(self.total_seconds)}: "
            f"{self.searches} searches ({self._window()}), {self.watched} names watched, "
            f"{self._looked_at()}, {self.candidates} candidates, "
            f"{self.bought} bought for {format_usd(self.spent)}"
        )

    def _looked_at(self) -> str:
        searched = f"{self.listings:,} listings looked at in searches"
        if self.feed_events is None:
            return searched
        return f"{searched}, {self.feed_events:,} feed events"

    def _window(self) -> str:
        limit = "unlimited" if self.search_limit is None else str(self.search_limit)
        return f"{self.searches_in_window}/{limit} in the last minute"

    def panel(self, recent: Sequence[PurchaseRecord]) -> Panel:
        """The live panel: the counters and the latest purchases."""
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="bold")
        grid.add_column()
        grid.add_row(
            "market time", f"{_clock(self.market_seconds)} of {_clock(self.total_seconds)}"
        )
        grid.add_row("searches", f"{self.searches} sent, {self._window()}")
        grid.add_row("snapshots", str(self.snapshots))
        grid.add_row("names watched", str(self.watched))
        grid.add_row("listings seen", f"{self.listings:,} in searches")
        if self.feed_events is not None:
            grid.add_row("feed events", f"{self.feed_events:,}")
        grid.add_row("candidates", f"{self.candidates} accepted by the rules")
        grid.add_row(
            "bought", f"{self.bought} for {format_usd(self.spent)} (cap {format_usd(self.cap)})"
        )
        parts: list[RenderableType] = [grid]
        if recent:
            parts.append("[bold]latest purchases[/]")
            parts.extend(escape(purchase_line(r)) for r in recent[-5:])
        return Panel(Group(*parts), title="snipe demo: watching the market")


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def facts(record: PurchaseRecord) -> str:
    """Why this listing was a buy, in the listing's own numbers."""
    out = []
    if record.reference:
        off = 100 * (record.reference - record.price) / record.reference
        out.append(f"{off:.0f}% under its reference {format_usd(record.reference)}")
    if record.float_value is not None:
        out.append(f"float {record.float_value:.4f}")
    return ", ".join(out) or "accepted by the rule"


def purchase_line(record: PurchaseRecord) -> str:
    """One purchase as it happens: what, at what price, which rule, and why."""
    verb = {
        Outcome.BOUGHT: "bought",
        Outcome.RESERVED: "bought (trade-locked)",
        Outcome.DRY_RUN: "would buy",
    }.get(record.outcome, record.outcome.value.replace("_", " "))
    why = record.detail if record.outcome not in _WENT_THROUGH and record.detail else facts(record)
    return f"{verb} {record.name} at {format_usd(record.price)} [{record.rule}]: {why}"


def rules_table(ruleset: RuleSet) -> Table:
    """Each rule once, with its criteria (the purchases below refer to them by name)."""
    table = Table(title="The rules", title_justify="left")
    table.add_column("rule", overflow="fold", ratio=1)
    table.add_column("buys when", overflow="fold", ratio=3)
    for rule in (*ruleset.rules, *ruleset.buy_order_rules):
        table.add_row(escape(rule.name), escape("; ".join(rule.summaries)))
    return table


def bought_table(purchases: list[PurchaseRecord]) -> Table:
    table = Table(title="What it bought, and why", title_justify="left")
    table.add_column("item", overflow="fold", ratio=3)
    table.add_column("price", justify="right", no_wrap=True)
    table.add_column("rule", overflow="fold", ratio=2)
    table.add_column("outcome", overflow="fold", ratio=1)
    table.add_column("why", overflow="fold", ratio=3)
    for record in purchases:
        why = record.detail if record.outcome not in _WENT_THROUGH and record.detail else None
        table.add_row(
            escape(record.name),
            format_usd(record.price),
            escape(record.rule),
            record.outcome.value.replace("_", " "),
            escape(why or facts(record)),
        )
    return table


def skipped_table(view: EngineView, rows: int = 10) -> Table:
    """The most common reasons listings were turned down, per rule, each written out in
    full (the latest listing of its kind)."""
    table = Table(
        title="What it skipped, and why (most common reasons; one example of each)",
        title_justify="left",
    )
    table.add_column("rule", overflow="fold", ratio=1)
    table.add_column("reason (an example)", overflow="fold", ratio=4)
    table.add_column("listings", justify="right", no_wrap=True)
    for skip in view.skips[:rows]:
        table.add_row(escape(skip.rule), escape(skip.example), f"{skip.count:,}")
    return table
