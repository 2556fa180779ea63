"""``hold:``: accept trade-locked listings, on conditions.

A trade-locked listing (one with ``unlock_at``) is delivered only after the lock ends, and
must be delivered before ``send_until`` or the purchase is refunded. A rule without
``hold:`` never buys one (the core enforces that). With ``hold:`` a locked listing is
accepted only when

- it unlocks within ``max_wait`` from now;
- it has a ``send_until`` (without it the deadline is unknown: rejected), and at least
  ``min_send_window`` lies between the unlock (or now, if later) and ``send_until``;
- it is cheaper than the reference by the rule's ``discount.min`` plus ``extra_discount``
  plus ``extra_discount_per_day`` for every started day of waiting.

Tradable listings pass this criterion untouched.
"""

from __future__ import annotations

from collections.abc import Hashable

from pydantic import Field

from ..hookspecs import hookimpl
from ..models import Listing
from ..rules import (
    BASIS_POINTS,
    Compiled,
    Criterion,
    Duration,
    EvalContext,
    NameView,
    Percent,
    RuleContext,
    StrictModel,
    duration_shape,
    format_duration,
    format_percent,
)
from ._price import Discount, discount_reason, sticker_weighted, worth_function

__all__ = ["Hold"]

_DAY = 86_400


class Hold(StrictModel):
    """Hold tolerance; see the module documentation."""

    max_wait: Duration
    min_send_window: Duration = Field(3_600)
    extra_discount: Percent = 0
    extra_discount_per_day: Percent = 0


def compile_hold(value: Hold, rule: RuleContext) -> Compiled:
    discount = rule.values.get("discount")
    base_points: int = getattr(discount, "min", 0)
    versus = discount.shown() if isinstance(discount, Discount) else "platform_price"
    needs_reference = bool(base_points or value.extra_discount or value.extra_discount_per_day)
    worth = (
        worth_function(rule, discount if isinstance(discount, Discount) else None)
        if needs_reference
        else None
    )
    if value.max_wait > 30 * _DAY:
        rule.warn(f"max_wait {format_duration(value.max_wait)} is longer than any trade lock")
    max_wait, window = value.max_wait, value.min_send_window
    extra, per_day = value.extra_discount, value.extra_discount_per_day

    def hold_ok(listing: Listing, view: NameView, ctx: EvalContext) -> str | None:
        unlock_at = listing.unlock_at
        if unlock_at is None:
            return None
        wait = max(0.0, unlock_at - ctx.now)
        if wait > max_wait:
            return (
                f"trade-locked for another {format_duration(wait)}, more than "
                f"hold.max_wait {format_duration(max_wait)}"
            )
        send_until = listing.send_until
        if send_until is None:
            return "trade-locked listing without send_until: its delivery deadline is unknown"
        left = send_until - max(float(unlock_at), ctx.now)
        if left < window:
            return (
                f"only {format_duration(left)} between unlock and send_until, less than "
                f"hold.min_send_window {format_duration(window)}"
            )
        if worth is None:
            return None
        days = -(-int(wait) // _DAY)  # every started day counts
        needed = min(10_000, base_points + extra + per_day * days)
        ref = worth(listing, view, ctx)
        if ref is None:
            return f"no reference price from {versus} to price the wait"
        return discount_reason(listing.price, ref, needed, f"needed for a {days}-day hold")

    def hold_kind(listing: Listing, view: NameView, ctx: EvalContext) -> Hashable | None:
        unlock_at = listing.unlock_at  # hold_ok's returns, in order
        if unlock_at is None:
            return None
        wait = max(0.0, unlock_at - ctx.now)
        if wait > max_wait:
            return (0, duration_shape(wait))
        send_until = listing.send_until
        if send_until is None:
            return 1
        left = send_until - max(float(unlock_at), ctx.now)
        if left < window:
            return (2, duration_shape(left))
        if worth is None:
            return None
        days = -(-int(wait) // _DAY)
        needed = min(10_000, base_points + extra + per_day * days)
        ref = worth(listing, view, ctx)
        if ref is None:
            return 3
        price = listing.price
        if price * BASIS_POINTS * BASIS_POINTS <= ref * (BASIS_POINTS - needed):
            return None
        return 4 if 1 - price * BASIS_POINTS / ref < 0 else 5  # discount_reason's two

    summary = f"trade lock up to {format_duration(max_wait)}"
    if extra or per_day:
        summary += f" for an extra {format_percent(extra)} + {format_percent(per_day)}/day discount"

    def tradable_or_ok(listing: Listing, view: NameView, ctx: EvalContext) -> bool:
        return listing.unlock_at is None or hold_ok(listing, view, ctx) is None

    return Compiled(
        predicate=hold_ok,
        test=tradable_or_ok,
        kinds=hold_kind,
        exact=True,
        summary=summary,
        trade_locked=float(max_wait),
        needs_search=sticker_weighted(rule),
        references=(
            (discount.sources if isinstance(discount, Discount) else ("platform_price",))
            if worth is not None
            else ()
        ),
    )


@hookimpl
def snipe_register_criteria() -> list[Criterion]:
    return [
        Criterion(
            key="hold",
            schema=Hold,
            compile=compile_hold,
            description="accept trade-locked listings that unlock soon enough, leave time "
            "before send_until, and are cheaper by an extra discount",
            example="hold: {max_wait: 7d, min_send_window: 2d, extra_discount: 5}",
        )
    ]
