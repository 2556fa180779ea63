"""The rules compiled into a screen over a search answer's raw values: build only what can matter.

A search answer holds up to 2,500 listings, and building a model for each is most of the
cost of reading it, while the rules turn most of them down. :class:`RawScreen` is the
per-listing *raw predicate* of a rule set for one game (an
:data:`engine.models.Screen`, given to :func:`engine.models.decode_search`): for each item
name, a judge of the name's :class:`~engine.models.RawListing` stand-ins (made from the
parsed JSON values, only when all of them are in a plain form the model reads the same:
see :func:`engine.models.read_plain`) that says whether **some rule watching the name
could accept** the listing. It runs each rule's own pass/fail check (what the scan runs,
``CompiledRule.passes``, but letting an exception out: a criterion that reads more than
the stand-in holds then has the listing built), so it cannot disagree with the full
evaluation: a stand-in is passed over only when every rule watching its name turns it
down.

Only rules whose every judging criterion has a raw form may judge a stand-in: the
criterion declares which listing fields it reads (:attr:`Compiled.raw_fields`, all among
:data:`engine.models.RAW_FIELDS`) and that it reads nothing else but the name view and the
context's game (:attr:`Compiled.listing_only`). A name watched by any other rule (a
plugin's criterion without a raw form, ``hold:`` reading the clock, a discount against a
fetched reference) gets no judge: every listing of it is built, as without a screen. A
name no rule watches gets a judge that passes every stand-in over (no rule could accept
it; the full evaluation counts nothing for it either).

Skip counting is the full evaluation's: a passed-over listing stays in the answer as its
stand-in (:attr:`engine.models.SearchResponse.judged_items`), in its place, and the
engine judges and counts it with the built ones: the same compiled ``kinds`` run on the
same values, and the examples' texts are made by the same predicates. So a status or a
backtest report is the same, byte for byte, with the screen or without it.
"""

from __future__ import annotations

from collections.abc import Callable

from ..models import RAW_FIELDS, RawListing
from ._compile import CompiledRule, Passes, RuleSet, raw_passes
from ._contract import EvalContext, NameView

__all__ = ["RawScreen", "raw_judged"]

Judge = Callable[[RawListing], bool]


def raw_judged(rule: CompiledRule) -> bool:
    """Whether ``rule`` can judge a :class:`~engine.models.RawListing` stand-in: its
    decisions read nothing but the listing, its name view and the context's game, and
    every criterion that judges listings declares its raw form, within the stand-in's
    fields."""
    fields = rule.raw_fields
    return rule.listing_only and fields is not None and fields <= RAW_FIELDS


def _never(stand_in: RawListing) -> bool:
    return False


class RawScreen:
    """``ruleset``'s raw predicate for listings of ``game`` (see the module's docstring):
    called with an item name, the judge of its stand-ins (``True``: some rule could accept
    it), or ``None`` when every listing of the name is to be built. Judges are made once
    per name."""

    __slots__ = ("_checks", "_context", "_judges", "game", "ruleset")

    def __init__(self, ruleset: RuleSet, game: str | None) -> None:
        self.ruleset = ruleset
        self.game = game
        # what a rule judging listings alone reads of the context: the game (its clock
        # is read by no such rule's verdict)
        self._context = EvalContext(now=0.0, game=game)
        self._judges: dict[str, Judge | None] = {}
        self._checks: dict[int, Passes] = {}  # by id() of a rule the rule set holds

    def __call__(self, name: str) -> Judge | None:
        judges = self._judges
        if name in judges:
            return judges[name]
        view = self.ruleset.view(name)
        judge = judges[name] = self._judge(view)
        return judge

    def _judge(self, view: NameView) -> Judge | None:
        rules: tuple[CompiledRule, ...] = view.rules
        if not rules:
            return _never  # no rule watches the name: none could accept a listing
        if not all(map(raw_judged, rules)):
            return None
        checks = tuple(map(self._check, rules))
        context = self._context

        def could_accept(stand_in: RawListing) -> bool:
            for passes in checks:
                try:
                    if passes(stand_in, view, context):  # type: ignore[arg-type]
                        return True
                except Exception:
                    return True  # the full evaluation decides, on the built listing
            return False

        return could_accept

    def _check(self, rule: CompiledRule) -> Passes:
        """``rule``'s pass/fail check letting exceptions out (made once per rule)."""
        check = self._checks.get(id(rule))
        if check is None:
            check = self._checks[id(rule)] = raw_passes(rule)
        return check
