"""The notification event types: what a notice is and what a day of trading adds up to.

They sit below both the hook specifications (``snipe_daily_summary`` passes a
:class:`DailySummary`) and :mod:`engine.notify`, which builds and sends the notices, so that
``hookspecs.py`` needs nothing of notify's machinery and notify can use the hooks. Re-exported
by :mod:`engine.notify`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["EVENT_KINDS", "DailySummary", "EventKind", "Notice"]

EventKind = Literal["purchase", "refund", "halted", "daily_summary"]
EVENT_KINDS: tuple[EventKind, ...] = ("purchase", "refund", "halted", "daily_summary")


@dataclass(frozen=True)
class Notice:
    """One message, channel-neutral: a title, text lines, an optional image, and ``data``
    (plain JSON values) for machine receivers."""

    kind: EventKind
    title: str
    lines: tuple[str, ...]
    at: float
    data: Mapping[str, Any] = field(default_factory=dict)
    image: str | None = None

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


@dataclass(frozen=True)
class DailySummary:
    """One UTC day of trading, as the ledger has it (passed to ``snipe_daily_summary``)."""

    day: str
    """``YYYY-MM-DD`` (UTC)."""
    purchases: int
    """Purchases written that day that went through (bought, reserved or completed)."""
    spent: int
    refunds: int
    refunded: int
    failed: int
    unresolved: int
    spent_total: int
    """Everything committed so far (all days), against ``cap_total``."""
    cap_per_day: int
    cap_total: int
    dry_run: bool = False
    """A dry run's day: the purchases are ones it would have made; nothing was spent."""
    paper: bool = False
    """A paper run's day (``snipe run --paper``): purchases judged bought on paper, failed
    ones missed; nothing was spent."""
