"""One generated function per set of rules watching a name: the scan's per-listing work.

Every name a rule watches is indexed with the rules watching it (:class:`RuleSet`); the
distinct sets of rules are few (a few dozen for 50 rules) however many names there are.
For each set, :func:`make_plan` generates one function that runs all of its rules' checks
on a listing and hands each passing (rule, listing, view) to ``accept``, in the set's
order. Compared with calling each rule's ``passes`` in turn, the listing's price and trade
lock are read once for all the rules of the set, the cheap core checks (price at most
``max_price``, not trade-locked unless the rule accepts it) reject before any criterion
runs, and a rejected pair costs no call at all when a core check rejects it.

Same decisions by construction: each rule's term is exactly the expression its ``passes``
evaluates (:func:`engine.rules._compile._all_pass`), in the same order, and a criterion
that raises fails only its own rule, as it does in ``passes``. Reasons are never
built here; they come from the same compiled rule's ``check`` when asked for.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from ..models import Listing
from ._contract import EvalContext, NameView

__all__ = ["Accept", "Plan", "PlannedRule", "ScreenMaker", "make_plan", "make_screen"]


class PlannedRule(Protocol):
    """What a plan reads of a compiled rule (``_compile.PlannedRule``, which builds the
    plans: typed here by shape so that the two modules do not import each other)."""

    @property
    def max_price(self) -> int: ...
    @property
    def trade_locked(self) -> float | None: ...
    @property
    def tests(self) -> tuple[Callable[[Listing, NameView, EvalContext], bool], ...] | None: ...
    def passes(self, listing: Listing, view: NameView, ctx: EvalContext) -> bool: ...


Accept = Callable[[tuple[Any, Listing, NameView]], None]
Plan = Callable[[Listing, NameView, EvalContext, Accept], None]
"""``plan(listing, view, ctx, accept)``: ``accept((rule, listing, view))`` for every rule
of the set whose checks pass, in the set's order."""


ScreenMaker = Callable[[NameView, EvalContext], Callable[[Any], bool]]
"""``make(view, ctx)``: the judge of one name's listings (``view``'s), true when some
rule of the set passes its checks on the listing in ``ctx``, what
:class:`engine.rules.RawScreen` asks of a stand-in."""


def _terms(rules: Sequence[PlannedRule], namespace: dict[str, Any]) -> list[str]:
    """Per rule, the expression its ``passes`` evaluates (reading the generated locals
    ``price`` and ``tradable``), its callables put in ``namespace``."""
    out = []
    for i, rule in enumerate(rules):
        namespace[f"rule_{i}"] = rule
        if rule.tests is None:  # no generated form known: ask the rule itself
            namespace[f"passes_{i}"] = rule.passes
            terms = [f"passes_{i}(listing, view, ctx)"]
        else:
            # the cap as a constant of the code (an int's repr, nothing else, enters it)
            terms = [f"price <= {int(rule.max_price)!r}"]
            if rule.trade_locked is None:
                terms.append("tradable")
            for j, test in enumerate(rule.tests):
                namespace[f"test_{i}_{j}"] = test
                terms.append(f"test_{i}_{j}(listing, view, ctx)")
        out.append(" and ".join(terms))
    return out


def make_plan(rules: Sequence[PlannedRule]) -> Plan:
    """The function running ``rules``' checks on one listing (see the module's docstring).

    Generated as source, as :func:`engine.rules._compile._all_pass` is (only generated
    identifiers enter it): it runs once per watched listing, and a loop calling each rule
    costs more than the checks themselves.
    """
    namespace: dict[str, Any] = {"_rules": tuple(rules), "_one_by_one": _one_by_one}
    lines = [
        "def plan(listing, view, ctx, accept):",
        "    try:",
        "        price = listing.price",
        "        tradable = listing.unlock_at is None",
        "    except Exception:",
        "        return _one_by_one(_rules, listing, view, ctx, accept)",
    ]
    for i, term in enumerate(_terms(rules, namespace)):
        # one try per rule (free unless raised): a raising criterion fails its rule only,
        # as in the rule's own ``passes``
        lines += [
            "    try:",
            f"        hit = {term}",
            "    except Exception:",
            "        hit = False",
            "    if hit:",
            f"        accept((rule_{i}, listing, view))",
        ]
    exec("\n".join(lines) + "\n", namespace)
    plan: Plan = namespace["plan"]
    return plan


def make_screen(rules: Sequence[PlannedRule]) -> ScreenMaker:
    """The maker of one name's judge for the raw screen (see :data:`ScreenMaker`): the
    plan's checks, returning at the first rule whose checks pass: the verdict of asking
    each rule's ``passes`` in turn (each term is the one :func:`make_plan` runs for the
    rule), except that anything raising means "build it". A stand-in holds only the raw
    fields; a criterion reading past its declared ones raises on it (where ``passes``
    would take the error for a turn-down and pass a deal over unbuilt), and so does a
    stand-in whose price or trade lock cannot be read: the full evaluation then decides on
    the built listing.

    One judge per watched name (a closure over its view and the context), so that the
    decode's per-listing call runs every check of the name's rules with no other call.
    """
    namespace: dict[str, Any] = {}
    lines = [
        "def make(view, ctx):",
        "    def could_accept(listing):",
        "        try:",
        "            price = listing.price",
        "            tradable = listing.unlock_at is None",
        "        except Exception:",
        "            return True",
    ]
    for term in _terms(rules, namespace):
        lines += [
            "        try:",
            f"            if {term}:",
            "                return True",
            "        except Exception:",
            "            return True",
        ]
    lines += ["        return False", "    return could_accept"]
    exec("\n".join(lines) + "\n", namespace)
    make: ScreenMaker = namespace["make"]
    return make


def _one_by_one(
    rules: Sequence[PlannedRule],
    listing: Listing,
    view: NameView,
    ctx: EvalContext,
    accept: Accept,
) -> None:
    """Reading the listing's price or trade lock raised (nothing is accepted yet): each
    rule's own ``passes`` decides, as :func:`engine.rules.evaluate` does."""
    for rule in rules:
        if rule.passes(listing, view, ctx):
            accept((rule, listing, view))
