"""``float:`` (the wear value) and ``phases:`` (Doppler phases).

A listing without a float, or without a phase (``""`` on the wire is no phase), is
rejected by a rule that asks for one, with that reason. The phase of a listing is its
``phase`` field or, failing that, the phase written into its name. A rule asking for a
phase that its named items never come in is reported when the file is loaded.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Annotated, Any

from pydantic import BeforeValidator, model_validator

from ..hookspecs import hookimpl
from ..models import PHASES, Listing
from ..rules import (
    Compiled,
    Criterion,
    EvalContext,
    NameView,
    RuleContext,
    StrictModel,
    Wear,
    closest,
    known_phases,
    split_name,
)

__all__ = ["FloatRange", "PhaseSet"]


class FloatRange(StrictModel):
    """Inclusive wear bounds between 0 and 1."""

    min: Wear = 0.0
    max: Wear = 1.0

    @model_validator(mode="after")
    def _ordered(self) -> FloatRange:
        if self.min > self.max:
            raise ValueError(
                f"float min {self.min} is above max {self.max}: the rule can never match"
            )
        return self


def _phase(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected a phase name, got {value!r}")
    if value in PHASES:
        return value
    folded = {p.lower().replace(" ", ""): p for p in PHASES}
    exact = folded.get(value.lower().replace(" ", "").replace("_", ""))
    if exact is not None:
        return exact
    guess = closest(value, PHASES)
    hint = f"; did you mean {guess!r}?" if guess else f" (phases: {', '.join(sorted(PHASES))})"
    raise ValueError(f"unknown phase {value!r}{hint}")


def _as_list(value: Any) -> Any:
    return [value] if isinstance(value, str) else value


PhaseSet = Annotated[frozenset[Annotated[str, BeforeValidator(_phase)]], BeforeValidator(_as_list)]


def compile_float(value: FloatRange, rule: RuleContext) -> Compiled:
    low, high = value.min, value.max

    def in_range(listing: Listing, view: NameView, ctx: EvalContext) -> str | None:
        wear = listing.float_value
        if wear is None:
            return f"listing has no float (rule wants {low:g}-{high:g})"
        if wear < low:
            return f"float {wear:.6g} below min {low:g}"
        if wear > high:
            return f"float {wear:.6g} above max {high:g}"
        return None

    def within(listing: Listing, view: NameView, ctx: EvalContext) -> bool:
        wear = listing.float_value
        return wear is not None and low <= wear <= high

    def wear_kind(listing: Listing, view: NameView, ctx: EvalContext) -> Hashable | None:
        wear = listing.float_value  # in_range's returns, in order
        if wear is None:
            return 0
        if wear < low:
            return 1 if _plain(wear) else (1, wear)
        if wear > high:
            return 2 if _plain(wear) else (2, wear)
        return None

    return Compiled(
        predicate=in_range,
        test=within,
        kinds=wear_kind,
        exact=True,
        summary=f"float {low:g}-{high:g}",
        needs_search=False,
        listing_only=True,
        raw_fields=frozenset({"float_value"}),
    )


def _plain(wear: float) -> bool:
    """Whether ``f"{wear:.6g}"`` is written without an exponent (``0.123457``, not
    ``1e-05``): the wears whose reasons are of one kind. Any other is its own kind."""
    return wear == 0 or 1e-4 <= abs(wear) < 1e5


def compile_phases(value: frozenset[str], rule: RuleContext) -> Compiled:
    if not value:
        rule.error("`phases:` is empty: the rule can never match")
        return Compiled()
    wanted = frozenset(value)
    shown = ", ".join(sorted(wanted))
    _check_names_have_phases(wanted, rule)

    def has_phase(listing: Listing, view: NameView, ctx: EvalContext) -> str | None:
        phase = listing.phase or view.phase
        if phase in wanted:
            return None
        if phase is None:
            return f"listing has no phase (rule wants {shown})"
        return f"phase {phase} not in {shown}"

    def wanted_phase(listing: Listing, view: NameView, ctx: EvalContext) -> bool:
        return (listing.phase or view.phase) in wanted

    def phase_kind(listing: Listing, view: NameView, ctx: EvalContext) -> Hashable | None:
        # has_phase's returns: no phase (0), or the phase, a word of its reason
        phase = listing.phase or view.phase
        if phase in wanted:
            return None
        return 0 if phase is None else phase

    return Compiled(
        predicate=has_phase,
        test=wanted_phase,
        kinds=phase_kind,
        exact=True,
        summary=f"phase {shown}",
        needs_search=False,
        listing_only=True,
        raw_fields=frozenset({"phase"}),
    )


def _check_names_have_phases(wanted: frozenset[str], rule: RuleContext) -> None:
    match = rule.values.get("match")
    names: list[str] = list(getattr(match, "names", []))
    if not names:
        return
    impossible = []
    for name in names:
        parts = split_name(name)
        if parts.phase is not None:
            phases: frozenset[str] | None = frozenset({parts.phase})
        else:
            phases = known_phases(name)
        if phases is None:
            continue
        if not phases:
            impossible.append(f"{name!r} has no phases (it is not a Doppler)")
        elif not phases & wanted:
            impossible.append(f"{name!r} comes only in {', '.join(sorted(phases))}")
    if not impossible:
        return
    text = "; ".join(impossible)
    every_name = len(impossible) == len(names)
    if every_name and not (getattr(match, "patterns", None) or getattr(match, "regex", None)):
        rule.error(f"never matches: {text}")
    else:
        rule.warn(f"some names can never match: {text}")


@hookimpl
def snipe_register_criteria() -> list[Criterion]:
    return [
        Criterion(
            key="float",
            schema=FloatRange,
            compile=compile_float,
            description="wear (float) range, inclusive",
            example="float: {min: 0.0, max: 0.07}",
        ),
        Criterion(
            key="phases",
            schema=PhaseSet,
            compile=compile_phases,
            description="Doppler phases to accept (a set)",
            example="phases: [Ruby, Sapphire, Black Pearl]",
        ),
    ]
