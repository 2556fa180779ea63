"""What the service's answer about a ``project_id`` means for a purchase (pure logic).

``GET /v1/check-many-project-id`` answers with a trade for every ``project_id`` it knows
and leaves the others out. An id left out one second after the request means nothing
yet; left out long after (the *grace* period, a few minutes) it means the purchase did
not happen (wire-notes.md). :func:`resolve` turns one answer into the move to make, or
``None`` when there is nothing to do yet; :meth:`Ledger.resolve` applies it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..models import ProjectTrade, TradeStatus
from ._records import Purchase
from ._states import IN_FLIGHT_STATES, TRANSITIONS, PurchaseState

__all__ = ["DEFAULT_GRACE", "Resolution", "resolve"]

DEFAULT_GRACE = 300.0
"""Seconds after the request after which an absent ``project_id`` means "not bought"."""

_S = PurchaseState


@dataclass(frozen=True, slots=True)
class Resolution:
    """A move to make, with what the answer told about the purchase."""

    state: PurchaseState
    reason: str | None = None
    charged_price: int | None = None
    marketplace_id: int | None = None
    unlock_at: int | None = None
    send_until: int | None = None
    details: dict[str, Any] = field(default_factory=dict)


def resolve(
    purchase: Purchase, trade: ProjectTrade | None, *, now: float, grace: float = DEFAULT_GRACE
) -> Resolution | None:
    """The move ``trade`` (``None``: the id was absent) calls for, or ``None``.

    Never returns a move the state machine refuses: a purchase already further along (or
    final) is left as it is.
    """
    target = _absent(purchase, now, grace) if trade is None else _from_trade(purchase, trade, now)
    if target is None or target.state not in TRANSITIONS[purchase.state]:
        return None
    return target


def _absent(purchase: Purchase, now: float, grace: float) -> Resolution | None:
    if purchase.state not in IN_FLIGHT_STATES:
        return None  # a known purchase missing from one answer is not evidence of anything
    # An UNKNOWN purchase was sent no earlier than when it became UNKNOWN.
    sent = purchase.updated_at if purchase.state is _S.UNKNOWN else purchase.created_at
    if now - sent < grace:
        return None
    return Resolution(
        _S.FAILED,
        reason=f"absent from the service {now - sent:.0f} s after the request",
        details={"source": "check-many-project-id"},
    )


def _from_trade(purchase: Purchase, trade: ProjectTrade, now: float) -> Resolution:
    known: dict[str, Any] = {
        "charged_price": trade.price,
        "marketplace_id": trade.id,
        "unlock_at": trade.unlock_at,
        "send_until": trade.send_until,
    }
    details: dict[str, Any] = {"source": "check-many-project-id", "trade_status": trade.status}
    if trade.done is not None:
        details["trade_done"] = trade.done
    if trade.trade_id:
        details["trade_id"] = trade.trade_id
    if trade.status == TradeStatus.COMPLETED:
        return Resolution(_S.COMPLETED, details=details, **known)
    if trade.status == TradeStatus.REFUNDED:
        reason = trade.reason or "declined and refunded"
        return Resolution(_S.REFUNDED, reason=reason, details=details, **known)
    send_until = trade.send_until if trade.send_until is not None else purchase.send_until
    if send_until is not None and now > send_until:
        return Resolution(_S.REFUNDED, reason="send_until passed", details=details, **known)
    unlock_at = trade.unlock_at if trade.unlock_at is not None else purchase.unlock_at
    if unlock_at is not None and unlock_at > now:
        return Resolution(_S.RESERVED, details=details, **known)
    return Resolution(_S.BOUGHT, details=details, **known)
