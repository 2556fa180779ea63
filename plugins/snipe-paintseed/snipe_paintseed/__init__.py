"""snipe-paintseed: buy items by pattern.

Adds the rule key ``paint_seed``::

    paint_seed:
      seeds: [661, 670, "955-960"]     # single seeds and inclusive ranges, 0 to 1000

A listing is accepted only when its ``paintseed`` (sent by the live service as an extra
field) is one of the seeds. A listing without a paint seed is rejected with that reason:
a pattern filter is never silently skipped.

The whole plugin is the hook below: ``snipe_register_criteria`` returns one
:class:`engine.rules.Criterion` (the key, the pydantic model validating its value, and
``compile``). ``compile`` runs once per rule when the rules file is loaded and returns a
plain closure; snipe calls that closure for each listing the rule watches.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BeforeValidator, Field, field_validator

from engine.hookspecs import hookimpl
from engine.models import Listing
from engine.rules import Compiled, Criterion, EvalContext, NameView, RuleContext, StrictModel

__all__ = ["PAINT_SEED", "PaintSeed", "parse_seeds", "snipe_register_criteria"]

MAX_SEED = 1000


def parse_seeds(value: object) -> object:
    """``[661, "955-960"]`` -> ``[661, 955, 956, ..., 960]``; anything else is left to
    pydantic to refuse with its own message."""
    if not isinstance(value, list):
        return value
    seeds: list[object] = []
    for item in value:
        if isinstance(item, str) and "-" in item:
            low, _, high = item.partition("-")
            if not (low.strip().isdigit() and high.strip().isdigit()):
                raise ValueError(f"{item!r} is not a range such as '955-960'")
            first, last = int(low), int(high)
            if first > last:
                raise ValueError(f"range {item!r} runs backwards")
            seeds.extend(range(first, last + 1))
        else:
            seeds.append(item)
    return seeds


class PaintSeed(StrictModel):
    """The value of ``paint_seed:``. ``StrictModel`` forbids unknown keys, so a typo such
    as ``seed:`` is reported with the closest key by ``snipe check``."""

    seeds: Annotated[
        list[Annotated[int, Field(ge=0, le=MAX_SEED)]],
        BeforeValidator(parse_seeds),
        Field(min_length=1),
    ]

    @field_validator("seeds")
    @classmethod
    def _unique(cls, seeds: list[int]) -> list[int]:
        return sorted(set(seeds))


def compile_paint_seed(value: PaintSeed, rule: RuleContext) -> Compiled:
    """Called once per rule at load time. Do the work here, not in the predicate."""
    wanted = frozenset(value.seeds)
    shown = _describe(value.seeds)
    if len(wanted) > 500:
        rule.warn(f"{len(wanted)} seeds is half of all patterns; is this a filter?", "seeds")

    def has_seed(listing: Listing, view: NameView, ctx: EvalContext) -> str | None:
        # Per listing: answer None to accept, or say exactly why not. Never raise on
        # missing data: reject with a reason instead.
        seed = listing.paintseed
        if seed is None:
            return "listing carries no paint seed"
        if seed in wanted:
            return None
        return f"paint seed {seed} not in {shown}"

    def seed_kind(listing: Listing, view: NameView, ctx: EvalContext) -> int | None:
        # Optional: which of has_seed's reasons it would give, without the text, so that
        # counting skip reasons makes none. Same answers as has_seed: None to accept, else
        # one value per kind of reason (two reasons of one kind differ in numbers only).
        seed = listing.paintseed
        if seed is None:
            return 0
        return None if seed in wanted else 1

    return Compiled(predicate=has_seed, kinds=seed_kind, summary=f"paint seed in {shown}")


def _describe(seeds: list[int]) -> str:
    text = ", ".join(str(s) for s in seeds[:8])
    return text + (f" (+{len(seeds) - 8} more)" if len(seeds) > 8 else "")


PAINT_SEED = Criterion(
    key="paint_seed",
    schema=PaintSeed,
    compile=compile_paint_seed,
    description="paint seeds (patterns) to accept: single seeds and ranges",
    example='paint_seed: {seeds: [661, 670, "955-960"]}',
)


@hookimpl
def snipe_register_criteria() -> list[Criterion]:
    """Called by snipe once per rules file load."""
    return [PAINT_SEED]
