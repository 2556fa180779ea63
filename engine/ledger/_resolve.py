"""What the service's word about a purchase means for it (pure logic).

Only the service settles money: ``GET /v1/check-many-project-id`` (a trade for every
``project_id`` it knows), ``POST /v2/my-history`` (the account's trades) and the buy answer
itself. The local clock only says when to ask again, never what happened:

- a trade found: its status says where the purchase stands (:func:`resolve`); a refund is
  status 6, escrow ``failed`` or a refunded history row, never "``send_until`` passed";
- an id absent: nothing by itself. "Not bought" (:func:`release`) needs the id absent from
  check-many at least twice, minutes apart, past the grace after the request, *and* no
  matching row in my-history (:func:`history_match`); the purchase is then RELEASED,
  watched for a day, and moves on late if the service shows it after all;
- a released purchase still absent when its watch day is over becomes FAILED.

:meth:`Ledger.resolve`, :meth:`Ledger.release` and :meth:`Ledger.resolve_history` apply
these in one transaction each.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..models import HistoryTrade, ProjectTrade, TradeStatus
from ._records import Purchase
from ._states import IN_FLIGHT_STATES, TRANSITIONS, PurchaseState

__all__ = [
    "DEFAULT_ABSENCE_GAP",
    "DEFAULT_GRACE",
    "DEFAULT_HISTORY_SLACK",
    "DEFAULT_WATCH",
    "Absence",
    "Resolution",
    "history_match",
    "is_overdue",
    "release",
    "resolve",
    "resolve_history",
]

DEFAULT_GRACE = 300.0
"""Seconds after the request before an absent ``project_id`` counts as an absence at all
(the service shows a purchase about a minute after it)."""

DEFAULT_ABSENCE_GAP = 180.0
"""The two absences that may release a purchase are at least this many seconds apart."""

DEFAULT_WATCH = 86_400.0
"""A released purchase is watched this long for a late appearance."""

DEFAULT_HISTORY_SLACK = 120.0
"""A history row without ``project_id`` matches a purchase of its ``item_id`` created at
most this long before the purchase was written (clocks differ)."""

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


@dataclass(frozen=True, slots=True)
class Absence:
    """What the service said about a ``project_id`` it did not show.

    ``first`` and ``last`` are when check-many-project-id answered without it (counted only
    past the grace after the request); ``history_clear`` is true when my-history, read over
    the purchase's time, has no row that matches it."""

    first: float
    last: float
    history_clear: bool


def sent_at(purchase: Purchase) -> float:
    """When the request may have left at the latest: an UNKNOWN purchase was sent no
    earlier than when it became UNKNOWN."""
    return purchase.updated_at if purchase.state is _S.UNKNOWN else purchase.created_at


def resolve(
    purchase: Purchase, trade: ProjectTrade | None, *, now: float, watch: float = DEFAULT_WATCH
) -> Resolution | None:
    """The move ``trade`` (``None``: the id was absent) calls for, or ``None``.

    An absence moves nothing, except a released purchase whose watch is over (FAILED).
    Never returns a move the state machine refuses: a purchase already further along (or
    final) is left as it is.
    """
    target = _absent(purchase, now, watch) if trade is None else _from_trade(purchase, trade, now)
    if target is None or target.state not in TRANSITIONS[purchase.state]:
        return None
    return target


def release(
    purchase: Purchase,
    absence: Absence,
    *,
    grace: float = DEFAULT_GRACE,
    gap: float = DEFAULT_ABSENCE_GAP,
) -> Resolution | None:
    """RELEASED when ``absence`` proves "not bought": two absences past the grace, at
    least ``gap`` apart, and a clear history; else ``None`` (keep the budget, ask again)."""
    if purchase.state not in IN_FLIGHT_STATES:
        return None
    sent = sent_at(purchase)
    if absence.first - sent < grace or absence.last - absence.first < gap:
        return None
    if not absence.history_clear:
        return None
    return Resolution(
        _S.RELEASED,
        reason=(
            f"not bought: absent from check-many-project-id {absence.first - sent:.0f} s and"
            f" {absence.last - sent:.0f} s after the request, and not in my-history"
        ),
        details={"source": "check-many-project-id and my-history"},
    )


def history_match(
    purchase: Purchase, rows: Iterable[HistoryTrade], *, slack: float = DEFAULT_HISTORY_SLACK
) -> HistoryTrade | None:
    """The buy row of my-history that is this purchase: same ``project_id`` when the row
    carries one, else the same ``item_id`` bought no earlier than the purchase was written
    (less ``slack``)."""
    for row in rows:
        if row.action not in (None, "buy"):
            continue
        if row.project_id:
            if row.project_id == purchase.project_id:
                return row
            continue
        if (
            row.item_id == purchase.item_id
            and row.created is not None
            and row.created >= purchase.created_at - slack
        ):
            return row
    return None


def resolve_history(purchase: Purchase, row: HistoryTrade) -> Resolution | None:
    """The move a matching my-history row calls for: it happened, at the row's price."""
    details: dict[str, Any] = {"source": "my-history", "trade_status": row.status}
    if row.price is not None:
        details["charged_from"] = "my-history"
    known: dict[str, Any] = {"charged_price": row.price, "marketplace_id": row.id}
    if row.status == TradeStatus.COMPLETED:
        target = Resolution(_S.COMPLETED, details=details, **known)
    elif row.status == TradeStatus.REFUNDED:
        target = Resolution(_S.REFUNDED, reason="refunded (my-history)", details=details, **known)
    elif purchase.unlock_at is not None or purchase.allow_trade_locked:
        target = Resolution(_S.RESERVED, details=details, **known)
    else:
        target = Resolution(_S.BOUGHT, details=details, **known)
    if target.state not in TRANSITIONS[purchase.state]:
        return None
    return target


def is_overdue(purchase: Purchase, now: float) -> bool:
    """A trade past its ``send_until`` that the service still calls open: shown to the
    user, never refunded on the local clock's say-so."""
    return (
        purchase.state in (_S.BOUGHT, _S.RESERVED)
        and purchase.send_until is not None
        and now > purchase.send_until
    )


def _absent(purchase: Purchase, now: float, watch: float) -> Resolution | None:
    if purchase.state is not _S.RELEASED or now - purchase.updated_at < watch:
        return None  # an absence alone proves nothing; see release()
    return Resolution(
        _S.FAILED,
        reason=f"not seen in the {watch / 3600:.0f} h after it was released",
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
    if trade.price is not None and trade.price != purchase.charged_price:
        details["charged_from"] = "trade"
    if purchase.state is _S.RELEASED:
        details["late"] = True
    if trade.status == TradeStatus.COMPLETED:
        return Resolution(_S.COMPLETED, details=details, **known)
    if trade.status == TradeStatus.REFUNDED or trade.escrow_status == "failed":
        reason = trade.reason or "declined and refunded"
        return Resolution(_S.REFUNDED, reason=reason, details=details, **known)
    # Past send_until and still open is overdue (is_overdue), not refunded: a late
    # acceptance (status 5) still charges the money. Whether the lock still runs (RESERVED
    # or BOUGHT) moves no money, so the clock may say that.
    unlock_at = trade.unlock_at if trade.unlock_at is not None else purchase.unlock_at
    if unlock_at is not None and unlock_at > now:
        return Resolution(_S.RESERVED, details=details, **known)
    return Resolution(_S.BOUGHT, details=details, **known)
