"""The rules compiled into a screen over a search answer's raw values: build only what can matter.

A search answer holds up to 2,500 listings, and building a model for each is most of the
cost of reading it, while the rules turn most of them down. :class:`RawScreen` is the
per-listing *raw predicate* of a rule set for one game (an
:data:`engine.models.Screen`, given to :func:`engine.models.decode_search`): for each item
name, a judge of the name's :class:`~engine.models.RawListing` stand-ins (made from the
parsed JSON values, only when all of them are in a plain form the model reads the same:
see :func:`engine.models.read_plain`) that says whether **some rule watching the name
could accept** the listing. It runs each rule's own pass/fail checks (those of
``CompiledRule.passes``, generated into one function per set of rules as the scan's plans
are: :func:`engine.rules._plan.make_screen`), so it cannot disagree with the full
evaluation: a stand-in is passed over only when every rule watching its name turns it down,
and a check that raises on it (a criterion reading more than the stand-in holds) has the
listing built, for the full evaluation to decide.

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
from ._compile import CompiledRule, RuleSet
from ._contract import EvalContext, NameView
from ._plan import ScreenMaker, make_screen

__all__ = ["RawScreen", "raw_judged"]

Judge = Callable[[RawListing], bool]


def raw_judged(rule: CompiledRule) -> bool:
    """Whether ``rule`` can judge a :class:`~engine.models.RawListing` stand-in: its
    decisions read nothing but the listing, its name view and the context's game, and
    every criterion that judges listings declares its raw form, within the stand-in's
    fields."""
    fields = rule.raw_fields
    return rule.listing_only and fields is not None and fields <= RAW_FIELDS


_never: Judge = ().__contains__
"""The judge of a name no rule watches: false for every stand-in (none is in ``()``),
called from C with no Python frame: most names of a market are of this kind."""


class RawScreen:
    """``ruleset``'s raw predicate for listings of ``game`` (see the module's docstring):
    called with an item name, the judge of its stand-ins (``True``: some rule could accept
    it), or ``None`` when every listing of the name is to be built. Judges are made once
    per name."""

    __slots__ = ("_context", "_judges", "_makers", "game", "ruleset")

    def __init__(self, ruleset: RuleSet, game: str | None) -> None:
        self.ruleset = ruleset
        self.game = game
        # what a rule judging listings alone reads of the context: the game (its clock
        # is read by no such rule's verdict)
        self._context = EvalContext(now=0.0, game=game)
        self._judges: dict[str, Judge | None] = {}
        # one generated maker per distinct set of rules (few), as the scan's plans
        self._makers: dict[tuple[int, ...], ScreenMaker] = {}

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
        # the rules' own checks, as ``passes`` runs them (a generated ``any`` of them,
        # engine/rules/_plan.py): the verdict the scan's plan gives the built listing
        key = tuple(map(id, rules))  # the rules live as long as the RuleSet
        make = self._makers.get(key)
        if make is None:
            make = self._makers[key] = make_screen(rules)
        return make(view, self._context)
