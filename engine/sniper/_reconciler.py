"""Resolving purchases by the service's word, and following trades to the end.

Only the service settles a purchase's money: check-many-project-id, my-history and the buy
answer. The local clock only decides *when to ask again*. A purchase whose answer was lost
(UNKNOWN), or that was written but maybe never sent before a crash (INTENT), is resolved by
asking what the service knows of its ``project_id`` (at most 100 ids a call), never by
buying again:

- found: it happened; the trade's status says where it stands (BOUGHT, RESERVED,
  COMPLETED, or REFUNDED with the reason);
- absent: nothing by itself. Once it has been absent ``absence_gap`` seconds apart (both
  past ``absent_after`` seconds after the request), my-history is read over its time: a
  matching row says it happened; none says it did not, and it is RELEASED (its budget and
  its item freed);
- in the answer but unreadable (the client set the trade aside): nothing learned, asked
  again; never taken as absent;
- an answer ``{"success": true}`` without ``trades`` says nothing about any id.

A released purchase is watched for ``watch`` seconds (batched, every ``watch_every``): if the
service shows it after all it moves on and its budget counts again; should that breach a
cap now, buying is HALTED with the reason. Still absent after the watch, it is FAILED.

Bought and reserved purchases are followed until the service says they completed (status
5) or were refunded (status 6, escrow ``failed``). One past ``send_until`` that the service
still calls open is *overdue*: counted and shown, never refunded on the clock's say-so.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .._clock import Clock
from .._errors import APIError, LedgerError
from .._money import format_usd
from ..client import MarketClient
from ..ledger import (
    BUDGET_STATES,
    DEFAULT_HISTORY_SLACK,
    FILL_PREFIX,
    Absence,
    Cap,
    Ledger,
    Purchase,
    PurchaseState,
    sent_at,
)
from ..models import HistoryTrade, ProjectTrade
from ._status import EngineStatus

if TYPE_CHECKING:
    from .._plugins import PluginHost

__all__ = ["Reconciler", "ReconcilerSettings"]

log = logging.getLogger("snipe.reconcile")

_MAX_IDS = 100
_HISTORY_PAGE = 100


@dataclass(frozen=True)
class ReconcilerSettings:
    grace: float = 60.0
    """Seconds after a purchase was written before its ``project_id`` is first checked."""
    absent_after: float = 300.0
    """Seconds after the request before an absence from check-many counts at all."""
    absence_gap: float = 180.0
    """Two counted absences at least this far apart (and a clear my-history) release a
    purchase as not bought."""
    follow_every: float = 60.0
    """Seconds between checks of a bought or reserved purchase's trade."""
    watch: float = 86_400.0
    """How long a released purchase is watched for a late appearance."""
    watch_every: float = 600.0
    """Seconds between checks of a released purchase (batched, 100 ids a call)."""
    history_pages: int = 10
    """At most this many pages of my-history are read to clear one batch of absences."""


CapsFor = Callable[[str, float], Sequence[Cap]]
"""The caps of a rule at an instant (the engine's :func:`caps_for_rule`)."""


class Reconciler:
    """Resolves unresolved purchases, follows open trades and watches released ones."""

    def __init__(
        self,
        *,
        client: MarketClient,
        ledger: Ledger,
        clock: Clock,
        status: EngineStatus,
        settings: ReconcilerSettings = ReconcilerSettings(),
        caps_for: CapsFor | None = None,
        host: PluginHost | None = None,
    ) -> None:
        self._client = client
        self._ledger = ledger
        self._clock = clock
        self._status = status
        self.settings = settings
        self._caps_for = caps_for
        self._last_followed: dict[str, float] = {}
        self._last_watched: dict[str, float] = {}
        self._absences: dict[str, tuple[float, float]] = {}
        self._past_deadline: set[str] = set()
        self.overdue = 0
        """Open trades past ``send_until`` that the service still calls open (last pass):
        shown in the status line, ``snipe status`` and metrics; never refunded for it."""
        self._host = host
        """Its ``snipe_refund`` hook is called for each purchase moved to REFUNDED."""

    async def resolve(self, *, final_probe: bool = False) -> list[Purchase]:
        """One pass over the unresolved purchases (INTENT, UNKNOWN) whose grace has passed
        (all of them with ``final_probe``). Returns those still unresolved.

        Raises :class:`~engine.APIError` when the service cannot be asked.
        """
        now = self._clock.now()
        unresolved = await self._ledger.unresolved()
        due = [p for p in unresolved if final_probe or now - p.created_at >= self.settings.grace]
        proven_absent: list[Purchase] = []
        for batch in _batches(due):
            for purchase, trade in await self._learned(batch):
                if trade is not None:
                    self._absences.pop(purchase.project_id, None)
                    await self._apply(purchase, trade)
                elif self._count_absence(purchase, now):
                    proven_absent.append(purchase)
        if proven_absent:
            await self._settle_absent(proven_absent)
        return await self._ledger.unresolved()

    async def follow(self) -> None:
        """Check the trades of bought and reserved purchases that are due a look."""
        now = self._clock.now()
        # Buy-order fills have no project_id: the order manager follows them in my-history.
        open_trades = [
            p for p in await self._ledger.open_trades() if not p.project_id.startswith(FILL_PREFIX)
        ]
        due = [
            p
            for p in open_trades
            if now - self._last_followed.get(p.project_id, p.updated_at)
            >= self.settings.follow_every
        ]
        for batch in _batches(due):
            for purchase, trade in await self._learned(batch):
                self._last_followed[purchase.project_id] = now
                if trade is not None:
                    self._note_deadline(purchase.project_id, trade, now)
                    await self._apply(purchase, trade)
        still_open = {p.project_id for p in await self._ledger.open_trades()}
        known_late = {p.project_id for p in await self._ledger.overdue(now)}
        self._past_deadline &= still_open
        self.overdue = len(self._past_deadline | known_late)

    def _note_deadline(self, project_id: str, trade: ProjectTrade, now: float) -> None:
        if trade.send_until is not None and now > trade.send_until and not trade.final:
            self._past_deadline.add(project_id)
        else:
            self._past_deadline.discard(project_id)

    async def watch(self) -> None:
        """Check released purchases for a late appearance (due ones, batched); end the
        watch of those whose day is over and that the service still does not show."""
        now = self._clock.now()
        watched = await self._ledger.released(since=now - self.settings.watch)
        due = [
            p
            for p in watched
            if now - self._last_watched.get(p.project_id, p.updated_at) >= self.settings.watch_every
        ]
        for batch in _batches(due):
            for purchase, trade in await self._learned(batch):
                self._last_watched[purchase.project_id] = now
                if trade is not None:
                    await self._apply(purchase, trade)
        expired = await self._ledger.released_before(now - self.settings.watch)
        for batch in _batches(expired):
            for purchase, trade in await self._learned(batch):
                self._last_watched.pop(purchase.project_id, None)
                await self._apply(purchase, trade)

    async def run_once(self) -> None:
        """``resolve``, ``follow`` and ``watch``; errors are counted and reported, not
        raised (a transient failure is never a verdict: the next pass asks again)."""
        try:
            await self.resolve()
            await self.follow()
            await self.watch()
        except APIError as exc:
            self._status.error(f"reconciling: {exc}")

    # -- asking the service ----------------------------------------------------------------

    async def _learned(
        self, batch: Sequence[Purchase]
    ) -> list[tuple[Purchase, ProjectTrade | None]]:
        """Each purchase of ``batch`` the answer settles something about, with its trade
        (``None``: absent). Left out: all of them when the answer has no ``trades``, and
        those an unreadable trade of the answer may be (not learned: asked again later)."""
        looked_up = await self._lookup(batch)
        if looked_up is None:
            return []
        trades, unsettled = looked_up
        return [(p, trades.get(p.project_id)) for p in batch if p.project_id not in unsettled]

    async def _lookup(
        self, batch: Sequence[Purchase]
    ) -> tuple[dict[str, ProjectTrade], frozenset[str]] | None:
        """The trades found for ``batch``, and the ids the answer settles nothing about: a
        trade of the answer that could not be read (set aside by the client) may be theirs,
        so for them absence is not evidence (never "absent", never released). ``None`` when
        the answer carries no ``trades`` at all (``{"success": true}``), which says nothing
        about any id."""
        ids = [p.project_id for p in batch]
        answer = await self._client.check_many_project_id(ids)
        if "trades" not in answer.model_fields_set:
            log.info("check-many-project-id answered without trades: nothing learned")
            return None
        unsettled = answer.unsettled(ids)
        if unsettled:
            log.warning(
                "check-many-project-id: %d trade(s) unreadable; %d purchase(s) not learned "
                "this time, asked again later",
                len(answer.set_aside),
                len(unsettled),
            )
        return {t.project_id: t for t in answer.trades}, unsettled

    def _count_absence(self, purchase: Purchase, now: float) -> bool:
        """Note an absence (once past ``absent_after``); ``True`` when two of them are far
        enough apart to ask my-history whether it is really not bought."""
        if now - sent_at(purchase) < self.settings.absent_after:
            return False
        first, _ = self._absences.get(purchase.project_id, (now, now))
        self._absences[purchase.project_id] = (first, now)
        return now - first >= self.settings.absence_gap

    async def _settle_absent(self, purchases: Sequence[Purchase]) -> None:
        """Read my-history over the purchases' time: a match says it happened; a clear
        history (and the two absences) release it. A history that cannot be read in full
        settles nothing, and an unreadable row that may be a purchase's keeps it unreleased
        (it is not known, which is not the same as absent)."""
        history = await self._history_since(min(p.created_at for p in purchases))
        if history is None:
            return
        rows, unsure = history
        for purchase in purchases:
            moved = await self._ledger.resolve_history(purchase.project_id, rows)
            if moved is not None:
                self._absences.pop(purchase.project_id, None)
                self._log_move(purchase, moved, "my-history")
                await self._after_move(purchase, moved)
                continue
            if unsure is None or purchase.project_id in unsure:
                continue  # an unreadable history row may be this purchase: asked again
            first, last = self._absences[purchase.project_id]
            released = await self._ledger.release(
                purchase.project_id,
                Absence(first, last, history_clear=True),
                grace=self.settings.absent_after,
                gap=self.settings.absence_gap,
            )
            if released is not None:
                self._absences.pop(purchase.project_id, None)
                self._last_watched[purchase.project_id] = released.updated_at
                self._log_move(purchase, released, "released")

    async def _history_since(
        self, since: float
    ) -> tuple[list[HistoryTrade], frozenset[str] | None] | None:
        """Buy rows of my-history from ``since`` (less the slack) to now, newest first, and
        the project ids of rows that could not be read (``None`` when one of them has no
        readable project id: it may be anyone's); ``None`` if they do not fit in
        ``history_pages`` pages."""
        start = since - DEFAULT_HISTORY_SLACK
        day = dt.datetime.fromtimestamp(start, dt.UTC).date()
        rows: list[HistoryTrade] = []
        unsure: set[str] = set()
        anyones = False
        for page in range(self.settings.history_pages):
            answer = await self._client.my_history(skip=page * _HISTORY_PAGE, start=day)
            found = answer.data.trades
            rows.extend(found)
            for item in answer.set_aside:
                if item.project_id is None:
                    anyones = True
                else:
                    unsure.add(item.project_id)
            oldest = min((r.created for r in found if r.created is not None), default=None)
            page_size = len(found) + len(answer.set_aside)
            if page_size < _HISTORY_PAGE or (oldest is not None and oldest < start):
                return rows, (None if anyones else frozenset(unsure))
        return None

    # -- applying the answers --------------------------------------------------------------

    async def _apply(self, purchase: Purchase, trade: ProjectTrade | None) -> None:
        try:
            moved = await self._ledger.resolve(
                purchase.project_id, trade, watch=self.settings.watch
            )
        except LedgerError as exc:
            if purchase.state is not PurchaseState.RELEASED:
                raise
            # It turned up while its item has a new live purchase: the ledger cannot hold
            # both, and money may be uncounted. A person must look.
            self._status.halt(
                f"a purchase released as not bought ({purchase.project_id}, {purchase.name})"
                f" turned up on the service but cannot be recorded: {exc}"
            )
            return
        if moved is not None:
            self._log_move(purchase, moved, "check-many-project-id")
            await self._after_move(purchase, moved)

    def _log_move(self, before: Purchase, after: Purchase, source: str) -> None:
        log.info(
            "%s %s: %s -> %s (%s)%s",
            after.project_id,
            after.name,
            before.state,
            after.state,
            source,
            f": {after.reason}" if after.reason and after.reason != before.reason else "",
        )

    async def _after_move(self, before: Purchase, after: Purchase) -> None:
        if before.state is PurchaseState.RELEASED and after.state in BUDGET_STATES:
            await self._late_purchase(after)
        if after.state is PurchaseState.REFUNDED and self._host is not None:
            self._host.notify_refund(after, after.reason)  # a plugin's failure is isolated

    async def _late_purchase(self, purchase: Purchase) -> None:
        """A released purchase turned up: its budget counts again; if a cap is now
        breached, buying stops until a person looks."""
        self._status.error(
            f"purchase {purchase.project_id} ({purchase.name}) released as not bought turned"
            f" up on the service; it counts again ({format_usd(purchase.amount)})"
        )
        if self._caps_for is None:
            return
        caps = self._caps_for(purchase.rule, purchase.created_at)
        for cap, used in zip(caps, await self._ledger.cap_usage(caps), strict=True):
            if used > cap.limit:
                show = str if cap.kind == "count" else format_usd
                self._status.halt(
                    f"a purchase released as not bought ({purchase.project_id},"
                    f" {purchase.name}) turned up on the service, and with it the"
                    f" {cap.describe()} is at {show(used)} of {show(cap.limit)}"
                )
                return


def _batches(purchases: Sequence[Purchase]) -> list[Sequence[Purchase]]:
    return [purchases[i : i + _MAX_IDS] for i in range(0, len(purchases), _MAX_IDS)]
