"""What snipe tells its owner: one :class:`Notice` per event, built from engine events by
pure functions, the same for every channel (each channel only lays it out).

Events: a purchase (bought, reserved, or of unknown outcome), a refund, HALTED, and the
daily summary. Money stays an int (USD x 1000) in :attr:`Notice.data`; the text shows
dollars.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

from .._events import EVENT_KINDS, DailySummary, EventKind, Notice
from .._money import format_usd

if TYPE_CHECKING:
    from ..ledger import Purchase
    from ..rules import Decision

__all__ = [
    "EVENT_KINDS",
    "DailySummary",
    "EventKind",
    "Notice",
    "halted_notice",
    "purchase_notice",
    "refund_notice",
    "summary_notice",
]

_BASIS_POINTS = 10_000


def _discount_bp(price: int, reference: int | None) -> int | None:
    if not reference or reference <= 0:
        return None
    return (reference - price) * _BASIS_POINTS // reference


def _percent(bp: int) -> str:
    return f"{bp // 100}.{abs(bp) % 100 // 10}%"


def purchase_notice(decision: Decision, outcome: str, detail: str | None, at: float) -> Notice:
    """The message for a purchase attempt that took money or may have (``bought``, or
    ``unknown``: the answer was lost and the engine resolves it by ``project_id``)."""
    listing = decision.listing
    reference = listing.platform_price
    bp = _discount_bp(decision.price, reference)
    reserved = detail == "reserved"
    if outcome == "bought":
        title = f"{'Reserved' if reserved else 'Bought'} {listing.name} for {_usd(decision.price)}"
    else:
        title = f"Purchase of {listing.name} of unknown outcome (being resolved)"
    lines = [f"price {_usd(decision.price)}"]
    if reference is not None:
        lines.append(f"reference {_usd(reference)}")
    if bp is not None:
        lines.append(f"discount {_percent(bp)}")
    lines.append(f"rule {decision.rule}")
    lines.append(f"item {listing.item_id}")
    if outcome != "bought" and detail:
        lines.append(f"detail: {detail}")
    return Notice(
        kind="purchase",
        title=title,
        lines=tuple(lines),
        at=at,
        image=listing.image,
        data={
            "outcome": "reserved" if reserved else outcome,
            "name": listing.name,
            "item_id": listing.item_id,
            "price": decision.price,
            "reference_price": reference,
            "discount_bp": bp,
            "rule": decision.rule,
            "image": listing.image,
            "detail": detail,
        },
    )


def refund_notice(purchase: Purchase, reason: str | None, at: float) -> Notice:
    """The message for a purchase the service refunded."""
    price = purchase.amount
    return Notice(
        kind="refund",
        title=f"Refunded: {purchase.name} ({_usd(price)})",
        lines=(
            f"reason: {reason or 'not given'}",
            f"rule {purchase.rule}",
            f"project_id {purchase.project_id}",
        ),
        at=at,
        data={
            "name": purchase.name,
            "item_id": purchase.item_id,
            "price": price,
            "rule": purchase.rule,
            "project_id": purchase.project_id,
            "reason": reason,
        },
    )


def halted_notice(reason: str, at: float) -> Notice:
    """The message for HALTED: buying stopped until a person looks."""
    return Notice(
        kind="halted",
        title="snipe HALTED: buying stopped",
        lines=(reason, "Reconciling goes on; restart snipe once the cause is fixed."),
        at=at,
        data={"reason": reason},
    )


def summary_notice(summary: DailySummary, at: float) -> Notice:
    """The message for the end of a UTC day."""
    if summary.dry_run:
        lines: tuple[str, ...] = (
            f"dry run: would buy {summary.purchases}, would spend {_usd(summary.spent)} "
            f"(daily cap {_usd(summary.cap_per_day)}); nothing was bought",
            f"would have committed {_usd(summary.spent_total)} in total "
            f"of {_usd(summary.cap_total)}",
        )
    elif summary.paper:
        lines = (
            f"paper: counted {summary.purchases} would-be purchases ({_usd(summary.spent)},"
            f" daily cap {_usd(summary.cap_per_day)}), missed {summary.failed},"
            f" pending {summary.unresolved}; nothing was bought",
            f"paper total {_usd(summary.spent_total)} of {_usd(summary.cap_total)}",
        )
    else:
        lines = (
            f"purchases {summary.purchases}, spent {_usd(summary.spent)} "
            f"(daily cap {_usd(summary.cap_per_day)})",
            f"refunds {summary.refunds} ({_usd(summary.refunded)}), failed {summary.failed}, "
            f"unresolved {summary.unresolved}",
            f"total committed {_usd(summary.spent_total)} of {_usd(summary.cap_total)}",
        )
    kind = "dry run " if summary.dry_run else "PAPER " if summary.paper else ""
    title = f"snipe {kind}daily summary {summary.day}"
    return Notice(
        kind="daily_summary",
        title=title,
        lines=lines,
        at=at,
        data={k: getattr(summary, k) for k in DailySummary.__dataclass_fields__},
    )


def utc_day(epoch: float) -> str:
    """``YYYY-MM-DD`` of ``epoch`` in UTC."""
    return dt.datetime.fromtimestamp(epoch, dt.UTC).strftime("%Y-%m-%d")


def _usd(amount: int) -> str:
    return format_usd(amount)
