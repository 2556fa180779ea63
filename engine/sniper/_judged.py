"""Decisions kept per searched name: a search judges only the names whose listings changed.

A search answer repeats most of its listings: the market changes a few of a name's
listings between two searches of it, and the client's decoding (``ListingMemo``) gives a
listing sent exactly as before as the same :class:`~engine.models.Listing` object. When a
name's listings are those objects again, in the same order, for the same game and rule
set, and every rule watching them declares that its decisions depend on nothing else
(:attr:`~engine.rules.CompiledRule.listing_only`: not on the clock, the reference prices
or the budget), its decisions are those of the last search: they are kept with the skip
counts they contributed (:class:`~engine.sniper.SkipTally`), and counted again as they
were, so the status and a backtest's report are the same as if they had been judged
afresh. A name with a pair that passed its rules' checks is never kept: those go through
the budget and the ledger each time.

Sans-I/O and clock-free: the engine asks, keeps and forgets; live and backtest alike.

What a search reads to begin with: the engine hands its search requests the rules' raw
predicate (``engine.rules.RawScreen``, one per rule set and game, :func:`search_screen`):
a listing no rule watching its name could accept is not built, but kept in its place as
its stand-in (``SearchResponse.judged_items``, :func:`judged_listings`), so the decisions
and the skip counts (the status, a backtest's report) are those of the full decode. The
screen is left out (every listing built) when another reader needs the models of every
listing: the paper desk (a dearer listing proves a pending item gone) and the live feed
(a confirming search reads the dearest listing shown, the feed's known listings keep the
search's stickers, the cheap audit counts what a search shows).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from operator import attrgetter, is_, itemgetter
from typing import TYPE_CHECKING, Any, cast, overload

from ..models import Listing, SearchResponse
from ..rules import (
    CompiledRule,
    Decision,
    EvalContext,
    NameView,
    RawScreen,
    RuleSet,
    Scan,
    scan,
    turned_down,
)
from ._status import SkipTally, tally_pairs

if TYPE_CHECKING:
    from ._confirm import Candidate
    from ._engine import Engine

__all__ = [
    "Judge",
    "JudgedNames",
    "TurnedDown",
    "decide_search",
    "judged_listings",
    "search_screen",
]

log = logging.getLogger("snipe.engine")


def search_screen(
    engine: Engine, game: str | None, confirming: Mapping[str, list[Candidate]]
) -> RawScreen | None:
    """The screen for a search of ``game`` by ``engine`` now (see the module's
    docstring), or ``None``: build every listing."""
    if engine.paper is not None or confirming or engine.feedwatch.enabled:
        return None
    return engine.judged.screen(engine.ruleset, game)


def judged_listings(
    answer: SearchResponse, screen: RawScreen | None, ruleset: RuleSet
) -> tuple[Mapping[str, Sequence[Listing]], list[Listing]]:
    """A search answer's listings by searched name, and all of them in that order, as
    the engine judges and counts them under ``ruleset``: the built listings with the
    stand-ins of those ``screen`` passed over in their places
    (``SearchResponse.judged_items``). A stand-in carries what the rules read of a
    listing, its id and its phase: what judging, counting and learning phases read (the
    rules turn it down, so nothing buys it). Only the rules that screened them do: when
    the rules were replaced while the search was on its way, the new ones might accept a
    stand-in, so the built listings alone are judged (the next search builds the rest)."""
    if screen is not None and screen.ruleset is not ruleset:
        items: Mapping[str, Sequence[Listing]] = answer.items
    else:
        items = cast("Mapping[str, Sequence[Listing]]", answer.judged_items)
    return items, [x for found in items.values() for x in found]


HELD_AT_MOST = 20_000
"""How many names' decisions are kept at most (all forgotten when full: the simplest
bound; a rule set watches fewer names than this)."""


Judge = Callable[[list[Listing]], "Scan | None"]
"""Judges listings: the rules' scan of them when every pair was turned down by the rules'
checks, or ``None`` when a pair passed them (then nothing is kept: the caller decides the
whole batch as before)."""


_Pair = tuple[CompiledRule, Listing, NameView]
"""A (rule, listing, view) pair the rules' checks turned down: its decision is made only
when read (:class:`TurnedDown`)."""

_Each = tuple[Listing | None, list[_Pair], SkipTally, EvalContext | None]
"""A listing (held alive, so that its id is not reused; ``None``: a whole name judged at
once), its pairs turned down, their counts, and the context they were judged in."""


class TurnedDown(Sequence[Decision]):
    """A search answer's decisions when the rules' checks turned every pair down: held
    as the pairs and the contexts they were judged in, each decision made (with reasons
    worked out from the same compiled rule, as ever) only when the sequence is read.
    Nothing in it is accepted, so the buyer does not read it."""

    __slots__ = ("_made", "_n", "_parts")

    def __init__(self, parts: list[list[_Each]], n: int) -> None:
        self._parts = parts
        self._n = n
        self._made: list[Decision] | None = None

    def decisions(self) -> list[Decision]:
        """The decisions, in order (made once)."""
        made = self._made
        if made is None:
            made = self._made = [
                turned_down(rule, listing, view, context)
                for mine in self._parts
                for _, pairs, _, context in mine
                if context is not None  # None: no pair
                for rule, listing, view in pairs
            ]
        return made

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, index: int) -> Decision: ...
    @overload
    def __getitem__(self, index: slice) -> list[Decision]: ...
    def __getitem__(self, index: int | slice) -> Decision | list[Decision]:
        return self.decisions()[index]

    def __iter__(self) -> Iterator[Decision]:
        return iter(self.decisions())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, TurnedDown):
            other = other.decisions()
        return self.decisions() == other

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"TurnedDown({self.decisions()!r})"


async def decide_search(
    engine: Engine,
    found: Mapping[str, Sequence[Listing]],
    listings: list[Listing],
    now: float,
    game: str | None,
) -> tuple[Sequence[Decision], EvalContext]:
    """``engine.decide`` for a search answer (``found``: its listings by searched name;
    ``listings``: all of them, in that order), judging only what changed since it was
    last judged (``engine.judged``): the same decisions, and the same skip counts in
    ``engine.status``, as ``engine.decide(listings, now, game=game)``."""
    kept = engine.judged.decide_answer(
        engine.ruleset, found, game, lambda: engine.eval_context(listings, now, game)
    )
    if kept is None:  # a pair passed the checks: budgets, ledger and balance
        return await engine.decide(listings, now, game=game)
    decisions, tallies, context = kept
    engine.status.skipped_tallies(tallies)
    if log.isEnabledFor(logging.DEBUG):
        for decision in decisions:
            log.debug("%s", decision)
    if context is None:  # nothing was judged
        context = engine.eval_context(listings, now, game)
    return decisions, context


class _Judged:
    __slots__ = ("each", "game", "listings", "mine", "tally")

    def __init__(
        self,
        listings: tuple[Listing, ...],
        game: str | None,
        mine: list[_Each],
        tally: SkipTally,
        each: dict[int, _Each],
    ) -> None:
        self.listings = listings
        self.game = game
        self.mine = mine
        """What each of ``listings`` was judged to be, in order."""
        self.tally = tally
        self.each = each
        """id(listing) -> what it was judged to be."""


class JudgedNames:
    """What each searched name's listings were last judged to be, under one rule set."""

    __slots__ = ("_held", "_keepable", "_ruleset", "_screened_by", "_screens")

    def __init__(self) -> None:
        self._held: dict[str, _Judged] = {}
        self._keepable: dict[str, bool] = {}
        self._ruleset: RuleSet | None = None
        self._screens: dict[str | None, RawScreen] = {}
        self._screened_by: RuleSet | None = None

    def screen(self, ruleset: RuleSet, game: str | None) -> RawScreen:
        """``ruleset``'s raw screen for ``game``, made once per rule set and game (a
        screen learns each name's judge once); a new rule set makes new ones."""
        if self._screened_by is not ruleset:
            self._screens, self._screened_by = {}, ruleset
        screen = self._screens.get(game)
        if screen is None:
            screen = self._screens[game] = RawScreen(ruleset, game)
        return screen

    def __len__(self) -> int:
        return len(self._held)

    def decide_answer(
        self,
        ruleset: RuleSet,
        found: Mapping[str, Sequence[Listing]],
        game: str | None,
        make_context: Callable[[], EvalContext],
    ) -> tuple[TurnedDown, list[SkipTally], EvalContext | None] | None:
        """A search answer's decisions (``found``: its listings by searched name), the
        skip counts of each name, and the context the changed listings were judged in
        (``make_context()``, made only if one was judged); ``None`` when a pair passed the
        rules' checks (decide the whole answer as before: budgets, ledger, balance)."""
        context: EvalContext | None = None

        def judge(fresh: list[Listing]) -> Scan | None:
            nonlocal context
            if context is None:
                context = make_context()
            checked = scan(ruleset, fresh, context)
            return None if checked.decisions else checked

        parts: list[list[_Each]] = []
        tallies: list[SkipTally] = []
        n = 0
        for key, group in found.items():
            kept = self.decide(ruleset, key, group, game, judge)
            if kept is None:
                return None
            parts.append(kept[0])
            tallies.append(kept[1])
            n += kept[1].decisions
        return TurnedDown(parts, n), tallies, context

    def decide(
        self,
        ruleset: RuleSet,
        key: str,
        listings: Sequence[Listing],
        game: str | None,
        judge: Judge,
    ) -> tuple[list[_Each], SkipTally] | None:
        """The decisions on the answer's ``listings`` for ``key`` (a searched name), as
        :class:`TurnedDown` reads them, and their skip counts: kept when they are the
        very listings last judged for it, in the same order, for ``game`` under
        ``ruleset``; else the listings not judged then are judged (``judge``), the
        others' decisions kept. ``None`` when ``judge``
        found a pair passing the rules' checks."""
        if ruleset is not self._ruleset:  # other rules: nothing kept holds
            self._held.clear()
            self._keepable.clear()
            self._ruleset = ruleset
        held = self._held.get(key)
        if held is not None and held.game == game:
            # (the very tuple again: the client's decode kept the name's whole part)
            if held.listings is listings or (
                len(held.listings) == len(listings) and all(map(is_, held.listings, listings))
            ):
                return held.mine, held.tally
            before = held.each
        else:
            before = {}
        if not all(map(self._listing_only, set(map(_NAME, listings)))):
            self._held.pop(key, None)  # judged every time, as a whole
            checked = judge(list(listings))
            if checked is None:
                return None
            pairs = list(checked.rejected())
            tally = tally_pairs(pairs, checked.context)
            return [(None, pairs, tally, checked.context)], tally
        # A listing kept in ``before`` is held alive there, so no other object has its id.
        ids = list(map(id, listings))
        found = dict(zip(ids, map(before.get, ids), strict=True))
        each = cast("dict[int, _Each]", found)  # once every None is filled in below
        if None in found.values():
            fresh = [x for x in listings if found[id(x)] is None]
            for listing in fresh:
                each[id(listing)] = (listing, [], _NONE, None)  # its pairs, if any: below
            checked = judge(list({id(x): x for x in fresh}.values()))
            if checked is None:
                return None
            _split(list(checked.rejected()), checked.context, each)
        mine = list(map(each.__getitem__, ids))
        decisions = sum(map(len, map(_PAIRS, mine)))
        if (
            before
            and held is not None
            and len(before) == len(held.listings)
            and len(each) == len(ids)
        ):
            # no listing twice, before or now: the totals follow what came and went
            totals = dict(held.tally.counts)
            for gone in before.keys() - each.keys():
                for rule_kind, n in before[gone][2].counts:
                    totals[rule_kind] -= n
            for came in each.keys() - before.keys():
                for rule_kind, n in each[came][2].counts:
                    totals[rule_kind] = totals.get(rule_kind, 0) + n
            tally = _ordered(mine, {k: n for k, n in totals.items() if n}, decisions)
        else:
            tally = _merged(mine, decisions)
        if key not in self._held and len(self._held) >= HELD_AT_MOST:
            self._held.clear()
        self._held[key] = _Judged(tuple(listings), game, mine, tally, each)
        return mine, tally

    def _listing_only(self, name: str) -> bool:
        known = self._keepable.get(name)
        if known is None:
            ruleset = self._ruleset
            assert ruleset is not None
            known = self._keepable[name] = all(r.listing_only for r in ruleset.view(name).rules)
        return known


_NONE = SkipTally((), {}, 0)
_NAME = attrgetter("name")
_PAIRS = itemgetter(1)
_KIND = itemgetter(0)


def _merged(mine: list[_Each], decisions: int) -> SkipTally:
    """The listings' skip counts merged in order, as counting their pairs one by one:
    first met first, the latest example of each kind last."""
    by_rule: dict[tuple[str, str], int] = {}
    examples: dict[tuple[str, str], Any] = {}
    for _, _, tally, _ in mine:
        if tally.counts:
            for rule_kind, n in tally.counts:
                by_rule[rule_kind] = by_rule.get(rule_kind, 0) + n
            examples.update(tally.examples)
    return SkipTally(tuple(by_rule.items()), examples, decisions)


def _ordered(mine: list[_Each], totals: dict[tuple[str, str], int], decisions: int) -> SkipTally:
    """:func:`_merged` when the totals are known: the order in which the kinds are first
    met, read from the first listings, and the latest example of each, from the last
    (a name's listings mostly meet the same kinds: a listing or two each way)."""
    order: dict[tuple[str, str], None] = {}
    for _, _, tally, _ in mine:
        order.update(dict.fromkeys(map(_KIND, tally.counts)))
        if len(order) == len(totals):
            break
    latest: dict[tuple[str, str], Any] = {}
    for _, _, tally, _ in reversed(mine):
        for rule_kind, example in tally.examples.items():
            latest.setdefault(rule_kind, example)
        if len(latest) == len(totals):
            break
    counts = tuple((rule_kind, totals[rule_kind]) for rule_kind in order)
    return SkipTally(counts, {rule_kind: latest[rule_kind] for rule_kind in order}, decisions)


def _split(judged: list[_Pair], context: EvalContext, each: dict[int, _Each]) -> None:
    """Hand each judged listing its pairs turned down (a listing's are together, in
    order), their skip counts and ``context``."""
    start = 0
    for end in range(1, len(judged) + 1):
        listing = judged[start][1]
        if end < len(judged) and judged[end][1] is listing:
            continue
        mine = judged[start:end]
        each[id(listing)] = (listing, mine, tally_pairs(mine, context), context)
        start = end
