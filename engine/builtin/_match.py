"""``match:``: which items a rule watches.

Names, glob patterns and regular expressions select names (checked once per distinct name,
then memoised); ``exclude`` removes names; ``exterior`` is read from the name; ``game``,
``brand`` and ``type`` are checked per listing, and a listing that does not carry the
field a rule asks about is rejected with that reason, never waved through.

A name with a Doppler phase written into it (``"★ Karambit | Doppler Phase 2 (Factory
New)"``) matches its base name; written into a rule's ``names``, it also requires that
phase.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Hashable
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, field_validator, model_validator

from ..hookspecs import hookimpl
from ..models import Listing
from ..rules import Compiled, Criterion, EvalContext, NameView, RuleContext, StrictModel, split_name

__all__ = ["Match", "snipe_register_criteria"]


def _as_list(value: Any) -> Any:
    return [value] if isinstance(value, str) else value


Strings = Annotated[list[Annotated[str, Field(min_length=1)]], BeforeValidator(_as_list)]
Exterior = Literal["FN", "MW", "FT", "WW", "BS"]


class Match(StrictModel):
    """Name selection. At least one of ``names``, ``patterns``, ``regex``."""

    names: Strings = Field(default_factory=list)
    patterns: Strings = Field(default_factory=list)
    regex: Strings = Field(default_factory=list)
    exclude: Strings = Field(default_factory=list)
    game: Literal["csgo", "tf2", "rust", "dota2"] | None = None
    brand: Strings = Field(default_factory=list)
    type: Strings = Field(default_factory=list)
    exterior: Annotated[list[Exterior], BeforeValidator(_as_list)] = Field(default_factory=list)

    @field_validator("regex", "exclude")
    @classmethod
    def _compiles(cls, values: list[str], info: Any) -> list[str]:
        for value in values:
            text = fnmatch.translate(value) if info.field_name == "exclude" else value
            try:
                re.compile(text)
            except re.error as exc:
                raise ValueError(f"{value!r} is not a valid pattern: {exc}") from None
        return values

    @model_validator(mode="after")
    def _selects_something(self) -> Match:
        if not (self.names or self.patterns or self.regex):
            raise ValueError(
                "`match:` needs `names`, `patterns` or `regex` (use `patterns: ['*']` to "
                "watch every item, on purpose)"
            )
        return self


def compile_match(value: Match, rule: RuleContext) -> Compiled:
    exact: set[str] = set()
    phase_of: dict[str, set[str]] = {}
    for name in value.names:
        parts = split_name(name)
        exact.add(parts.base_name)
        if parts.phase is not None:
            phase_of.setdefault(parts.base_name, set()).add(parts.phase)
    unphased = {split_name(n).base_name for n in value.names if split_name(n).phase is None}
    selector = _selector([fnmatch.translate(p) for p in value.patterns] + list(value.regex))
    excluder = _selector([fnmatch.translate(p) for p in value.exclude])
    exteriors = frozenset(value.exterior)

    def name_filter(view: NameView) -> str | None:
        if view.base_name not in exact and not (
            selector is not None and (selector(view.name) or selector(view.base_name))
        ):
            return "name is not in the rule's `match` names or patterns"
        if excluder is not None and (excluder(view.name) or excluder(view.base_name)):
            return "name is excluded by `match.exclude`"
        if exteriors and view.exterior not in exteriors:
            shown = view.exterior or "none in the name"
            return f"exterior {shown} not in {', '.join(value.exterior)}"
        return None

    # (predicate, kinds) per per-listing check
    checks: list[tuple[Any, Any]] = []
    if value.game is not None:
        checks.append(_game_check(value.game))
    if value.brand:
        checks.append(_field_check("brand", frozenset(value.brand)))
    if value.type:
        checks.append(_field_check("type", frozenset(value.type)))
    if phase_of:
        checks.append(_named_phase_check(phase_of, unphased))
    predicate, kinds = _all(checks) if checks else (None, None)
    test = None
    if value.game is not None and len(checks) == 1:  # the game alone (most rules' match)
        test = _game_test(value.game)
    summary = "name " + ", ".join(
        [*(repr(n) for n in value.names[:3]), *value.patterns[:3], *value.regex[:3]]
    )
    if len(value.names) > 3:
        summary += f" (+{len(value.names) - 3} names)"
    return Compiled(
        predicate=predicate,
        test=test,
        kinds=kinds,
        exact=True,  # its test and kinds agree with it
        name_filter=name_filter,
        names=frozenset(exact),  # base names: the market lists a Doppler under its base name
        patterns=(*value.patterns, *(f"/{r}/" for r in value.regex)),
        summary=summary,
        games=frozenset() if value.game is None else frozenset({value.game}),
        needs_search=False,
        listing_only=True,  # the listing's fields, its name and the context's game
        raw_fields=frozenset(
            {"phase", *(["brand"] if value.brand else []), *(["type"] if value.type else [])}
        ),
    )


def _selector(regexes: list[str]) -> Any:
    if not regexes:
        return None
    return re.compile("|".join(f"(?:{r})" for r in regexes)).search


def _all(checks: list[tuple[Any, Any]]) -> tuple[Any, Any]:
    """One predicate (and its kinds) for several checks: every failing check's reason,
    joined; its kind, the checks' kinds together (one kind of joined text each)."""
    if len(checks) == 1:
        return checks[0]
    predicates = [predicate for predicate, _ in checks]
    kinds_of = [kinds for _, kinds in checks]

    def every(listing: Listing, view: NameView, ctx: EvalContext) -> str | None:
        reasons = [r for r in (c(listing, view, ctx) for c in predicates) if r is not None]
        return "; ".join(reasons) if reasons else None

    def every_kind(listing: Listing, view: NameView, ctx: EvalContext) -> Hashable | None:
        found = tuple(k(listing, view, ctx) for k in kinds_of)
        return None if all(kind is None for kind in found) else found

    return every, every_kind


def _game_check(game: str) -> tuple[Any, Any]:
    def same_game(listing: Listing, view: NameView, ctx: EvalContext) -> str | None:
        if ctx.game == game:
            return None
        if ctx.game is None:
            return f"the game of this listing is not known (rule wants {game})"
        return f"game {ctx.game} is not {game}"

    def game_kind(listing: Listing, view: NameView, ctx: EvalContext) -> Hashable | None:
        if ctx.game == game:
            return None
        return 0 if ctx.game is None else ctx.game  # a word of the reason

    return same_game, game_kind


def _game_test(game: str) -> Any:
    def same_game(listing: Listing, view: NameView, ctx: EvalContext) -> bool:
        return ctx.game == game  # (_game_check's predicate passes exactly then)

    return same_game


def _field_check(field: str, allowed: frozenset[str]) -> tuple[Any, Any]:
    wanted = ", ".join(sorted(allowed))

    def has_field(listing: Listing, view: NameView, ctx: EvalContext) -> str | None:
        actual = getattr(listing, field)
        if actual in allowed:
            return None
        if actual is None:
            return f"listing carries no {field} (rule wants {wanted})"
        return f"{field} {actual} not in {wanted}"

    def field_kind(listing: Listing, view: NameView, ctx: EvalContext) -> Hashable | None:
        actual = getattr(listing, field)
        if actual in allowed:
            return None
        return 0 if actual is None else actual  # words of the reason

    return has_field, field_kind


def _named_phase_check(phase_of: dict[str, set[str]], unphased: set[str]) -> tuple[Any, Any]:
    def named_phase(listing: Listing, view: NameView, ctx: EvalContext) -> str | None:
        wanted = phase_of.get(view.base_name)
        if wanted is None or view.base_name in unphased:
            return None
        phase = listing.phase or view.phase
        if phase in wanted:
            return None
        return f"phase {phase or 'none'} is not the {', '.join(sorted(wanted))} named in the rule"

    def named_phase_kind(listing: Listing, view: NameView, ctx: EvalContext) -> Hashable | None:
        wanted = phase_of.get(view.base_name)
        if wanted is None or view.base_name in unphased:
            return None
        phase = listing.phase or view.phase
        if phase in wanted:
            return None
        return (view.base_name, phase)  # the phases named for the base name, and the phase

    return named_phase, named_phase_kind


@hookimpl
def snipe_register_criteria() -> list[Criterion]:
    return [
        Criterion(
            key="match",
            schema=Match,
            compile=compile_match,
            description="which items the rule watches: names, glob patterns, regex, game, "
            "brand, type, exterior",
            example='match:\n  names: ["AK-47 | Redline (Field-Tested)"]\n  game: csgo',
        )
    ]
