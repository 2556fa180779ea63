"""The daily summary: at each UTC midnight a running engine tells the plugins
(``snipe_daily_summary``) what the day that ended did, as the ledger has it.

The engine calls :meth:`DayEnds.step` from its own periodic work (with ``snipe run``,
``snipe demo`` or a bare :class:`~engine.sniper.Engine` alike); :meth:`DayEnds.due_at` says
when the next summary is due, so a scheduler can sleep until then.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ..ledger import PurchaseState, utc_day_start
from ..notify import DailySummary, utc_day

if TYPE_CHECKING:
    from ._engine import Engine

__all__ = ["DayEnds", "daily_summary"]

log = logging.getLogger("snipe.engine")

DAY = 86_400.0

_WENT_THROUGH = {PurchaseState.BOUGHT, PurchaseState.RESERVED, PurchaseState.COMPLETED}


async def daily_summary(engine: Engine, day_start: float) -> DailySummary:
    """The summary of the UTC day that starts at ``day_start``: that day's purchases and
    refunds from the ledger, the rest from :meth:`Engine.view`."""
    ledger = engine.ledger
    day_end = day_start + DAY
    written = [p for p in await ledger.purchases(since=day_start) if p.created_at < day_end]
    bought = [p for p in written if p.state in _WENT_THROUGH]
    refunds = [
        p
        for p in await ledger.purchases(states=[PurchaseState.REFUNDED])
        if day_start <= p.updated_at < day_end
    ]
    view = await engine.view()
    return DailySummary(
        day=utc_day(day_start),
        purchases=len(bought),
        spent=sum(p.amount for p in bought),
        refunds=len(refunds),
        refunded=sum(p.amount for p in refunds),
        failed=sum(1 for p in written if p.state in (PurchaseState.FAILED, PurchaseState.RELEASED)),
        unresolved=view.unresolved,
        spent_total=view.spent_total,
        cap_per_day=view.cap_per_day,
        cap_total=view.cap_total,
        dry_run=view.dry_run,
        paper=view.paper is not None,
    )


class DayEnds:
    """When the next daily summary is due, and sending it."""

    def __init__(self) -> None:
        self._due: float | None = None

    def due_at(self, now: float) -> float:
        """The end of the UTC day the engine was first asked about (then the next ones)."""
        if self._due is None:
            self._due = utc_day_start(now) + DAY
        return self._due

    async def step(self, engine: Engine) -> None:
        """At or after the due midnight: tell the plugins about the day that ended there.
        A summary that cannot be made is logged and skipped (the next day's comes)."""
        now = engine.clock.now()
        due = self.due_at(now)
        if now < due:
            return
        self._due = utc_day_start(now) + DAY
        try:
            summary = await daily_summary(engine, due - DAY)
        except Exception:
            log.exception("the daily summary could not be made")
            return
        engine.host.notify_daily_summary(summary)
