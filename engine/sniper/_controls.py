"""Operator controls shared by every control surface (chat commands, the HTTP API): pause
and resume buying, reload the rules file. Each action is written to the ledger's control
events with the engine clock's time and who did it (a chat id, a token's NAME: never a
secret), whatever came of it.

Pausing has the kill file's meaning (no purchase, no new buy order, the open ones
withdrawn) but is undone by :func:`resume`; a HALT is not (it needs a person and a
restart). A reload reads the file with the loader of the start-up (``load_rules``) and
keeps the running rules when the file is invalid.

:class:`OperatorControls` is the engine's side (a mixin of :class:`~engine.sniper.Engine`);
the functions below are what a control surface calls.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import anyio

from .._errors import ConfigError
from ..rules import RuleSet, load_rules

if TYPE_CHECKING:
    from ..rules import Decision
    from ._buyer import Buyer
    from ._engine import Engine, EngineSettings
    from ._orders import OrderManager
    from ._schedule import SearchSchedule
    from ._status import EngineStatus

__all__ = [
    "OperatorControls",
    "Reloaded",
    "ResumeOutcome",
    "pause",
    "reload_notes",
    "reload_rules",
    "resume",
]

log = logging.getLogger("snipe.engine")

ResumeOutcome = Literal["resumed", "not paused", "halted"]

HELD_BACK_NAMES = 1000
"""Names :meth:`OperatorControls.hold_back` remembers: beyond them a long pause's
deals are left to the audits."""


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
    _held_back: set[str]
    """Names with a listing the rules accepted while buying was not allowed (paused, a
    kill file, the start-up gate): searched again once it is (:meth:`release_held_back`),
    as a trusted feed tells a listing once and no background search looks again."""

    def wake(self) -> None:
        raise NotImplementedError  # the engine's own: its runners read their due times

    def hold_back(self, decisions: Sequence[Decision]) -> None:
        """Buying is not allowed now: remember the names of ``decisions``' accepted
        listings (at most :data:`HELD_BACK_NAMES`)."""
        for d in decisions:
            if d.accepted and len(self._held_back) < HELD_BACK_NAMES:
                self._held_back.add(d.listing.name)

    def release_held_back(self, now: float) -> None:
        """Buying is allowed: the names held back go to the priority lane, so the
        listings seen meanwhile are searched and, if still there, bought."""
        if not self._held_back or not self.status.buying_allowed:
            return
        names, self._held_back = self._held_back, set()
        log.info("buying allowed again: %d name(s) held back searched again", len(names))
        for name in sorted(names):
            self.schedule.flag(name, promise=0, at=now)
        self.wake()

    def _follow_rules(self, ruleset: RuleSet) -> None:
        raise NotImplementedError  # the engine's own: what it derives from its rules

    async def pause(self, reason: str) -> int:
        """Stop buying until :meth:`resume`, as a kill file does but resumable: no new
        purchase or buy order, and the open buy orders are withdrawn (a fill would be a
        purchase while paused). Reconciling goes on. Returns the orders removed."""
        if self.status.paused is None:
            self.status.paused = reason
            log.warning("buying paused: %s", reason)
        if self.settings.simulated:
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


@dataclass(frozen=True)
class Reloaded:
    """What :func:`reload_rules` did: ``error`` (the file:line:column message) when the
    file was refused and the old rules kept, else the rules now running."""

    error: str | None
    rules: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    """Sections that take effect only at the next start."""


async def pause(engine: Engine, reason: str, who: str) -> int:
    """Stop buying until :func:`resume` (see :meth:`Engine.pause`); returns the buy orders
    withdrawn."""
    reason = reason[:200]
    removed = await engine.pause(reason)
    await engine.ledger.record_control(
        "pause", actor=who, outcome="paused", details={"reason": reason, "orders_removed": removed}
    )
    return removed


async def resume(engine: Engine, who: str) -> ResumeOutcome:
    """Allow buying again after :func:`pause`. A HALTED engine stays HALTED."""
    outcome: ResumeOutcome = "halted"
    if not engine.status.halted:
        outcome = "resumed" if engine.resume() else "not paused"
    await engine.ledger.record_control("resume", actor=who, outcome=outcome)
    return outcome


def reload_notes(old: RuleSet, new: RuleSet) -> tuple[str, ...]:
    """The changed sections a running engine cannot take (its client, channels and
    reference sources are open): they wait for the next start."""
    notes = []
    if new.account != old.account:
        notes.append("account: takes effect at the next start")
    if new.api != old.api:
        notes.append("api: takes effect at the next start")
    if new.notify != old.notify:
        notes.append("notify: takes effect at the next start")
    if new.prices != old.prices or not new.sources_used <= old.sources_used:
        notes.append("prices: new reference sources are fetched from the next start")
    return tuple(notes)


async def reload_rules(
    engine: Engine,
    path: str | None,
    who: str,
    *,
    load: Callable[[str], RuleSet] | None = None,
) -> Reloaded:
    """Read the rules file ``path`` (default: the running one) as the start-up does and,
    when it is valid, run it from the next step. An invalid file changes nothing: its
    error (file:line:column) is returned and recorded."""
    filename = path or engine.ruleset.filename
    loader = load or (lambda p: load_rules(p, host=engine.host))
    # a virtual clock must not move while the file is read in a thread
    mark = getattr(engine.clock, "busy", None)
    try:
        with mark() if mark is not None else contextlib.nullcontext():
            ruleset = await anyio.to_thread.run_sync(loader, filename)
    except ConfigError as exc:
        error = str(exc)
        log.warning("reload refused, the running rules are kept: %s", error)
        await engine.ledger.record_control(
            "reload", actor=who, outcome="refused", details={"error": error}
        )
        return Reloaded(error=error)
    except OSError as exc:
        error = f"{filename}: {exc.strerror or type(exc).__name__}"
        await engine.ledger.record_control(
            "reload", actor=who, outcome="refused", details={"error": error}
        )
        return Reloaded(error=error)
    notes = reload_notes(engine.ruleset, ruleset)
    engine.replace_rules(ruleset)
    names = tuple(r.name for r in (*ruleset.rules, *ruleset.buy_order_rules))
    await engine.ledger.record_control(
        "reload", actor=who, outcome="reloaded", details={"rules": len(names), "notes": notes}
    )
    return Reloaded(error=None, rules=names, notes=notes)
