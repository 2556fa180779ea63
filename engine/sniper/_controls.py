"""The operator's controls of a running engine (the HTTP API, chat commands): pause and
resume buying, replace the rules between two steps, ask ``snipe run`` to stop.

A mixin of :class:`~engine.sniper.Engine`, kept apart so the engine's module stays about
watching, deciding and buying; it reads only what the engine declares below.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import anyio

if TYPE_CHECKING:
    from ..rules import RuleSet
    from ._buyer import Buyer
    from ._engine import EngineSettings
    from ._orders import OrderManager
    from ._schedule import SearchSchedule
    from ._status import EngineStatus

__all__ = ["OperatorControls"]

log = logging.getLogger("snipe.engine")


class OperatorControls:
    """Pause, resume, replace the rules, request a stop (see the module's docstring)."""

    ruleset: RuleSet
    settings: EngineSettings
    status: EngineStatus
    orders: OrderManager
    buyer: Buyer
    schedule: SearchSchedule
    stop_requested: anyio.Event
    stop_reason: str | None

    def _follow_rules(self, ruleset: RuleSet) -> None:
        raise NotImplementedError  # the engine's own: what it derives from its rules

    async def pause(self, reason: str) -> int:
        """Stop buying until :meth:`resume`, as a kill file does but resumable: no new
        purchase or buy order, and the open buy orders are withdrawn (a fill would be a
        purchase while paused). Reconciling goes on. Returns the orders removed."""
        if self.status.paused is None:
            self.status.paused = reason
            log.warning("buying paused: %s", reason)
        if self.settings.dry_run:
            return 0
        return await self.orders.remove_all()

    def resume(self) -> bool:
        """Allow buying again after :meth:`pause`; ``False`` when HALTED (a HALT needs a
        person and a restart, not a resume) or not paused. Buy orders are placed again by
        the next order sync."""
        if self.status.paused is None or self.status.halted:
            return False
        self.status.paused = None
        log.warning("buying resumed")
        return True

    def replace_rules(self, ruleset: RuleSet) -> None:
        """Swap in ``ruleset`` (already loaded and checked) between two steps: decisions
        from now on use it, caps are checked against its budgets at the moment of buying,
        and buy orders follow it at the next sync. The ``account`` and ``prices`` sections
        take effect at the next start (the client, ledger and reference sources are
        open)."""
        self.orders._ruleset = ruleset
        self.buyer._ruleset = ruleset
        kept = {n for n in self.schedule.watched if ruleset.view(n).rules}
        self.schedule.watch(set(ruleset.watched_names) | kept)
        self._follow_rules(ruleset)
        log.warning("rules replaced by %s (%d rules)", ruleset.filename, len(ruleset.rules))

    def request_stop(self, reason: str) -> None:
        """Ask ``snipe run`` to stop as on SIGTERM: purchases in flight are finished."""
        if self.stop_reason is None:
            self.stop_reason = reason
            log.warning("stop requested: %s", reason)
        self.stop_requested.set()
