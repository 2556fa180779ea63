"""``stickers:``: how many and how valuable the stickers on an item must be.

Only the stickers that pass the filters count: ``names`` (only these), ``slots`` (only
these positions) and ``max_wear`` (a sticker whose wear is ``null`` is unworn, wear 0; a
sticker without a slot does not count when ``slots`` is set). The counted stickers' prices
are summed (a sticker not on sale has price 0). ``weight`` does not filter: it lets the
``discount`` and ``hold`` criteria add that share of the counted value to the reference.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import Field, model_validator

from .._money import Money, format_usd
from ..hookspecs import hookimpl
from ..models import Listing
from ..rules import (
    USD,
    Compiled,
    Criterion,
    EvalContext,
    NameView,
    Percent,
    RuleContext,
    StrictModel,
    Wear,
    format_percent,
)

__all__ = ["Stickers", "sticker_counter"]


class Stickers(StrictModel):
    """Sticker requirements; see the module documentation."""

    min_value: USD | None = None
    min_count: int | None = Field(None, ge=0, le=6)
    names: list[str] = Field(default_factory=list)
    slots: list[int] = Field(default_factory=list, max_length=6)
    max_wear: Wear | None = None
    weight: Percent | None = None

    @model_validator(mode="after")
    def _meaningful(self) -> Stickers:
        if (
            self.min_value is None
            and self.min_count is None
            and not self.names
            and not (self.weight)
        ):
            raise ValueError(
                "`stickers:` needs at least one of `min_value`, `min_count`, `names`, `weight`"
            )
        for slot in self.slots:
            if not 0 <= slot <= 5:
                raise ValueError(f"sticker slot {slot} does not exist (slots are 0 to 5)")
        return self


def sticker_counter(value: Any) -> Callable[[Listing], tuple[int, Money]]:
    """``listing -> (count, summed price)`` of the stickers ``value`` (a :class:`Stickers`)
    counts."""
    names = frozenset(value.names) if value.names else None
    slots = frozenset(value.slots) if value.slots else None
    max_wear = value.max_wear

    def count(listing: Listing) -> tuple[int, Money]:
        n = total = 0
        for sticker in listing.stickers:
            if names is not None and sticker.name not in names:
                continue
            if slots is not None and sticker.slot not in slots:
                continue
            if max_wear is not None and (sticker.wear or 0.0) > max_wear:
                continue
            n += 1
            total += sticker.price
        return n, total

    return count


def compile_stickers(value: Stickers, rule: RuleContext) -> Compiled:
    count = sticker_counter(value)
    min_count = value.min_count
    if min_count is None and value.names:
        min_count = 1
    min_value = value.min_value
    needs_details = bool(min_value or value.slots or value.max_wear is not None)
    names = frozenset(value.names)
    if min_count is None and min_value is None:
        return Compiled(summary=f"sticker value counted at {format_percent(value.weight or 0)}")

    def enough_stickers(listing: Listing, view: NameView, ctx: EvalContext) -> str | None:
        if not listing.stickers and listing.sticker_names:
            if needs_details:
                return "listing has sticker names but no sticker details (price, wear, slot)"
            n = sum(1 for s in listing.sticker_names if not names or s in names)
            value_ = 0
        else:
            n, value_ = count(listing)
        if min_count is not None and n < min_count:
            return f"{n} matching stickers, fewer than {min_count}"
        if min_value is not None and value_ < min_value:
            return f"sticker value {format_usd(value_)} below {format_usd(min_value)}"
        return None

    def stickers_kind(listing: Listing, view: NameView, ctx: EvalContext) -> int | None:
        if not listing.stickers:  # enough_stickers' returns (count() of none: 0, $0)
            if listing.sticker_names:
                if needs_details:
                    return 0
                n = sum(1 for s in listing.sticker_names if not names or s in names)
            else:
                n = 0
            value_ = 0
        else:
            n, value_ = count(listing)
        if min_count is not None and n < min_count:
            return 1
        if min_value is not None and value_ < min_value:
            return 2
        return None

    none_is_enough = not min_count and not min_value

    def enough(listing: Listing, view: NameView, ctx: EvalContext) -> bool:
        if not listing.stickers:
            if listing.sticker_names:
                return enough_stickers(listing, view, ctx) is None
            return none_is_enough
        n, value = count(listing)  # _enough, inlined: this runs per listing scanned
        return (min_count is None or n >= min_count) and (min_value is None or value >= min_value)

    # what the feed's sticker names already tell: a search can only show fewer counted
    # stickers (slots and wear filter some out) and, at the prices last seen, no more value
    needed = max(min_count or 0, 1 if min_value else 0)

    def could_be_enough(listing: Listing, view: NameView, ctx: EvalContext) -> bool:
        if listing.stickers:  # details known (a search's listing): the criterion itself
            return enough(listing, view, ctx)
        told = listing.sticker_names
        if len(told) < needed:  # (most feed listings: too few stickers to count, no list made)
            return False
        if needed and names and names.isdisjoint(told):  # none counts (most others: in C)
            return False
        counted = [s for s in told if not names or s in names]
        if len(counted) < needed:
            return False
        if not min_value:
            return True
        prices = ctx.sticker_prices
        total = 0
        for sticker in counted:
            price = prices.get(sticker)
            if price is None:
                return True  # a price not known (or too old): only a search can tell
            total += price
        return total >= min_value

    parts = []
    if min_count is not None:
        parts.append(f"at least {min_count} stickers")
    if min_value is not None:
        parts.append(f"sticker value at least {format_usd(min_value)}")
    # counting by name reads the feed's sticker_names; wear, slots and prices need a search
    return Compiled(
        predicate=enough_stickers,
        test=enough,
        kinds=stickers_kind,
        exact=True,
        summary=", ".join(parts),
        needs_search=needs_details,
        feed_test=could_be_enough if needs_details else None,
        listing_only=True,
        raw_fields=frozenset({"stickers", "sticker_names"}),
    )


@hookimpl
def snipe_register_criteria() -> list[Criterion]:
    return [
        Criterion(
            key="stickers",
            schema=Stickers,
            compile=compile_stickers,
            description="sticker count and value, with name, slot and wear filters, and a "
            "weight adding sticker value to the reference price",
            example='stickers: {min_value: "20.00", max_wear: 0.1, weight: 10}',
        )
    ]
