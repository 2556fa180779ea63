"""Feed listings waiting for the search that confirms them (issue 17, point 2).

A rule that reads what the feed lacks (:attr:`CompiledRule.needs_search`: stickers'
wear or value, an undeclared plugin criterion) is not trusted with a feed event. A feed
listing that passes everything the feed can tell of such a rule
(:attr:`CompiledRule.feed_passes`: the core checks and the criteria that need no search)
becomes a :class:`Candidate`, kept here by the name it is searched under; its name is
flagged for the priority lane, so every candidate of a name, however many events told
them, waits for one search. The search takes the candidates of its batch when it is
sent (:meth:`ConfirmQueue.take`: one told while it is on its way waits for the next);
its answer decides each by item id through the engine's one decision path, and a
candidate the answer does not show is a counted skip with its reason
(:meth:`ConfirmQueue.settle`), never a purchase on the feed's word alone: the feed
carries no stickers' wear or price, so nothing it says can stand in for them.

Pure: no I/O, no clock; the engine and :class:`~engine.sniper._feedwatch.FeedWatch`
drive it.

A waiting candidate is kept as a plain tuple of atoms (its listing's field values, its
price, when it was told, and the index of its listing class and rules in a small table),
not as the :class:`Candidate` and pydantic model it came as: the queue can hold thousands
of them (a burst of a popular name pattern, the search budget busy), and the cyclic GC
walks every tracked object on each of its full passes, a stall of the event loop (~1 us
an object); a tuple of atoms it stops tracking the first time it sees it. A candidate is
rebuilt, equal to what was added, when it leaves the queue (a search takes it, a removal
drops it).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from ..models import Listing
from ..rules import CompiledRule
from ._schedule import MAX_LISTINGS_PER_NAME

__all__ = ["BEYOND", "GONE", "REMOVED", "SKIP_KINDS", "Candidate", "ConfirmQueue", "Settled"]

GONE = "not in its confirming search: sold or withdrawn since the feed told it"
REMOVED = "removed before its confirming search (the feed told it: sold or withdrawn)"
BEYOND = (
    f"not among the {MAX_LISTINGS_PER_NAME} cheapest listings of its name a search shows: "
    "its details cannot be confirmed"
)
SKIP_KINDS = {GONE: "gone", REMOVED: "removed", BEYOND: "beyond_cheapest"}
"""Skip reason -> its short kind (counters, metrics)."""


@dataclass(frozen=True, slots=True)
class Candidate:
    """A feed listing that a rule needing a search could accept: ``rules`` are those
    rules (their feed-visible checks pass), ``told_at`` when the event was handled."""

    listing: Listing
    told_at: float
    rules: tuple[CompiledRule, ...]


@dataclass(frozen=True, slots=True)
class Settled:
    """What a confirming answer said of the candidates it was sent for: those it shows
    (``found``: decided with the rest of the answer) and those it does not, each with
    its reason (``skipped``)."""

    found: list[Candidate]
    skipped: list[tuple[Candidate, str]]


_Packed = tuple[int, int, float, tuple[Any, ...], tuple[str, ...], Any, Any]
"""A waiting candidate: its kind's index in :attr:`ConfirmQueue._kinds`, its listing's
price, when it was told, its listing's field values (in the kind's field order), the
fields it was given (pydantic's ``model_fields_set``), and its pydantic extra and private
values (``None`` for the wire's models): atoms and tuples of atoms only."""

_new = object.__new__
_set = object.__setattr__


@dataclass(frozen=True, slots=True)
class _Kind:
    """What candidates of one listing class and one tuple of rules share."""

    cls: type[Listing]
    fields: tuple[str, ...]
    values: itemgetter[Any]
    rules: tuple[CompiledRule, ...]
    ceiling: int | None
    """The highest ``max_price`` of ``rules`` (``None``: no rule)."""


class ConfirmQueue:
    """Candidates by searched name, in the order they were told. See the module
    docstring."""

    def __init__(self) -> None:
        self._waiting: dict[str, dict[str, _Packed]] = {}
        self._kinds: list[_Kind] = []
        self._kind_at: dict[tuple[type[Listing], tuple[int, ...]], int] = {}
        """(listing class, ids of the rules) -> index in ``_kinds`` (the rules are kept
        alive there, so their ids stay theirs); emptied with the queue."""
        self._name_of: dict[str, str] = {}
        self.told = 0
        """Candidates added (a re-told item counts again)."""
        self.found = 0
        self.skipped: Counter[str] = Counter()
        """Skip kind (:data:`SKIP_KINDS`) -> candidates skipped so."""

    def __len__(self) -> int:
        return len(self._name_of)

    def add(self, name: str, candidate: Candidate) -> bool:
        """Keep ``candidate`` for the next search of ``name``; true when ``name`` had no
        candidate waiting (its flag is new). A re-told item replaces its older self."""
        item_id = candidate.listing.item_id
        previous = self._name_of.get(item_id)
        if previous is not None and previous != name:
            self._drop(item_id)
        waiting = self._waiting.setdefault(name, {})
        new_name = not waiting
        waiting.pop(item_id, None)  # re-told: to the end, with its latest price
        waiting[item_id] = self._pack(candidate)
        self._name_of[item_id] = name
        self.told += 1
        return new_name

    def waiting(self, name: str) -> bool:
        return bool(self._waiting.get(name))

    def promise(self, name: str) -> int:
        """The most a waiting candidate of ``name`` is below its rules' ceiling (its rank
        among flagged names); 0 when none waits."""
        kinds = self._kinds
        return max(
            (
                ceiling - price
                for kind, price, *_ in self._waiting.get(name, {}).values()
                if (ceiling := kinds[kind].ceiling) is not None
            ),
            default=0,
        )

    def removed(self, item_id: str) -> Candidate | None:
        """The feed told ``item_id``'s removal: a waiting candidate of it is skipped
        (counted) and returned; it can be told again if it is relisted."""
        candidate = self._drop(item_id)
        if candidate is not None:
            self.skipped[SKIP_KINDS[REMOVED]] += 1
        return candidate

    def forget(self, item_id: str) -> Candidate | None:
        """``item_id``'s waiting candidate, decided since without its search (a later
        event of it, on what an earlier search showed): no longer waiting, not a skip."""
        return self._drop(item_id)

    def take(self, names: Iterable[str]) -> dict[str, list[Candidate]]:
        """The candidates of ``names`` (a search batch about to be sent), no longer
        waiting: one told from now on waits for the next search of its name."""
        taken: dict[str, list[Candidate]] = {}
        for name in names:
            waiting = self._waiting.pop(name, None)
            if waiting:
                taken[name] = [self._unpack(p) for p in waiting.values()]
                for item_id in waiting:
                    del self._name_of[item_id]
        self._forget_kinds()
        return taken

    def put_back(self, taken: Mapping[str, Sequence[Candidate]]) -> None:
        """The search ``taken`` was for got no answer: its candidates wait again (ahead
        of any told since, unless told again)."""
        for name, candidates in taken.items():
            waiting = self._waiting.setdefault(name, {})
            older = {
                c.listing.item_id: self._pack(c)
                for c in candidates
                if c.listing.item_id not in waiting
            }
            self._waiting[name] = {**older, **waiting}
            for item_id in older:
                self._name_of[item_id] = name

    def settle(
        self, taken: Mapping[str, Sequence[Candidate]], answer: Mapping[str, Sequence[Listing]]
    ) -> Settled:
        """What the answer ``answer`` (listings by searched name) says of the candidates
        ``taken`` for it: each is found by its item id anywhere in the answer, or
        skipped: beyond the :data:`MAX_LISTINGS_PER_NAME` cheapest of its name when the
        answer shows that many and none dearer, else gone (sold or withdrawn)."""
        shown = {x.item_id for found in answer.values() for x in found}
        found: list[Candidate] = []
        skipped: list[tuple[Candidate, str]] = []
        for name, candidates in taken.items():
            listings = answer.get(name, ())
            full = len(listings) >= MAX_LISTINGS_PER_NAME
            dearest = max((x.price for x in listings), default=0)
            for candidate in candidates:
                if candidate.listing.item_id in shown:
                    found.append(candidate)
                elif full and candidate.listing.price >= dearest:
                    skipped.append((candidate, BEYOND))
                else:
                    skipped.append((candidate, GONE))
        self.found += len(found)
        self.skipped.update(SKIP_KINDS[why] for _, why in skipped)
        return Settled(found, skipped)

    def shown(self, answer: Mapping[str, Sequence[Listing]]) -> int:
        """A search answered with ``answer``: the waiting candidates it shows at the price
        they were told at are no longer waiting (the answer's own decisions judge them,
        stickers and all, as their own search would: searching their names again would
        only show them again). Those told while it was on its way are the ones: a
        candidate waiting at the time of sending was taken. Counted as found; returns how
        many."""
        dropped = 0
        for name, listings in answer.items():
            waiting = self._waiting.get(name)
            if not waiting:
                continue
            for listing in listings:
                packed = waiting.get(listing.item_id)
                if packed is not None and packed[1] == listing.price:
                    self._drop(listing.item_id)
                    dropped += 1
                    if name not in self._waiting:
                        break
        self.found += dropped
        return dropped

    def _drop(self, item_id: str) -> Candidate | None:
        name = self._name_of.pop(item_id, None)
        if name is None:
            return None
        waiting = self._waiting[name]
        candidate = self._unpack(waiting.pop(item_id))
        if not waiting:
            del self._waiting[name]
            self._forget_kinds()
        return candidate

    def _pack(self, candidate: Candidate) -> _Packed:
        listing, rules = candidate.listing, candidate.rules
        cls = type(listing)
        key = (cls, tuple(map(id, rules)))
        at = self._kind_at.get(key)
        if at is None:
            fields = tuple(cls.model_fields)
            ceiling = max((r.max_price for r in rules), default=None)
            at = self._kind_at[key] = len(self._kinds)
            self._kinds.append(_Kind(cls, fields, itemgetter(*fields), rules, ceiling))
        kind = self._kinds[at]
        return (
            at,
            listing.price,
            candidate.told_at,
            kind.values(listing.__dict__),
            tuple(listing.__pydantic_fields_set__),
            listing.__pydantic_extra__,
            listing.__pydantic_private__,
        )

    def _unpack(self, packed: _Packed) -> Candidate:
        """The candidate ``packed`` was made from: its listing set back as it was, attribute
        by attribute, as pydantic's ``model_construct`` does in the end (the values are
        the model's own, validated when the event was decoded), without its per-field
        alias and default lookups: a sixth of the time (~7 us against ~40 here), and
        every removal of a waiting candidate rebuilds one (3,141 in the 60,000 events of
        bench/bench_feed_decode.py)."""
        at, _, told_at, values, given, extra, private = packed
        kind = self._kinds[at]
        listing = _new(kind.cls)
        _set(listing, "__dict__", dict(zip(kind.fields, values, strict=True)))
        _set(listing, "__pydantic_fields_set__", set(given))
        _set(listing, "__pydantic_extra__", extra)
        _set(listing, "__pydantic_private__", private)
        return Candidate(listing, told_at, kind.rules)

    def _forget_kinds(self) -> None:
        if not self._name_of:  # nothing waits: no index in use
            self._kinds.clear()
            self._kind_at.clear()
