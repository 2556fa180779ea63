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
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from itertools import chain
from operator import attrgetter, indexOf, is_, itemgetter
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
    return items, list(chain.from_iterable(items.values()))


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
    __slots__ = ("each", "first", "game", "last", "listings", "mine", "tally", "unique")

    def __init__(
        self,
        listings: tuple[Listing, ...],
        game: str | None,
        mine: list[_Each],
        tally: SkipTally,
        each: dict[int, _Each],
        first: dict[tuple[str, str], int] | None,
        last: dict[tuple[str, str], int] | None,
    ) -> None:
        self.listings = listings
        self.game = game
        self.mine = mine
        """What each of ``listings`` was judged to be, in order."""
        self.tally = tally
        self.each = each
        """id(listing) -> what it was judged to be."""
        self.unique = len(each) == len(listings)
        """No listing is there twice."""
        self.first = first
        """Where (an index of ``mine``) each kind of the tally is first met, in that
        order (``None``: not known)."""
        self.last = last
        """Where each kind is last met: its example's listing (``None``: not known)."""


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
        if ruleset is not self._ruleset:
            self._forget(ruleset)
        held_for = self._held.get
        for key, group in found.items():
            held = held_for(key)
            if held is not None and held.listings is group and held.game == game:
                # (the very tuple again: the client's decode kept the name's whole part)
                parts.append(held.mine)
                tallies.append(held.tally)
                n += held.tally.decisions
                continue
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
        if ruleset is not self._ruleset:
            self._forget(ruleset)
        held = self._held.get(key)
        if held is not None and held.game == game:
            # (the very tuple again: the client's decode kept the name's whole part)
            if held.listings is listings:
                return held.mine, held.tally
            if held.unique:
                changed = self._changed(key, held, listings, judge)
                if changed is not _WHOLE:
                    return cast("tuple[list[_Each], SkipTally] | None", changed)
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
            tally, first, last = _ordered(mine, {k: n for k, n in totals.items() if n}, decisions)
        else:
            tally, first, last = _merged(mine, decisions), None, None
        if key not in self._held and len(self._held) >= HELD_AT_MOST:
            self._held.clear()
        self._held[key] = _Judged(tuple(listings), game, mine, tally, each, first, last)
        return mine, tally

    def _changed(
        self, key: str, held: _Judged, listings: Sequence[Listing], judge: Judge
    ) -> tuple[list[_Each], SkipTally] | object | None:
        """:meth:`decide` for a name judged before with no listing twice: a listing judged
        then keeps its decisions and counts (found by position where the two begin and end
        alike, by identity in between, where a listing that came or went moved the others);
        only the others are judged (mostly one or two). :data:`_WHOLE` when one of those
        is there twice, or its name has a rule that is not ``listing_only``: judge them
        all (:meth:`decide`)."""
        old = held.listings
        n, m = len(listings), len(old)
        start = _same_start(listings, old)
        if start < 0:
            if n == m:  # the very listings in another sequence
                held.listings = tuple(listings)
                return held.mine, held.tally
            start = min(n, m)
        end = _same_start(reversed(listings), reversed(old))
        end = min(n, m) - start if end < 0 else min(end, min(n, m) - start)
        came = listings[start : n - end]
        shifted = _shifted(came, old[start : m - end], held.each)
        if shifted is not None:
            return self._one_came(key, held, listings, judge, start, end, shifted)
        ids = list(map(id, came))
        came_ids = set(ids)
        if len(came_ids) != len(came):
            return _WHOLE
        went_ids = set(map(id, old[start : m - end]))
        new_ids = came_ids - went_ids
        each = held.each
        # not judged before (the others moved, or were there already: one is there twice)
        fresh_ids = new_ids - each.keys()
        if fresh_ids:
            fresh = [came[at] for at in sorted(map(ids.index, fresh_ids))]
            if not all(map(self._listing_only, {x.name for x in fresh})):
                return _WHOLE
            made: dict[int, _Each] = {}
            for listing in fresh:
                made[id(listing)] = (listing, [], _NONE, None)  # its pairs, if any: below
            checked = judge(fresh)
            if checked is None:
                return None
            _split(list(checked.rejected()), checked.context, made)
            each.update(made)
        mine = held.mine
        mine = mine[:start] + list(map(each.__getitem__, ids)) + mine[m - end :]
        # what came and went, the others moved: no listing was there twice, so a listing
        # gone is gone from the name
        gone = [each.pop(x) for x in went_ids - came_ids]
        new = [each[x] for x in new_ids]
        tally, first, last = _followed(held, gone, new, mine, start, m - end, n - m)
        self._held[key] = _Judged(tuple(listings), held.game, mine, tally, each, first, last)
        return mine, tally

    def _one_came(
        self,
        key: str,
        held: _Judged,
        listings: Sequence[Listing],
        judge: Judge,
        start: int,
        end: int,
        first: bool,
    ) -> tuple[list[_Each], SkipTally] | object | None:
        """:meth:`_changed` when between the listings alike at both ends one listing came,
        ``first`` or last of them, and the others are those before in their order, moved
        by one (see :func:`_shifted`)."""
        n, m = len(listings), len(held.listings)
        k = n - end - start
        listing = listings[start] if first else listings[n - end - 1]
        if not self._listing_only(listing.name):
            return _WHOLE
        made: dict[int, _Each] = {id(listing): (listing, [], _NONE, None)}
        checked = judge([listing])
        if checked is None:
            return None
        _split(list(checked.rejected()), checked.context, made)
        came = made[id(listing)]
        mine = held.mine
        if first:
            went = mine[start + k - 1 : m - end]
            mine = [*mine[:start], came, *mine[start : start + k - 1], *mine[m - end :]]
        else:
            went = mine[start : m - end - k + 1]
            mine = [*mine[:start], *mine[m - end - k + 1 : m - end], came, *mine[m - end :]]
        each = held.each
        for gone in went:  # gone from the name: no listing was there twice
            del each[id(gone[0])]
        each[id(listing)] = came
        tally, first_met, last_met = _followed(held, went, [came], mine, start, m - end, n - m)
        self._held[key] = _Judged(
            tuple(listings), held.game, mine, tally, each, first_met, last_met
        )
        return mine, tally

    def _forget(self, ruleset: RuleSet) -> None:
        """Other rules: nothing kept holds."""
        self._held.clear()
        self._keepable.clear()
        self._ruleset = ruleset

    def _listing_only(self, name: str) -> bool:
        known = self._keepable.get(name)
        if known is None:
            ruleset = self._ruleset
            assert ruleset is not None
            known = self._keepable[name] = all(r.listing_only for r in ruleset.view(name).rules)
        return known


_NONE = SkipTally((), {}, 0)
_WHOLE = object()
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


def _ordered(
    mine: list[_Each], totals: dict[tuple[str, str], int], decisions: int
) -> tuple[SkipTally, dict[tuple[str, str], int], dict[tuple[str, str], int]]:
    """:func:`_merged` when the totals are known: the order in which the kinds are first
    met, read from the first listings, and the latest example of each, from the last
    (a name's listings mostly meet the same kinds: a listing or two each way); with
    where each kind was first and last met (:attr:`_Judged.first`, :attr:`_Judged.last`)."""
    first = _first_met(mine, len(totals), 0, {})
    latest, last = _latest_met(mine, len(totals), len(mine), {}, {})
    counts = tuple((rule_kind, totals[rule_kind]) for rule_kind in first)
    examples = {rule_kind: latest[rule_kind] for rule_kind in first}
    return SkipTally(counts, examples, decisions), first, last


def _first_met(
    mine: list[_Each], kinds: int, start: int, first: dict[tuple[str, str], int]
) -> dict[tuple[str, str], int]:
    """``first`` (the kinds first met before ``start``, where) with the others of the
    ``kinds`` kinds, read from ``start`` on: where each is first met, in that order."""
    at = start
    while len(first) < kinds and at < len(mine):
        for rule_kind, _ in mine[at][2].counts:
            first.setdefault(rule_kind, at)
        at += 1
    return first


def _latest_met(
    mine: list[_Each],
    kinds: int,
    stop: int,
    latest: dict[tuple[str, str], Any],
    last: dict[tuple[str, str], int],
) -> tuple[dict[tuple[str, str], Any], dict[tuple[str, str], int]]:
    """``latest`` (the examples of the kinds last met from ``stop`` on) with those of the
    others of the ``kinds`` kinds, read back from before ``stop``; and ``last``, where
    each was met."""
    at = stop
    while len(latest) < kinds and at > 0:
        at -= 1
        for rule_kind, example in mine[at][2].examples.items():
            if rule_kind not in latest:
                latest[rule_kind] = example
                last[rule_kind] = at
    return latest, last


def _followed(
    held: _Judged,
    went: list[_Each],
    came: list[_Each],
    mine: list[_Each],
    start: int,
    stop: int,
    shift: int,
) -> tuple[SkipTally, dict[tuple[str, str], int], dict[tuple[str, str], int]]:
    """The skip counts of ``mine``: ``held.mine`` with its ``start:stop`` replaced
    (``shift``: how many more listings there are now), of which ``went`` are gone and
    ``came`` are new, the others moved. The totals follow what came and went; a kind
    first met before ``start`` keeps its place in the order, and one last met from
    ``stop`` on its example; the others are looked for from ``start`` on, and back from
    ``stop``."""
    tally = held.tally
    decisions = tally.decisions
    change: dict[tuple[str, str], int] = {}
    if not (  # mostly: one went, one came, turned down alike
        len(went) == len(came) == 1
        and went[0][2].counts == came[0][2].counts
        and len(went[0][1]) == len(came[0][1])
    ):
        for _, pairs, each, _ in went:
            decisions -= len(pairs)
            for rule_kind, n in each.counts:
                change[rule_kind] = change.get(rule_kind, 0) - n
        for _, pairs, each, _ in came:
            decisions += len(pairs)
            for rule_kind, n in each.counts:
                change[rule_kind] = change.get(rule_kind, 0) + n
    counts = tally.counts
    totals = dict(counts)
    if any(change.values()):
        for rule_kind, n in change.items():
            totals[rule_kind] = totals.get(rule_kind, 0) + n
        totals = {rule_kind: n for rule_kind, n in totals.items() if n}
        if len(totals) != len(counts) or not all(map(totals.__contains__, map(_KIND, counts))):
            return _ordered(mine, totals, decisions)  # a kind came or went
    if held.first is None or held.last is None:
        return _ordered(mine, totals, decisions)
    kinds = len(counts)
    first = {k: at for k, at in held.first.items() if at < start}
    # every kind first met before ``start``: the very order
    first = _first_met(mine, kinds, start, first) if len(first) < kinds else held.first
    examples = tally.examples
    last = {k: at + shift for k, at in held.last.items() if at >= stop}
    if len(last) < kinds:
        latest, last = _latest_met(
            mine, kinds, len(mine) - (len(held.mine) - stop), {k: examples[k] for k in last}, last
        )
        examples = {rule_kind: latest[rule_kind] for rule_kind in first}
    elif first is not held.first:
        examples = {rule_kind: examples[rule_kind] for rule_kind in first}
    if first is not held.first:
        counts = tuple((rule_kind, totals[rule_kind]) for rule_kind in first)
    elif totals != dict(counts):
        counts = tuple((rule_kind, totals[rule_kind]) for rule_kind, _ in counts)
    elif decisions == tally.decisions and examples is tally.examples:
        return tally, first, last  # the very counts
    return SkipTally(counts, examples, decisions), first, last


def _shifted(
    came: Sequence[Listing], gone: Sequence[Listing], each: dict[int, _Each]
) -> bool | None:
    """Whether ``came`` (the listings between those alike at both ends) is one listing
    not judged before followed by the first ones of ``gone`` (those before), the very
    objects in their order (``True``), or the last ones of ``gone`` followed by it
    (``False``): mostly one listing came and one went, the listings between them moved by
    one. ``None``: neither."""
    k, g = len(came), len(gone)
    if not 0 < k <= g + 1:
        return None
    if id(came[0]) not in each and all(map(is_, came[1:], gone[: k - 1])):
        return True
    if id(came[-1]) not in each and all(map(is_, came[:-1], gone[g - k + 1 :])):
        return False
    return None


def _same_start(a: Iterable[object], b: Iterable[object]) -> int:
    """How many items ``a`` and ``b`` begin with that are the very same objects (-1: all
    as far as the shorter goes)."""
    try:
        return indexOf(map(is_, a, b), False)
    except ValueError:
        return -1


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
