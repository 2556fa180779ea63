"""``price:`` bounds, ``discount:`` versus a reference price, and the built-in
``platform_price`` reference source (the listing's own suggested price).

Discounts are compared exactly, in integers: ``price <= reference x (1 - min)``. With
``stickers.weight``, the reference is raised by that share of the listing's counted sticker
value ("count 10% of the sticker value"), so a stickered item may cost more.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, cast

from pydantic import Field, model_validator

from .._money import Money, format_usd
from ..hookspecs import hookimpl
from ..models import Listing
from ..rules import (
    BASIS_POINTS,
    USD,
    Compiled,
    Criterion,
    Duration,
    EvalContext,
    NameView,
    Percent,
    PriceSource,
    Quote,
    RuleContext,
    StrictModel,
    closest,
    duration_shape,
    format_duration,
    format_percent,
)
from ._stickers import sticker_counter

__all__ = [
    "Chosen",
    "Discount",
    "PlatformPrice",
    "PriceBounds",
    "Worth",
    "reference_chooser",
    "worth_function",
]

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
    """At least ``min`` percent below the reference named by ``versus``.

    ``versus`` may list several sources: the lowest usable one is the reference; with
    ``agree`` every listed source must give a usable reference and the highest may be at
    most ``agree`` percent above the lowest. Guards: a reference with fewer than
    ``min_observations`` observations, or data older than ``max_age``, is no reference
    (the reason says which guard failed). A source that does not report what a guard
    checks fails it: a guard is there to refuse what cannot be shown trustworthy.
    """

    min: Percent
    versus: str | tuple[str, ...] = "platform_price"
    agree: Percent | None = None
    min_observations: int | None = Field(None, ge=1)
    max_age: Duration | None = None

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        # `discount: 20` means `discount: {min: 20}`
        return data if isinstance(data, dict) else {"min": data}

    @model_validator(mode="after")
    def _sources(self) -> Discount:
        if isinstance(self.versus, tuple):
            if not self.versus:
                raise ValueError("`versus` lists no price source")
            if len(set(self.versus)) != len(self.versus):
                raise ValueError("`versus` names a price source twice")
        if self.agree is not None and len(self.sources) < 2:
            raise ValueError("`agree` needs at least two sources in `versus`")
        return self

    @property
    def sources(self) -> tuple[str, ...]:
        return (self.versus,) if isinstance(self.versus, str) else self.versus

    def shown(self) -> str:
        return " | ".join(self.sources) if len(self.sources) > 1 else self.sources[0]


class PlatformPrice(PriceSource):
    """The listing's own ``platform_price`` (the service's suggested external price)."""

    name = "platform_price"
    description = "the listing's platform_price field (the service's suggested price)"
    every = None  # comes with each listing: nothing to fetch

    def reference(self, listing: Listing, view: NameView, ctx: EvalContext) -> Money | None:
        return listing.platform_price or None

    def quote(self, listing: Listing, view: NameView, ctx: EvalContext) -> Quote | None:
        """The listing's own price, current (as of now): never a table of the context,
        which the engine fills only for the sources it fetches (this one is never
        fetched), so a discount against it reads the listing alone."""
        price = listing.platform_price
        return Quote(price, None, ctx.now) if price else None


@dataclass(frozen=True, slots=True)
class Chosen:
    """The reference a rule measured a listing against: the source, its quote, and the
    worth (USD x 1000 x 10000, with a sticker weight added)."""

    source: str
    quote: Quote
    worth: int

    def extras(self, now: float) -> list[str]:
        """``["54 observations", "3m old"]``: what the source reports beyond the price."""
        parts = []
        if self.quote.observations is not None:
            parts.append(f"{self.quote.observations} observations")
        if self.quote.as_of is not None and now - self.quote.as_of >= 1:
            parts.append(f"{format_duration(now - self.quote.as_of)} old")
        return parts

    def detail(self, now: float) -> str:
        """``"market.p25 $12.00, 54 observations, 3m old"``."""
        return ", ".join([f"{self.source} {format_usd(self.quote.price)}", *self.extras(now)])


Chooser = Callable[[Listing, NameView, EvalContext], "Chosen | str"]
"""The reference for a listing, or the reason there is none."""


def sticker_weighted(rule: RuleContext) -> bool:
    """Whether the rule's references count a share of the stickers' value (which only a
    search tells, not the feed)."""
    return bool(getattr(rule.values.get("stickers"), "weight", None))


def reference_chooser(rule: RuleContext, value: Discount | None) -> Chooser | None:
    """The reference chooser of ``discount`` (and ``hold``) for this rule, or ``None``
    (after reporting an error) when ``versus`` names an unknown source."""
    sources = value.sources if value is not None else (PlatformPrice.name,)
    resolved: list[tuple[str, PriceSource]] = []
    for i, name in enumerate(sources):
        source = rule.price_sources.get(name)
        if source is None:
            guess = closest(name, rule.price_sources)
            hint = f"; did you mean {guess!r}?" if guess else ""
            known = ", ".join(sorted(rule.price_sources)) or "none"
            path = (
                ("versus",)
                if len(sources) == 1 and isinstance(getattr(value, "versus", None), str)
                else ("versus", i)
            )
            rule.error(f"unknown price source {name!r}{hint} (registered: {known})", *path)
            continue
        resolved.append((name, source))
    if len(resolved) != len(sources):
        return None
    stickers = rule.values.get("stickers")
    weight = getattr(stickers, "weight", None) or 0
    count = sticker_counter(stickers) if weight else None
    min_obs = value.min_observations if value is not None else None
    max_age = value.max_age if value is not None else None
    agree = value.agree if value is not None else None

    def guard(name: str, quote: Quote, now: float) -> str | None:
        if min_obs is not None:
            seen = quote.observations
            if seen is None:
                return f"{name} fails min_observations {min_obs}: it counts no observations"
            if seen < min_obs:
                return f"{name} fails min_observations {min_obs}: {seen} observations"
        if max_age is not None:
            if quote.as_of is None:
                return f"{name} fails max_age {format_duration(max_age)}: its age is unknown"
            age = now - quote.as_of
            if age > max_age:
                return (
                    f"{name} fails max_age {format_duration(max_age)}: {format_duration(age)} old"
                )
        return None

    def pick(listing: Listing, view: NameView, ctx: EvalContext) -> Chosen | str:
        usable: list[tuple[str, Quote]] = []
        problems: list[str] = []
        for name, source in resolved:
            quote = source.quote(listing, view, ctx)
            if quote is None or quote.price <= 0:
                phase = listing.phase or view.phase
                problems.append(
                    f"no reference price from {name} for this item"
                    + (f" in phase {phase}" if phase else "")
                )
                continue
            failed = guard(name, quote, ctx.now)
            if failed is not None:
                problems.append(failed)
                continue
            usable.append((name, quote))
        if agree is not None and problems:
            return "; ".join(problems) + " (agree needs every source)"
        if not usable:
            return "; ".join(problems)
        name, quote = min(usable, key=lambda pair: pair[1].price)
        if agree is not None:
            high_name, high = max(usable, key=lambda pair: pair[1].price)
            if high.price * BASIS_POINTS > quote.price * (BASIS_POINTS + agree):
                apart = (high.price - quote.price) * BASIS_POINTS / quote.price
                return (
                    f"references disagree: {name} {format_usd(quote.price)} and {high_name} "
                    f"{format_usd(high.price)} are {format_percent(apart)} apart, more than "
                    f"agree {format_percent(agree)}"
                )
        worth = quote.price * BASIS_POINTS
        if count is not None:
            worth += count(listing)[1] * weight
        return Chosen(name, quote, worth)

    guarded = min_obs is not None or max_age is not None
    (only_name, only_source), *others = resolved if resolved else [("", None)]

    def pick_one(listing: Listing, view: NameView, ctx: EvalContext) -> Chosen | str:
        # pick's answer for one source and no ``agree``, without its lists
        quote = only_source.quote(listing, view, ctx)  # type: ignore[union-attr]
        if quote is None or quote.price <= 0:
            phase = listing.phase or view.phase
            return f"no reference price from {only_name} for this item" + (
                f" in phase {phase}" if phase else ""
            )
        if guarded:
            failed = guard(only_name, quote, ctx.now)
            if failed is not None:
                return failed
        worth = quote.price * BASIS_POINTS
        if count is not None:
            worth += count(listing)[1] * weight
        return Chosen(only_name, quote, worth)

    answer = pick_one if not others and agree is None else pick  # the same answers

    last: list[Any] = [None, None, None, ""]

    def choose(listing: Listing, view: NameView, ctx: EvalContext) -> Chosen | str:
        # The latest answer kept: a rule's test (cheap_enough) and then its kinds or
        # predicate ask it of the same listing in the same context one after the other
        # (a feed event's checks, then its skip count). By identity: a listing (a frozen
        # model, or a search's stand-in read once) and a context (frozen; its mappings
        # never changed once used) are the same values while they are the same objects,
        # and the references held here keep them from being reused.
        if listing is last[0] and ctx is last[1] and view is last[2]:
            return cast("Chosen | str", last[3])
        chosen = answer(listing, view, ctx)
        last[:] = listing, ctx, view, chosen
        return chosen

    return choose


def worth_function(rule: RuleContext, discount: Discount | None) -> Worth | None:
    """The reference worth used by ``hold`` for this rule (``None`` after reporting an
    error when ``versus`` names no registered source)."""
    choose = reference_chooser(rule, discount)
    if choose is None:
        return None

    def worth(listing: Listing, view: NameView, ctx: EvalContext) -> int | None:
        chosen = choose(listing, view, ctx)
        return chosen.worth if isinstance(chosen, Chosen) else None

    return worth


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

    def bounds_kind(listing: Listing, view: NameView, ctx: EvalContext) -> int | None:
        price = listing.price  # in_bounds' returns, in order
        if price < low:
            return 0
        if high is not None and price > high:
            return 1
        return None

    shown_high = format_usd(high) if high is not None else "any"
    return Compiled(
        predicate=in_bounds,
        test=within,
        kinds=bounds_kind,
        exact=True,
        summary=f"price {format_usd(low)}-{shown_high}",
        needs_search=False,
        listing_only=True,
        raw_fields=frozenset({"price"}),
    )


def compile_discount(value: Discount, rule: RuleContext) -> Compiled:
    choose = reference_chooser(rule, value)
    min_points = value.min
    if choose is None:
        return Compiled()
    if min_points == BASIS_POINTS:
        rule.warn("a 100% discount means a free item: the rule will almost never match", "min")

    def discounted(listing: Listing, view: NameView, ctx: EvalContext) -> str | None:
        chosen = choose(listing, view, ctx)
        if isinstance(chosen, str):
            return chosen
        reason = discount_reason(listing.price, chosen.worth, min_points, f"vs {chosen.source}")
        if reason is None:
            return None
        head, worth = reason[: reason.rindex(" (reference")], chosen.worth // BASIS_POINTS
        extras = chosen.extras(ctx.now)
        if worth != chosen.quote.price:
            extras = [f"{format_usd(chosen.quote.price)} before stickers", *extras]
        return f"{head} (reference {', '.join([format_usd(worth), *extras])})"

    keep = BASIS_POINTS - min_points
    squared = BASIS_POINTS * BASIS_POINTS

    def cheap_enough(listing: Listing, view: NameView, ctx: EvalContext) -> bool:
        chosen = choose(listing, view, ctx)
        return not isinstance(chosen, str) and listing.price * squared <= chosen.worth * keep

    stickers = rule.values.get("stickers")
    plain = value.min_observations is None and value.max_age is None
    weight = getattr(stickers, "weight", None) or 0
    # the common case: the listing's own platform_price, as of now (with or without a
    # sticker weight); its test and its skip kind read the listing alone (no Quote or
    # Chosen made): _own_price
    own_price = value.sources == (PlatformPrice.name,) and plain

    def discount_kind(listing: Listing, view: NameView, ctx: EvalContext) -> Hashable | None:
        # discounted's reason, told by what its text is made of beyond numbers: the
        # chooser's own text when there is no reference (few distinct: source and phase
        # names), else "no discount"/"discount", the source, and which extras it shows
        chosen = choose(listing, view, ctx)
        if isinstance(chosen, str):
            return chosen
        price, worth = listing.price, chosen.worth
        if price * squared <= worth * keep:
            return None
        quote = chosen.quote
        as_of = quote.as_of
        age = None if as_of is None or ctx.now - as_of < 1 else duration_shape(ctx.now - as_of)
        return (
            1 - price * BASIS_POINTS / worth < 0,  # discount_reason's "no discount"
            chosen.source,
            worth // BASIS_POINTS != quote.price,
            quote.observations is None,
            age,
        )

    test: Callable[[Listing, NameView, EvalContext], bool] = cheap_enough
    kind: Callable[[Listing, NameView, EvalContext], Hashable | None] = discount_kind
    if own_price:
        counter = sticker_counter(stickers) if weight else None
        test, kind = _own_price(counter, weight, keep, discount_kind)

    def describe(listing: Listing, view: NameView, ctx: EvalContext) -> str:
        chosen = choose(listing, view, ctx)
        if isinstance(chosen, str):
            return f"discount at least {format_percent(min_points)} vs {value.shown()}: {chosen}"
        got = (1 - listing.price * BASIS_POINTS / chosen.worth) * BASIS_POINTS
        return (
            f"discount {format_percent(got)} (at least {format_percent(min_points)}) "
            f"vs {chosen.detail(ctx.now)}"
        )

    guards = []
    if value.min_observations is not None:
        guards.append(f"min_observations {value.min_observations}")
    if value.max_age is not None:
        guards.append(f"max_age {format_duration(value.max_age)}")
    if value.agree is not None:
        guards.append(f"agreeing within {format_percent(value.agree)}")
    shown = (
        value.shown()
        if value.agree is not None
        else (f"the lowest of {value.shown()}" if len(value.sources) > 1 else value.shown())
    )
    summary = f"discount at least {format_percent(min_points)} vs {shown}"
    if guards:
        summary += f" ({', '.join(guards)})"
    return Compiled(
        predicate=discounted,
        test=test,
        kinds=kind,
        exact=True,
        summary=summary,
        describe=describe,
        references=value.sources,
        needs_search=sticker_weighted(rule),
        # against the listing's own platform_price alone: its quote is as of now, so no
        # guard or reason reads the clock (age 0), and no other reference is read
        listing_only=value.sources == (PlatformPrice.name,),
        # what the chooser reads of the listing (its phase: the reasons of a missing
        # reference name it), and the stickers a weight adds to the reference
        raw_fields=frozenset(
            {"price", "platform_price", "phase", *(["stickers"] if sticker_weighted(rule) else [])}
        )
        if value.sources == (PlatformPrice.name,)
        else None,
    )


def _own_price(
    count: Callable[[Listing], tuple[int, Money]] | None,
    weight: int,
    keep: int,
    chosen_kind: Callable[[Listing, NameView, EvalContext], Hashable | None],
) -> tuple[
    Callable[[Listing, NameView, EvalContext], bool],
    Callable[[Listing, NameView, EvalContext], Hashable | None],
]:
    """A discount against the listing's own platform_price (no guard), with a sticker
    weight or none (``count`` ``None``): its test and kind as the chooser's answer gives
    them (pick_one's worth, the price plus ``weight`` of the counted stickers' value; a
    quote as of now, so no age; no observations), with no Quote or Chosen made. ``keep``:
    100% less the discount, in basis points; ``chosen_kind``: the kind by way of the
    chooser (no reference)."""
    squared = BASIS_POINTS * BASIS_POINTS

    def cheap_enough(listing: Listing, view: NameView, ctx: EvalContext) -> bool:
        ref = listing.platform_price
        if not ref or ref <= 0:
            return False
        worth = ref * BASIS_POINTS
        if count is not None and listing.stickers:  # (a feed event's: no details, none counted)
            worth += count(listing)[1] * weight
        return listing.price * squared <= worth * keep

    def discount_kind(listing: Listing, view: NameView, ctx: EvalContext) -> Hashable | None:
        ref = listing.platform_price
        if not ref or ref <= 0:
            return chosen_kind(listing, view, ctx)  # the chooser's text (no reference)
        price, worth = listing.price, ref * BASIS_POINTS
        added = False  # (no stickers counted: the worth is the price's)
        if count is not None and listing.stickers:
            worth += count(listing)[1] * weight
            added = worth // BASIS_POINTS != ref
        if price * squared <= worth * keep:
            return None
        # the chooser's kind (no discount?, platform_price, stickers added?, True, None),
        # as an int 0-3: no tuple made and hashed per listing (the kind is any hashable
        # value; the others here are the chooser's text)
        return (1 - price * BASIS_POINTS / worth < 0) * 2 + added

    return cheap_enough, discount_kind


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
