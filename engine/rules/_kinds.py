"""Counting a rule's skip reasons by kind, with as little text as the predicates allow.

A skip reason is counted under its *kind*: its text with the numbers blanked
(:func:`blank_numbers`, what ``engine.sniper``'s ``reason_kind`` keys its counts by), and
one full example per kind is shown. :func:`make_kinds` generates, beside a rule's
``check`` and from the same predicates, the function that says per failing predicate
either its reason (text) or an *id* standing for its kind, with no text made:

- a core predicate whose reasons are all of one kind (``max_price``, the trade lock) runs
  as the condition it tests, and its id is its index in the rule's sites, the kind known
  when compiling (:data:`ONE_KIND`);
- a criterion that gives ``kinds`` (:data:`~engine.rules.ReasonKind`) says which kind of
  reason it made; the first time a kind is met, its predicate's text is made once to learn
  the blanked text, and the kind gets an id (:class:`KindTable`); later pairs of that kind
  cost no text;
- any other predicate (a third-party criterion without ``kinds``) gives its text.

An id's (rule, kind) is ``table.site_kinds[id]``; its text, made for an example only, is
the text of the predicate of site ``table.kind_sites[id]`` (``CompiledRule.site_reason``):
the same predicate ``check`` runs, so a count by id cannot disagree with one by text.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from .._money import Money
from ..models import Listing
from ._contract import EvalContext, NameView, Predicate, ReasonKind

__all__ = [
    "KINDS_PER_SITE",
    "ONE_KIND",
    "TRADE_LOCKED",
    "KindTable",
    "Kinds",
    "blank_numbers",
    "make_kinds",
    "raised",
]

Kinds = Callable[[Listing, NameView, EvalContext], list[int | str] | None]
"""A rule's check for counting: ``None`` when every predicate passes, else per failing
predicate, in ``check``'s order, either its reason (text) or the id of its kind (see the
module's docstring): no text made."""

Site = tuple[Predicate, str, str]
"""A predicate of a rule with its key and plugin (``CompiledRule.sites``)."""

NO_REASON = "a criterion rejected the listing without a reason"
"""The reason of a pair the rule's checks turned down while none of its predicates said
why (a fast test that disagrees with its predicate, or raised)."""

TRADE_LOCKED = (
    "trade-locked listing, and the rule has no criterion that accepts one, such as "
    "`hold:` (it buys tradable items only)"
)

# The predicates of the core whose reasons are of one kind: (key, plugin) -> (the
# condition its predicate tests, in make_kinds' namespace; the kind of its reasons).
# tests/rules/test_reason_kinds.py checks each kind against the reasons made.
ONE_KIND: dict[tuple[str, str], tuple[str, str]] = {
    ("max_price", "core"): ("listing.price <= max_price", "price # above max_price #"),
    ("trade lock", "core"): ("listing.unlock_at is None", TRADE_LOCKED),
}

KINDS_PER_SITE = 512
"""How many kinds of one criterion of a rule get an id; the reasons of kinds beyond are
counted from their text (a criterion whose kinds are values of the listing stays bounded)."""

_NUMBER = re.compile(r"-?\$?[0-9][0-9,]*(?:\.[0-9]+)?")

_SLOTS = itertools.count()
"""Where the slots of :attr:`KindTable.slots` come from: an int no other table's key has."""


def blank_numbers(reason: str) -> str:
    """``reason`` with each number blanked as ``#``: the kind skip reasons are counted by
    (the same expression as ``engine.sniper``'s ``reason_kind``, which memoises it; a test
    holds the two equal)."""
    return _NUMBER.sub("#", reason)


def raised(key: str, plugin: str, exc: Exception) -> str:
    """The reason of a predicate that raised: the listing is rejected, the plugin named."""
    return (
        f"criterion {key!r} (plugin {plugin}) raised {type(exc).__name__}: {exc}; "
        "rejected to be safe"
    )


class KindTable:
    """A rule's kinds of reason by id: ids ``0..len(sites)-1`` are its sites (the kind
    of a one-kind core site, ``""`` for the others); the kinds criteria give get ids after
    them as they are first met. Grows while counting, never shrinks (bounded by
    :data:`KINDS_PER_SITE` per site)."""

    __slots__ = ("_slot_of", "kind_sites", "rule", "site_kinds", "slots")

    def __init__(self, rule: str, sites: Sequence[Site]) -> None:
        self.rule = rule
        self.site_kinds: list[tuple[str, str]] = []
        """Id -> (rule name, blanked text of the kind's reasons)."""
        self.kind_sites: list[int] = []
        """Id -> the index of the site whose predicate gives its reasons."""
        self.slots: list[int] = []
        """Id -> an int standing for its (rule name, kind) in this table: ids of the same
        kind share it, no other table's kind has it. A counter of skips keyed by it
        counts per kind, with no tuple hashed per reason (``EngineStatus.skipped_found``)."""
        self._slot_of: dict[tuple[str, str], int] = {}
        for site, (_, key, plugin) in enumerate(sites):
            self._add((rule, ONE_KIND.get((key, plugin), ("", ""))[1]), site)

    def _add(self, kind: tuple[str, str], site: int) -> int:
        """A new id for ``kind``, of the predicate of ``site``."""
        found = len(self.site_kinds)
        self.site_kinds.append(kind)
        self.kind_sites.append(site)
        slot = self._slot_of.get(kind)
        if slot is None:
            slot = self._slot_of[kind] = next(_SLOTS)
        self.slots.append(slot)
        return found

    def first_of(
        self, site: int, sites: Sequence[Site]
    ) -> tuple[dict[Hashable, int], Callable[..., int | str | None]]:
        """For a site whose criterion gives ``kinds``: its ids by kind, and what the
        generated function calls on a kind with no id yet. That makes the predicate's
        reason as ``check`` does (``None`` when it passes after all, the raised text when it
        raises) and gives the kind an id for the reason's blanked text; past
        :data:`KINDS_PER_SITE` kinds, it gives the text."""
        predicate, key, plugin = sites[site]
        ids: dict[Hashable, int] = {}

        def first(
            kind: Hashable, listing: Listing, view: NameView, ctx: EvalContext
        ) -> int | str | None:
            try:
                reason = predicate(listing, view, ctx)
            except Exception as exc:
                return raised(key, plugin, exc)
            if reason is None or len(ids) >= KINDS_PER_SITE:
                return reason
            found = ids[kind] = self._add((self.rule, blank_numbers(reason)), site)
            return found

        return ids, first


def make_kinds(
    sites: Sequence[Site],
    criteria_kinds: Sequence[ReasonKind | None],
    max_price: Money,
    table: KindTable,
) -> Kinds:
    """``check`` for counting (see :data:`Kinds`): generated as ``check`` is, from the
    same predicates in the same order (only generated identifiers enter the source; keys
    and plugin names are values of its namespace). ``criteria_kinds``: per site, the
    criterion's ``kinds`` or ``None``."""
    namespace: dict[str, Any] = {"_raised": raised, "max_price": max_price}
    lines = ["def kinds(listing, view, ctx):", "    reasons = None"]
    for i, ((predicate, key, plugin), kind_of) in enumerate(
        zip(sites, criteria_kinds, strict=True)
    ):
        namespace[f"p_{i}"] = predicate
        namespace[f"key_{i}"] = key
        namespace[f"plugin_{i}"] = plugin
        text = [  # the site as check runs it
            "    try:",
            f"        reason = p_{i}(listing, view, ctx)",
            "    except Exception as exc:",
            f"        reason = _raised(key_{i}, plugin_{i}, exc)",
        ]
        coded = ONE_KIND.get((key, plugin))
        if coded is not None:
            site = [
                "    try:",
                f"        reason = None if {coded[0]} else {i}",
                "    except Exception as exc:",
                f"        reason = _raised(key_{i}, plugin_{i}, exc)",
            ]
        elif kind_of is not None:
            namespace[f"k_{i}"] = kind_of
            namespace[f"ids_{i}"], namespace[f"first_{i}"] = table.first_of(i, sites)
            site = [
                "    try:",
                f"        kind = k_{i}(listing, view, ctx)",
                "        if kind is None:",
                "            reason = None",
                "        else:",
                f"            reason = ids_{i}.get(kind)",
                "            if reason is None:",
                f"                reason = first_{i}(kind, listing, view, ctx)",
                "    except Exception:",  # kinds raised, or an unhashable kind
                *("    " + line for line in text),  # the predicate decides, as in check
            ]
        else:
            site = text
        lines += [
            *site,
            "    if reason is not None:",
            "        if reasons is None:",
            "            reasons = [reason]",
            "        else:",
            "            reasons.append(reason)",
        ]
    lines.append("    return reasons")
    exec("\n".join(lines) + "\n", namespace)
    kinds: Kinds = namespace["kinds"]
    return kinds
