"""``price:`` bounds, ``discount:`` versus a reference price, and the built-in
``platform_price`` reference source (the listing's own suggested price).

Discounts are compared exactly, in integers: ``price <= reference x (1 - min)``. With
``stickers.weight``, the reference is raised by that share of the listing's counted sticker
value ("count 10% of the sticker value"), so a stickered item may cost more.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import model_validator

from .._money import Money, format_usd
from ..hookspecs import hookimpl
from ..models import Listing
from ..rules._contract import (
    Compiled,
    Criterion,
    EvalContext,
    NameView,
    PriceSource,
    RuleContext,
)
from ..rules._schema import StrictModel, closest
from ..rules._values import BASIS_POINTS, USD, Percent, format_percent
from ._stickers import sticker_counter

__all__ = ["Discount", "PlatformPrice", "PriceBounds", "Worth", "worth_function"]

Worth = Callable[[Listing, NameView, EvalContext], int | None]
"""The reference worth of a listing, in USD x 1000 x 10000 (exact with a sticker weight),
or ``None`` when the source has no price for it."""


class PriceBounds(StrictModel):
    """Listing price bounds in dollars, both inclusive."""

    min: USD | None = None
    max: USD | None = None

    @model_validator(mode="after")
    def _ordered(self) -> PriceBounds:
        if self.min is None and self.max is None:
            raise ValueError("`price:` needs `min`, `max` or both")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(
                f"price min {format_usd(self.min)} is above max {format_usd(self.max)}: "
                "the rule can never match"
            )
        return self


class Discount(StrictModel):
    """At least ``min`` percent below the reference price named by ``versus``."""

    min: Percent
    versus: str = "platform_price"

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        # `discount: 20` means `discount: {min: 20}`
        return data if isinstance(data, dict) else {"min": data}


class PlatformPrice(PriceSource):
    """The listing's own ``platform_price`` (the service's suggested external price)."""

    name = "platform_price"
    description = "the listing's platform_price field (the service's suggested price)"

    def reference(self, listing: Listing, view: NameView, ctx: EvalContext) -> Money | None:
        return listing.platform_price or None


def worth_function(rule: RuleContext, versus: str) -> Worth | None:
    """The reference worth used by ``discount`` and ``hold`` for this rule, or ``None``
    (after reporting an error) when ``versus`` names no registered source."""
    source = rule.price_sources.get(versus)
    if source is None:
        guess = closest(versus, rule.price_sources)
        hint = f"; did you mean {guess!r}?" if guess else ""
        known = ", ".join(sorted(rule.price_sources)) or "none"
        rule.error(f"unknown price source {versus!r}{hint} (registered: {known})", "versus")
        return None
    reference = source.reference
    stickers = rule.values.get("stickers")
    weight = getattr(stickers, "weight", None) or 0
    if not weight:

        def plain(listing: Listing, view: NameView, ctx: EvalContext) -> int | None:
            ref = reference(listing, view, ctx)
            return ref * BASIS_POINTS if ref else None

        return plain
    count = sticker_counter(stickers)

    def with_stickers(listing: Listing, view: NameView, ctx: EvalContext) -> int | None:
        ref = reference(listing, view, ctx)
        if not ref:
            return None
        return ref * BASIS_POINTS + count(listing)[1] * weight

    return with_stickers


def discount_reason(price: Money, worth: int, min_points: int, what: str) -> str | None:
    """``None`` when ``price`` is at least ``min_points`` below ``worth``, else why not."""
    if price * BASIS_POINTS * BASIS_POINTS <= worth * (BASIS_POINTS - min_points):
        return None
    got = (1 - price * BASIS_POINTS / worth) * BASIS_POINTS
    reference = format_usd(worth // BASIS_POINTS)
    if got < 0:  # dearer than the reference: "a discount of -5%" reads like a riddle
        return (
            f"no discount (the price is {format_percent(-got)} above the reference), below "
            f"{format_percent(min_points)} {what} (reference {reference})"
        )
    return (
        f"discount {format_percent(got)} below {format_percent(min_points)} {what} "
        f"(reference {reference})"
    )


def compile_price(value: PriceBounds, rule: RuleContext) -> Compiled:
    low = value.min if value.min is not None else 0
    high = value.max
    max_price = rule.values.get("max_price")
    if high is not None and isinstance(max_price, int) and high > max_price:
        rule.warn(
            f"price max {format_usd(high)} is above max_price {format_usd(max_price)}; "
            "max_price wins",
            "max",
        )
    if isinstance(max_price, int) and low > max_price:
        rule.error(
            f"price min {format_usd(low)} is above max_price {format_usd(max_price)}: "
            "the rule can never match",
            "min",
        )

    def in_bounds(listing: Listing, view: NameView, ctx: EvalContext) -> str | None:
        price = listing.price
        if price < low:
            return f"price {format_usd(price)} below min {format_usd(low)}"
        if high is not None and price > high:
            return f"price {format_usd(price)} above max {format_usd(high)}"
        return None

    ceiling = high if high is not None else 1 << 62

    def within(listing: Listing, view: NameView, ctx: EvalContext) -> bool:
        return low <= listing.price <= ceiling

    shown_high = format_usd(high) if high is not None else "any"
    return Compiled(
        predicate=in_bounds, test=within, summary=f"price {format_usd(low)}-{shown_high}"
    )


def compile_discount(value: Discount, rule: RuleContext) -> Compiled:
    worth = worth_function(rule, value.versus)
    min_points = value.min
    what = f"vs {value.versus}"
    if worth is None:
        return Compiled()
    if min_points == BASIS_POINTS:
        rule.warn("a 100% discount means a free item: the rule will almost never match", "min")

    def discounted(listing: Listing, view: NameView, ctx: EvalContext) -> str | None:
        ref = worth(listing, view, ctx)
        if ref is None:
            return f"no reference price from {value.versus} for this item"
        return discount_reason(listing.price, ref, min_points, what)

    keep = BASIS_POINTS - min_points
    squared = BASIS_POINTS * BASIS_POINTS

    def cheap_enough(listing: Listing, view: NameView, ctx: EvalContext) -> bool:
        ref = worth(listing, view, ctx)
        return ref is not None and listing.price * squared <= ref * keep

    stickers = rule.values.get("stickers")
    if value.versus == PlatformPrice.name and not getattr(stickers, "weight", None):
        # the common case, in one call: the listing's own platform_price, no sticker weight
        def cheap_enough(listing: Listing, view: NameView, ctx: EvalContext) -> bool:
            ref = listing.platform_price
            return bool(ref) and listing.price * BASIS_POINTS <= ref * keep  # type: ignore[operator]

    return Compiled(
        predicate=discounted,
        test=cheap_enough,
        summary=f"discount at least {format_percent(min_points)} {what}",
    )


@hookimpl
def snipe_register_criteria() -> list[Criterion]:
    return [
        Criterion(
            key="price",
            schema=PriceBounds,
            compile=compile_price,
            description="listing price bounds in dollars, inclusive",
            example='price: {min: "1.00", max: "25.00"}',
        ),
        Criterion(
            key="discount",
            schema=Discount,
            compile=compile_discount,
            description="minimum discount in percent versus a reference price source",
            example="discount: {min: 20, versus: platform_price}",
        ),
    ]


@hookimpl
def snipe_register_price_sources() -> list[PriceSource]:
    return [PlatformPrice()]
