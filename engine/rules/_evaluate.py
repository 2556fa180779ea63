"""Turning listings into decisions: a pure function, no I/O, no clock, no pluggy.

:func:`evaluate` runs in two passes:

1. every listing meets the rules that watch its name (one memoised dictionary lookup per
   listing; a listing no rule watches costs nothing more); each (listing, rule) pair gets
   the rule's predicates, and a pair that fails becomes a rejected :class:`Decision`
   carrying every reason;
2. the pairs that pass are allocated, highest priority first and cheapest first, against
   the caps: one purchase per listing, the rule's ``max_count`` and ``max_spend``, and the
   daily and total budgets, counting what was already spent (in-flight included) *and what
   this same batch has already accepted*. A cap that would be exceeded is a reason too.

Every listing a rule watches therefore ends up with a decision saying why it is, or is
not, bought; :func:`explain` answers "why was nothing bought" for a name.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from functools import partial
from itertools import compress
from operator import attrgetter
from typing import Any, cast

from .._money import Money, format_usd
from ..models import Listing
from ._compile import CompiledRule, IndexEntry, RuleSet
from ._contract import EvalContext, NameView, RuleSpend
from ._kinds import NO_REASON

__all__ = [
    "NO_REASON",
    "Decision",
    "Scan",
    "evaluate",
    "explain",
    "rejection_kinds",
    "rejection_reasons",
    "scan",
    "summarize_rejections",
    "turned_down",
    "watching",
]


def rejection_reasons(
    rule: CompiledRule, listing: Listing, view: NameView, context: EvalContext
) -> tuple[str, ...]:
    """Why ``rule``'s checks turn ``listing`` down: every failing predicate's reason, from
    the compiled rule's ``check``. The one place a turned-down pair's reasons are made
    (:attr:`Decision.reasons`, :meth:`Scan.skip_reasons`, the engine's skip counts), so
    that they cannot disagree; only called for a pair whose ``passes`` is false."""
    found = rule.check(listing, view, context)
    return tuple(found) if found else (NO_REASON,)


def rejection_kinds(
    rule: CompiledRule, listing: Listing, view: NameView, context: EvalContext
) -> list[int | str] | Sequence[str]:
    """:func:`rejection_reasons` for counting them by kind: per reason, in the same order,
    either its text or, for a predicate whose reasons are all of one kind, its index in
    ``rule.sites`` (kind: ``rule.site_kinds[i]``; text, made only when shown:
    ``rule.site_reason(i, ...)``). From the same compiled predicates as ``check``."""
    kinds = rule.kinds
    if kinds is None:
        return rejection_reasons(rule, listing, view, context)
    return kinds(listing, view, context) or (NO_REASON,)


class Decision(tuple[Any, ...]):
    """The outcome of one rule for one listing; immutable.

    ``price`` is what to pay (USD x 1000): the listing's price, which the rule's checks
    guarantee is never above its ``max_price``. ``allow_trade_locked`` is true when the
    listing is trade-locked and the rule's ``hold:`` accepted the wait (the purchase must
    then be sent with ``allow_trade_locked``). ``reasons`` say why it is bought, or every
    reason it is not.

    A tuple underneath, for speed: :func:`evaluate` makes one per (listing, rule) pair it
    looks at. The reasons are worked out when read, from the listing, rule and context
    of the evaluation, so they are the same whenever they are read, provided the mappings
    given in the context (reference prices, spend per rule) are not changed afterwards:
    build a new context per batch.
    """

    __slots__ = ()

    def __new__(
        cls,
        listing: Listing,
        rule: str,
        accepted: bool,
        reasons: Sequence[str],
        price: Money,
        action: str,
        priority: int,
        allow_trade_locked: bool,
    ) -> Decision:
        fields = (listing, rule, accepted, price, action, priority, allow_trade_locked)
        return tuple.__new__(cls, (*fields, tuple(reasons), None, None, None))

    @property
    def listing(self) -> Listing:
        return cast(Listing, self[0])

    @property
    def rule(self) -> str:
        """The name of the rule."""
        return cast(str, self[1])

    @property
    def accepted(self) -> bool:
        return cast(bool, self[2])

    @property
    def price(self) -> Money:
        return cast(int, self[3])

    @property
    def action(self) -> str:
        """``buy`` or ``bulk``."""
        return cast(str, self[4])

    @property
    def priority(self) -> int:
        return cast(int, self[5])

    @property
    def allow_trade_locked(self) -> bool:
        return cast(bool, self[6])

    @property
    def reasons(self) -> tuple[str, ...]:
        stored: tuple[str, ...] | None = self[7]
        if stored is not None:
            return stored
        if self[2]:  # accepted: self[8] builds the explanation
            return cast(tuple[str, ...], self[8]())
        return rejection_reasons(self[8], self[0], self[9], self[10])

    @property
    def item_id(self) -> str:
        return self.listing.item_id

    @property
    def name(self) -> str:
        return self.listing.name

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Decision):
            return NotImplemented
        return self[:7] == other[:7] and self.reasons == other.reasons

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __hash__(self) -> int:
        return hash(self[:7])

    def __repr__(self) -> str:
        return (
            f"Decision(rule={self.rule!r}, item_id={self.item_id!r}, "
            f"accepted={self.accepted}, price={self.price}, reasons={self.reasons!r})"
        )

    def __str__(self) -> str:
        verdict = "BUY " if self.accepted else "skip"
        head = (
            f"{verdict} {self.listing.name} (item {self.listing.item_id}) at "
            f"{format_usd(self.listing.price)} - rule {self.rule!r}"
        )
        return head + "".join(f"\n    - {reason}" for reason in self.reasons)


_new = tuple.__new__
_NAME = attrgetter("name")


def evaluate(ruleset: RuleSet, listings: Iterable[Listing], context: EvalContext) -> list[Decision]:
    """Decide, for every listing and every rule watching its name, whether to buy it.

    Pure: the result depends only on the arguments. Listings no rule watches get no
    decision (use :func:`explain` to see why a name is not watched).
    """
    decisions: list[Decision] = []
    passes: list[tuple[CompiledRule, Listing, NameView]] = []
    index = ruleset._index  # a name not seen yet is worked out (its __missing__)
    reject = decisions.append
    accept = passes.append
    for listing in listings:
        entry = index[listing.name]
        if not entry:  # no rule watches this name
            continue
        view, rules, _ = entry
        for rule in rules:
            if rule.passes(listing, view, context):
                accept((rule, listing, view))
            else:
                reject(turned_down(rule, listing, view, context))
    if passes:
        decisions.extend(_allocate(ruleset, passes, context))
    return decisions


def turned_down(
    rule: CompiledRule, listing: Listing, view: NameView, context: EvalContext
) -> Decision:
    """The decision of a pair the rules' checks turned down (its reasons are worked out
    when read, from ``rule``, ``listing``, ``view`` and ``context``)."""
    return _new(
        Decision,
        (
            listing,
            rule.name,
            False,
            listing.price,
            rule.action,
            rule.priority,
            False,
            None,
            rule,
            view,
            context,
        ),
    )


class Scan:
    """What :func:`scan` found in one batch: the decisions that matter to a buyer, and the
    rest only when asked for.

    ``decisions`` are the accepted decisions and those turned down while allocating (one
    purchase per listing, caps, budgets): exactly the decisions :func:`evaluate` makes
    after its rejections by the rules' checks, in the same order. The pairs the checks
    turned down are not built; :meth:`rejections`, :meth:`rejected_by_rule` and
    :meth:`skip_reasons` work them out on demand from the same compiled rules, listings
    and context, so they cannot disagree with :func:`evaluate` (see :meth:`all_decisions`).
    """

    __slots__ = ("_listings", "_passed", "context", "decisions", "ruleset")

    def __init__(
        self,
        ruleset: RuleSet,
        listings: Sequence[Listing],
        context: EvalContext,
        decisions: list[Decision],
        passed: list[tuple[CompiledRule, Listing, NameView]],
    ) -> None:
        self.ruleset = ruleset
        self.context = context
        self.decisions = decisions
        self._listings = listings
        self._passed = passed

    @property
    def listings(self) -> Sequence[Listing]:
        """The listings scanned."""
        return self._listings

    def rejected(self) -> Iterator[tuple[CompiledRule, Listing, NameView]]:
        """The (rule, listing, view) pairs the rules' checks turned down, in the order
        :func:`evaluate` gives their decisions. Nothing is checked again: a watched pair
        is turned down unless the scan's checks passed it (``passes`` is pure), so this
        costs a name lookup per listing (in one C pass, as :func:`scan`'s) and, for a
        listing some rule passed, a set lookup per pair. Listed at once in a
        comprehension (a generator's resumption per pair cost more than the pair)."""
        listings = self._listings
        # a name not seen (or forgotten) is worked out again by the index
        entries: list[Any] = list(map(self.ruleset._index.__getitem__, map(_NAME, listings)))
        watched = zip(compress(listings, entries), filter(None, entries), strict=True)
        if not self._passed:
            return iter(
                [(rule, listing, entry[0]) for listing, entry in watched for rule in entry[1]]
            )
        chosen = {id(listing) for _, listing, _ in self._passed}
        passed = {(id(rule), id(listing)) for rule, listing, _ in self._passed}
        return iter(
            [
                (rule, listing, entry[0])
                for listing, entry in watched
                for rule in entry[1]
                if id(listing) not in chosen or (id(rule), id(listing)) not in passed
            ]
        )

    def rejected_by_rule(self) -> dict[str, int]:
        """Per rule, how many listings its checks turned down (pairs the rule watched,
        less those that passed its checks); rules with none are left out."""
        return dict(Counter(rule.name for rule, _, _ in self.rejected()))

    def rejections(self) -> list[Decision]:
        """The decisions of the pairs the rules' checks turned down, in the order
        :func:`evaluate` gives them (their reasons are worked out when read)."""
        context = self.context
        made = turned_down
        return [made(rule, listing, view, context) for rule, listing, view in self.rejected()]

    def all_decisions(self) -> list[Decision]:
        """Every decision, equal to :func:`evaluate`'s on the same arguments."""
        return self.rejections() + self.decisions

    def skip_reasons(self) -> Counter[tuple[str, str]]:
        """(rule, reason) -> how often, for every reason of every decision turned down:
        what a status counts from :func:`evaluate`'s decisions (costs a rule check per
        turned-down pair)."""
        counts: Counter[tuple[str, str]] = Counter()
        context = self.context
        for rule, listing, view in self.rejected():
            counts.update((rule.name, r) for r in rejection_reasons(rule, listing, view, context))
        for decision in self.decisions:
            if not decision.accepted:
                counts.update((decision.rule, reason) for reason in decision.reasons)
        return counts


def watching(ruleset: RuleSet, name: str) -> IndexEntry:
    """``name``'s entry in the rules' index, as :func:`scan` reads it: ``(view, the rules
    watching it, their plan)``, or ``()`` when no rule does. For a caller that judges one
    listing at a time (a feed event): ``plan(listing, view, context, accept)`` is
    :func:`scan`'s whole first pass for it, and when nothing is accepted, its rejected
    pairs are ``(rule, listing, view)`` for every rule of the entry, in order."""
    return ruleset._index[name]


def scan(ruleset: RuleSet, listings: Sequence[Listing], context: EvalContext) -> Scan:
    """:func:`evaluate` without a decision for each pair the rules' checks turn down: the
    engine's fast path (see :class:`Scan`). ``listings`` must not change afterwards while
    the scan's rejections may still be asked for."""
    passes: list[tuple[CompiledRule, Listing, NameView]] = []
    accept = passes.append
    # Most listings of a market are of names no rule watches: the name lookups and the
    # skipping run in C (map, compress, filter), and the loop body only for watched ones.
    # A name not seen yet is worked out by the index itself (RuleSet's _NameIndex).
    entries: list[Any] = list(map(ruleset._index.__getitem__, map(_NAME, listings)))
    watched = zip(compress(listings, entries), filter(None, entries), strict=True)
    # one generated call per watched listing runs all its rules' checks (engine/rules/_plan.py)
    for listing, (view, _, plan) in watched:
        plan(listing, view, context, accept)
    decisions = _allocate(ruleset, passes, context) if passes else []
    return Scan(ruleset, listings, context, decisions, passes)


def _reject(rule: CompiledRule, listing: Listing, reasons: tuple[str, ...]) -> Decision:
    return Decision(
        listing=listing,
        rule=rule.name,
        accepted=False,
        reasons=reasons,
        price=listing.price,
        action=rule.action,
        priority=rule.priority,
        allow_trade_locked=False,
    )


def _allocate(
    ruleset: RuleSet, passes: list[tuple[CompiledRule, Listing, NameView]], context: EvalContext
) -> list[Decision]:
    # highest priority first, then cheapest, then as found: one key per pass built in a
    # comprehension (a key function was a call per pass, a third of allocating)
    ranked = sorted([(-p[0].priority, p[1].price, i) for i, p in enumerate(passes)])
    budget = context.budget
    today, total = budget.spent_today, budget.spent_total
    per_day, total_cap = ruleset.budgets.per_day, ruleset.budgets.total
    # (spent, count) per rule with this batch's acceptances: plain tuples, a RuleSpend
    # (a frozen dataclass, a Python __init__) made only when a reason is
    per_rule: dict[str, tuple[Money, int]] = {}
    known = budget.per_rule
    taken: dict[str, str] = {}
    out = []
    orders = budget.order_exposure
    for _, price, i in ranked:
        rule, listing, view = passes[i]
        name = rule.name
        item_id = listing.item_id
        had = per_rule.get(name)
        if had is None:
            before = known.get(name)
            had = _NOTHING if before is None else (before.spent, before.count)
        spent, count = had
        owner = taken.get(item_id)
        max_count, max_spend = rule.max_count, rule.max_spend
        if (
            owner is None
            and (max_count is None or count < max_count)
            and (max_spend is None or spent + price <= max_spend)
            and today + price <= per_day
            and total + price <= total_cap
        ):  # within every cap (_cap_reasons would find none)
            taken[item_id] = name
            per_rule[name] = (spent + price, count + 1)
            today += price
            total += price
            explain = partial(
                _accepted_reasons,
                ruleset,
                rule,
                had,
                today,
                total,
                listing,
                view,
                context,
                orders,
            )
            out.append(
                _new(
                    Decision,
                    (
                        listing,
                        name,
                        True,
                        price,
                        rule.action,
                        rule.priority,
                        listing.unlock_at is not None,
                        None,
                        explain,
                        None,
                        None,
                    ),
                )
            )
            continue
        if owner is not None:
            reasons = [f"already chosen for rule {owner!r} (higher priority or cheaper)"]
        else:
            reasons = _cap_reasons(ruleset, rule, RuleSpend(spent, count), today, total, price)
        out.append(_reject(rule, listing, tuple(reasons)))
    return out


_NOTHING: tuple[Money, int] = (0, 0)


def _cap_reasons(
    ruleset: RuleSet,
    rule: CompiledRule,
    spend: RuleSpend,
    today: Money,
    total: Money,
    price: Money,
) -> list[str]:
    reasons = []
    if rule.max_count is not None and spend.count >= rule.max_count:
        reasons.append(f"rule max_count {rule.max_count} reached: {spend.count} bought")
    if rule.max_spend is not None and spend.spent + price > rule.max_spend:
        reasons.append(_cap("rule cap", rule.max_spend, spend.spent, "spent", price))
    if today + price > ruleset.budgets.per_day:
        reasons.append(_cap("daily budget", ruleset.budgets.per_day, today, "spent today", price))
    if total + price > ruleset.budgets.total:
        reasons.append(_cap("total budget", ruleset.budgets.total, total, "spent", price))
    return reasons


def _cap(what: str, cap: Money, spent: Money, spent_word: str, price: Money) -> str:
    return (
        f"{what} {format_usd(cap)} would be exceeded: "
        f"{format_usd(spent)} {spent_word} + {format_usd(price)}"
    )


def _accepted_reasons(
    ruleset: RuleSet,
    rule: CompiledRule,
    spend: tuple[Money, int],
    today: Money,
    total: Money,
    listing: Listing,
    view: NameView,
    context: EvalContext,
    orders: Money = 0,
) -> tuple[str, ...]:
    return (
        *rule.accepted_summaries(listing, view, context),
        _within_budget(ruleset, rule, RuleSpend(*spend), today, total, orders),
    )


def _within_budget(
    ruleset: RuleSet,
    rule: CompiledRule,
    spend: RuleSpend,
    today: Money,
    total: Money,
    orders: Money = 0,
) -> str:
    parts = []
    if rule.max_spend is not None:
        parts.append(f"rule {format_usd(spend.spent)} of {format_usd(rule.max_spend)} before")
    parts.append(f"today {format_usd(today)} of {format_usd(ruleset.budgets.per_day)}")
    parts.append(f"total {format_usd(total)} of {format_usd(ruleset.budgets.total)}")
    held = f" (buy-order exposure {format_usd(orders)} included)" if orders else ""
    return "within budgets: " + ", ".join(parts) + held


def explain(
    ruleset: RuleSet,
    name: str,
    listings: Sequence[Listing] = (),
    context: EvalContext | None = None,
) -> list[str]:
    """Why nothing (or what) would be bought for the item called ``name``.

    Lists the rules that do not watch the name and why, then one line per decision for
    ``listings`` of that name under ``context`` (nothing listed is said plainly too).
    """
    view: NameView = ruleset.view(name)
    lines = []
    for rule_name, reason in ruleset.why_not_watched(name).items():
        lines.append(f"rule {rule_name!r} does not watch {name!r}: {reason}")
    if not view.rules:
        lines.append(f"no enabled rule watches {name!r}")
        return lines
    watching = ", ".join(repr(r.name) for r in view.rules)
    lines.append(f"watched by {watching}")
    mine = [listing for listing in listings if listing.name == name]
    if not mine:
        lines.append(f"no listing of {name!r} was seen")
        return lines
    if context is None:
        raise ValueError("explaining listings needs the evaluation context")
    lines.extend(str(d) for d in evaluate(ruleset, mine, context))
    return lines


def summarize_rejections(decisions: Iterable[Decision]) -> dict[str, Counter[str]]:
    """Per rule, how often each rejection reason occurred (numbers stripped, so the same
    kind of reason is counted together)."""
    out: dict[str, Counter[str]] = {}
    for decision in decisions:
        if decision.accepted:
            continue
        counter = out.setdefault(decision.rule, Counter())
        for reason in decision.reasons:
            counter[_kind(reason)] += 1
    return out


def _kind(reason: str) -> str:
    words = []
    for word in reason.split():
        if any(ch.isdigit() for ch in word):
            words.append("#")
        else:
            words.append(word)
    return " ".join(words)
