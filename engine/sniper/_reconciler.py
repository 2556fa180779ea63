"""Resolving purchases through their ``project_id``, and following trades to the end.

A purchase whose answer was lost (UNKNOWN), or that was written but maybe never sent
before a crash (INTENT), is resolved only by asking the service what it knows of its
``project_id`` (``GET /v1/check-many-project-id``, at most 100 ids a call), never by
buying again:

- found: it happened; the trade's status says where it stands (BOUGHT, RESERVED,
  COMPLETED, or REFUNDED with the reason);
- absent shortly after the request: nothing yet (the service advises waiting about a
  minute), so ask again later;
- absent ``absent_after`` seconds after the purchase was written: it did not happen
  (FAILED), and its budget is released;
- in the answer but unreadable (the client set the trade aside): nothing learned, asked
  again; never taken as absent.

Bought and reserved purchases are followed the same way until they complete (status 5) or
are refunded (status 6, or a trade-locked item not delivered by ``send_until``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .._clock import Clock
from .._errors import APIError
from ..client import MarketClient
from ..ledger import FILL_PREFIX, Ledger, Purchase, PurchaseState
from ..models import ProjectTrade
from ._status import EngineStatus

__all__ = ["Reconciler", "ReconcilerSettings"]

log = logging.getLogger("snipe.reconcile")

_MAX_IDS = 100


@dataclass(frozen=True)
class ReconcilerSettings:
    grace: float = 60.0
    """Seconds after a purchase was written before its ``project_id`` is first checked."""
    absent_after: float = 300.0
    """Seconds after a purchase was written after which absence means it did not happen."""
    follow_every: float = 60.0
    """Seconds between checks of a bought or reserved purchase's trade."""


class Reconciler:
    """Resolves unresolved purchases and follows open trades, inside the search budget."""

    def __init__(
        self,
        *,
        client: MarketClient,
        ledger: Ledger,
        clock: Clock,
        status: EngineStatus,
        settings: ReconcilerSettings = ReconcilerSettings(),
    ) -> None:
        self._client = client
        self._ledger = ledger
        self._clock = clock
        self._status = status
        self.settings = settings
        self._last_followed: dict[str, float] = {}
        self.on_refund: Callable[[Purchase], None] | None = None
        """Told about each purchase moved to REFUNDED (``snipe run`` passes it on to the
        ``snipe_refund`` hook); one that raises is logged and ignored."""

    async def resolve(self, *, final_probe: bool = False) -> list[Purchase]:
        """One pass over the unresolved purchases (INTENT, UNKNOWN) whose grace has passed
        (all of them with ``final_probe``). Returns those still unresolved.

        Raises :class:`~engine.APIError` when the service cannot be asked.
        """
        now = self._clock.now()
        unresolved = await self._ledger.unresolved()
        due = [p for p in unresolved if final_probe or now - p.created_at >= self.settings.grace]
        for batch in _batches(due):
            trades, unsettled = await self._lookup(batch)
            for purchase in batch:
                if purchase.project_id in unsettled:
                    continue  # its trade was in the answer but unreadable: not learned
                await self._apply(purchase, trades.get(purchase.project_id))
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
            trades, unsettled = await self._lookup(batch)
            for purchase in batch:
                if purchase.project_id in unsettled:
                    continue  # not learned: asked again on the next pass
                self._last_followed[purchase.project_id] = now
                trade = trades.get(purchase.project_id)
                if trade is not None:
                    await self._apply(purchase, trade)

    async def run_once(self) -> None:
        """``resolve`` then ``follow``; errors are counted and reported, not raised."""
        try:
            await self.resolve()
            await self.follow()
        except APIError as exc:
            self._status.error(f"reconciling: {exc}")

    async def _lookup(
        self, batch: Sequence[Purchase]
    ) -> tuple[dict[str, ProjectTrade], frozenset[str]]:
        """The trades found for ``batch``, and the ids the answer settles nothing about:
        a trade of the answer that could not be read (set aside by the client) may be
        theirs, so for them absence is not evidence (never "absent", never FAILED)."""
        ids = [p.project_id for p in batch]
        answer = await self._client.check_many_project_id(ids)
        unsettled = answer.unsettled(ids)
        if unsettled:
            log.warning(
                "check-many-project-id: %d trade(s) unreadable; %d purchase(s) not learned "
                "this time, asked again later",
                len(answer.set_aside),
                len(unsettled),
            )
        return {t.project_id: t for t in answer.trades}, unsettled

    async def _apply(self, purchase: Purchase, trade: ProjectTrade | None) -> None:
        """Let the ledger apply the service's answer (``None``: absent); absence becomes
        FAILED only ``absent_after`` seconds after the request."""
        moved = await self._ledger.resolve(
            purchase.project_id, trade, grace=self.settings.absent_after
        )
        if moved is not None:
            log.info("%s %s: %s -> %s", moved.project_id, moved.name, purchase.state, moved.state)
            if moved.state is PurchaseState.REFUNDED and self.on_refund is not None:
                try:
                    self.on_refund(moved)
                except Exception:
                    log.exception("the refund observer failed")


def _batches(purchases: Sequence[Purchase]) -> list[Sequence[Purchase]]:
    return [purchases[i : i + _MAX_IDS] for i in range(0, len(purchases), _MAX_IDS)]
