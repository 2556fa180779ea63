"""Compiling validated rules into plain closures, once, and indexing them by item name.

Every enabled rule becomes a :class:`CompiledRule`: its name filters (run once per distinct
item name and memoised in :meth:`RuleSet.view`) and one ``check`` closure that runs its
predicates on a listing and collects the reasons it fails. Two checks are part of the core
and cannot be switched off by a missing plugin: ``max_price`` and "no trade-locked listing
unless a criterion of the rule accepts them".

The core knows a criterion only by what its :class:`Compiled` declares (names, patterns,
games, references, trade-locked listings): it never reads a criterion's key or value, so
a plugin's criterion gets what a built-in one gets.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any

from pydantic import SecretStr

from .._money import Money, format_usd
from ..models import Listing
from ._contract import (
    Compiled,
    Criterion,
    Describe,
    EvalContext,
    NameFilter,
    NameView,
    Predicate,
    PriceSource,
    Problem,
    ReasonKind,
    RuleContext,
    Test,
)
from ._judge import Judge, make_judge
from ._kinds import NO_REASON, TRADE_LOCKED, Kinds, KindTable, make_kinds, raised
from ._names import split_name
from ._plan import Plan, make_plan
from ._portfolio import PortfolioSettings
from ._prices import PricesSettings
from ._schema import (
    CORE_RULE_KEYS,
    Account,
    ApiSettings,
    Budgets,
    NotifyCore,
    OrdersSettings,
    format_path,
)

__all__ = ["Check", "CompiledRule", "Kinds", "RuleSet", "compile_rule"]

Check = Callable[[Listing, NameView, EvalContext], list[str] | None]
Passes = Callable[[Listing, NameView, EvalContext], bool]
"""A rule's whole per-listing check: ``None`` when every predicate passes, else reasons."""

CORE_RAW_FIELDS = frozenset({"price", "unlock_at"})
"""What the core's checks (``max_price``, the trade lock) read of a listing."""

_VIEW_CACHE_LIMIT = 500_000

IndexEntry = tuple[()] | tuple[NameView, tuple["CompiledRule", ...], Plan]
"""A name's entry in :class:`RuleSet`'s index: ``()`` when no rule watches it."""


@dataclass(frozen=True, slots=True)
class CompiledRule:
    """One rule, ready to evaluate. Money is USD x 1000."""

    name: str
    priority: int
    action: str
    max_price: Money
    max_count: int | None
    max_spend: Money | None
    order_price: Money | None
    order_amount: int
    game: str | None
    names: frozenset[str]
    patterns: tuple[str, ...]
    criteria: tuple[str, ...]
    summaries: tuple[str, ...]
    name_filters: tuple[NameFilter, ...]
    check: Check = field(repr=False)
    passes: Passes = field(repr=False)
    index: int = 0
    describers: tuple[tuple[int, Describe], ...] = field(default=(), repr=False)
    """(index into ``summaries``, describe): summaries that an accepted listing's reasons
    show with what was measured."""
    games: frozenset[str] = frozenset()
    """The games the rule's criteria restrict it to (empty: any); ``game`` is the one game
    when there is exactly one."""
    references: tuple[str, ...] = ()
    """The reference price sources the rule's criteria read (see
    :attr:`Compiled.references`)."""
    trade_locked: float | None = None
    """The longest trade lock (seconds from now) a criterion of the rule accepts; ``None``:
    the rule buys tradable listings only."""
    listing_only: bool = False
    """Every criterion of the rule that judges listings is :attr:`Compiled.listing_only`
    (the core's checks are): its decisions depend on the listing, its name view and the
    context's game alone."""
    needs_search: bool = False
    """A criterion of the rule needs more than a feed event carries (see
    :attr:`Compiled.needs_search`): a feed listing is confirmed by a search first."""
    raw_fields: frozenset[str] | None = None
    """What the rule's checks read of a listing when every criterion that judges
    listings declares :attr:`Compiled.raw_fields` (the core's: price and trade lock);
    ``None`` when one does not (the rule's listings are always built)."""
    feed_passes: Passes | None = field(default=None, repr=False)
    """What the feed can tell of the rule: the core checks, the criteria that need no
    search, and the :attr:`Compiled.feed_test` of those that do and declare one (the
    others are unknown on a feed listing). For a rule that
    :attr:`needs_search`, a feed listing failing it can never be accepted, so it costs
    no confirming search; ``None`` for the other rules (their ``passes`` decides)."""
    tests: tuple[Test, ...] | None = field(default=None, repr=False)
    """The criteria's fast tests that ``passes`` runs after its core checks, in order
    (``None``: unknown, only ``passes`` is called); :mod:`engine.rules._plan` inlines them."""
    kinds: Kinds | None = field(default=None, repr=False)
    """``check`` for counting: an id per kind of reason instead of its text, for the
    core's one-kind predicates and the criteria that give ``kinds`` (see :data:`Kinds`
    and :mod:`engine.rules._kinds`; ``None``: unknown, use ``check``). Generated beside
    ``check`` from the same predicates, so a count by kind cannot disagree with the
    reasons."""
    sites: tuple[tuple[Predicate, str, str], ...] = field(default=(), repr=False)
    """The predicates ``check`` runs, in order: (predicate, key, plugin)."""
    site_kinds: Sequence[tuple[str, str]] = field(default=(), repr=False)
    """Per id ``kinds`` gives: (rule name, the kind of the reasons it stands for, i.e. the
    reason with its numbers blanked as ``engine.sniper``'s ``reason_kind`` does). Ids
    below ``len(sites)`` are the predicates of ``sites`` (kind ``""`` unless all its
    reasons are of one kind, known when compiling); the kinds criteria give get ids after
    them as they are met (see :mod:`engine.rules._kinds`): the list grows."""
    kind_sites: Sequence[int] = field(default=(), repr=False)
    """Per id of ``site_kinds``: the index in ``sites`` of the predicate it is of."""
    kind_slots: Sequence[int] = field(default=(), repr=False)
    """Per id of ``site_kinds``: an int standing for its (rule name, kind), shared by the
    ids of one kind, no other rule's (:attr:`engine.rules._kinds.KindTable.slots`)."""
    exact: bool = False
    """Every criterion of the rule that judges listings is :attr:`Compiled.exact` (or has
    neither a test nor kinds: both are its predicate), as the core's checks are: ``kinds``
    gives ``None`` exactly when ``passes`` is true, so one run of ``kinds`` both judges
    a listing and counts its skip reasons (:mod:`engine.rules._judge`)."""

    def site_reason(self, found: int, listing: Listing, view: NameView, ctx: EvalContext) -> str:
        """The reason for the id ``found`` that ``kinds`` gave ``listing``: the text of
        its predicate (of ``sites``), which ``check`` has in its place."""
        predicate, key, plugin = self.sites[self.kind_sites[found] if self.kind_sites else found]
        try:
            reason = predicate(listing, view, ctx)
        except Exception as exc:
            return raised(key, plugin, exc)
        return reason if reason is not None else NO_REASON

    def accepted_summaries(
        self, listing: Listing, view: NameView, ctx: EvalContext
    ) -> tuple[str, ...]:
        """``summaries``, with what each describing criterion measured for ``listing``."""
        if not self.describers:
            return self.summaries
        out = list(self.summaries)
        for at, describe in self.describers:
            with suppress(Exception):  # a plugin's failure must not hide the decision
                out[at] = describe(listing, view, ctx)
        return tuple(out)

    def why_not_watched(self, view: NameView) -> str | None:
        """``None`` when this rule watches ``view``'s name, else the reason it does not."""
        for name_filter in self.name_filters:
            reason = name_filter(view)
            if reason is not None:
                return reason
        return None


def compile_rule(
    *,
    index: int,
    core: Any,
    values: Mapping[str, Any],
    criteria: Mapping[str, Criterion],
    price_sources: Mapping[str, PriceSource],
    where: Callable[[tuple[str | int, ...]], str | None],
) -> tuple[CompiledRule, list[Problem]]:
    """Compile rule number ``index`` (validated ``core`` keys plus criteria ``values``)."""
    problems: list[Problem] = []
    all_values = {**{k: getattr(core, k) for k in CORE_RULE_KEYS}, **values}
    predicates: list[tuple[Predicate, str, str]] = [
        (_max_price_predicate(core.max_price), "max_price", "core")
    ]
    tests: list[Test] = []
    counted_by: dict[int, ReasonKind | None] = {}  # site -> the criterion's kinds
    feed_tests: list[Test] = []
    name_filters: list[NameFilter] = []
    names: set[str] = set()
    patterns: list[str] = []
    summaries: list[str] = [f"price at most max_price {format_usd(core.max_price)}"]
    describers: list[tuple[int, Describe]] = []
    declared = _Declared()
    exact = True  # every criterion's test and kinds agree with its predicate
    prefix = format_path(("rules", index))
    for key, value in values.items():
        criterion = criteria[key]
        ctx = RuleContext(
            rule_name=core.name,
            key=key,
            values=all_values,
            price_sources=price_sources,
            where=lambda sub: where(("rules", index, *sub)),
            field_prefix=prefix,
        )
        try:
            compiled = criterion.compile(value, ctx)
        except Exception as exc:
            problems.append(
                Problem(
                    "error",
                    f"criterion {key!r} (plugin {criterion.plugin}) failed to compile: "
                    f"{type(exc).__name__}: {exc}",
                    location=where(("rules", index, key)),
                    field=f"{prefix}.{key}",
                )
            )
            continue
        problems.extend(ctx.problems)
        if not isinstance(compiled, Compiled):
            problems.append(
                Problem(
                    "error",
                    f"criterion {key!r} (plugin {criterion.plugin}) returned "
                    f"{type(compiled).__name__}, not Compiled",
                    location=where(("rules", index, key)),
                )
            )
            continue
        reported = any(p.severity == "error" for p in ctx.problems)
        problems.extend(declared.add(compiled, key, criterion.plugin, price_sources, reported, ctx))
        if compiled.predicate is not None:
            exact = exact and (compiled.exact or (compiled.test is None and compiled.kinds is None))
            predicates.append((compiled.predicate, key, criterion.plugin))
            counted_by[len(predicates) - 1] = compiled.kinds
            tests.append(compiled.test or _as_test(compiled.predicate))
            if not compiled.needs_search:
                feed_tests.append(tests[-1])
            elif compiled.feed_test is not None:
                feed_tests.append(compiled.feed_test)
        if compiled.name_filter is not None:
            name_filters.append(compiled.name_filter)
        names |= compiled.names
        patterns.extend(compiled.patterns)
        if compiled.summary:
            if compiled.describe is not None:
                describers.append((len(summaries), compiled.describe))
            summaries.append(compiled.summary)
    if not name_filters and core.action != "buy_order":
        problems.append(
            Problem(
                "error",
                f"rule {core.name!r} watches no item: add `match:` with `names`, "
                "`patterns` or `regex`",
                location=where(("rules", index)),
                field=prefix,
            )
        )
    if core.action == "buy_order" and (patterns or not names):
        problems.append(
            Problem(
                "error",
                f"rule {core.name!r}: a buy order is placed per item name, so "
                "`action: buy_order` needs `match.names` and no patterns or regex",
                location=where(("rules", index, "action")),
                field=f"{prefix}.action",
            )
        )
    if declared.games == frozenset():
        problems.append(
            Problem(
                "error",
                f"rule {core.name!r}: its criteria restrict it to games with none in common "
                f"({declared.shown_games()}); it can never match",
                location=where(("rules", index)),
                field=prefix,
            )
        )
    if declared.trade_locked is None:
        predicates.insert(1, (_tradable_predicate, "trade lock", "core"))
        counted_by = {site + 1: kinds for site, kinds in counted_by.items()}
    sites = tuple(predicates)
    table = KindTable(core.name, sites)
    game = declared.game()
    if core.action == "buy_order" and game is None:
        problems.append(
            Problem(
                "error",
                f"rule {core.name!r}: a buy order is placed for one game, so "
                "`action: buy_order` needs `match.game`",
                location=where(("rules", index, "action")),
                field=f"{prefix}.match.game",
            )
        )
    rule = CompiledRule(
        name=core.name,
        priority=core.priority,
        action=core.action,
        max_price=core.max_price,
        max_count=core.max_count,
        max_spend=core.max_spend,
        order_price=core.buy_order.price if core.buy_order else None,
        order_amount=core.buy_order.amount if core.buy_order else 0,
        game=game,
        names=frozenset(names),
        patterns=tuple(patterns),
        criteria=tuple(values),
        summaries=tuple(summaries),
        name_filters=tuple(name_filters),
        check=_chain(sites),
        kinds=make_kinds(
            sites, [counted_by.get(i) for i in range(len(sites))], core.max_price, table
        ),
        sites=sites,
        site_kinds=table.site_kinds,
        kind_sites=table.kind_sites,
        kind_slots=table.slots,
        passes=_all_pass(core.max_price, declared.trade_locked is None, tuple(tests)),
        feed_passes=_all_pass(core.max_price, declared.trade_locked is None, tuple(feed_tests))
        if declared.needs_search
        else None,
        index=index,
        describers=tuple(describers),
        games=declared.games or frozenset(),
        references=tuple(dict.fromkeys(declared.references)),
        trade_locked=declared.trade_locked,
        needs_search=declared.needs_search,
        listing_only=declared.listing_only,
        raw_fields=None if declared.raw_fields is None else frozenset(declared.raw_fields),
        tests=tuple(tests),
        exact=exact,
    )
    return rule, problems


class _Declared:
    """What a rule's criteria declare, gathered while compiling them."""

    def __init__(self) -> None:
        self.games: frozenset[str] | None = None
        """What the declaring criteria's games have in common; ``None``: none declares."""
        self.declared_games: list[tuple[str, frozenset[str]]] = []
        self.references: list[str] = []
        self.trade_locked: float | None = None
        self.needs_search = False
        self.listing_only = True
        self.raw_fields: set[str] | None = set(CORE_RAW_FIELDS)

    def add(
        self,
        compiled: Compiled,
        key: str,
        plugin: str,
        price_sources: Mapping[str, PriceSource],
        reported: bool,
        ctx: RuleContext,
    ) -> list[Problem]:
        """Take ``compiled``'s declarations; the problems they show (an unknown source,
        unless the criterion has reported an error of its own already)."""
        if compiled.games:
            games = frozenset(compiled.games)
            self.declared_games.append((key, games))
            self.games = games if self.games is None else self.games & games
        if compiled.needs_search and (compiled.predicate or compiled.test) is not None:
            self.needs_search = True
        if not compiled.listing_only and (compiled.predicate or compiled.test) is not None:
            self.listing_only = False
        if (compiled.predicate or compiled.test) is not None and self.raw_fields is not None:
            if compiled.raw_fields is None:
                self.raw_fields = None
            else:
                self.raw_fields |= compiled.raw_fields
        if compiled.trade_locked is not None:
            self.trade_locked = max(self.trade_locked or 0.0, float(compiled.trade_locked))
        unknown = [n for n in compiled.references if n not in price_sources]
        self.references.extend(n for n in compiled.references if n in price_sources)
        if unknown and not reported:
            known = ", ".join(sorted(price_sources)) or "none"
            ctx.error(
                f"criterion {key!r} (plugin {plugin}) reads the price source(s) "
                f"{', '.join(map(repr, unknown))}, which no plugin registers (registered: "
                f"{known})"
            )
            return ctx.problems[-1:]
        return []

    def game(self) -> str | None:
        """The one game the rule is restricted to, if there is exactly one."""
        if self.games is None or len(self.games) != 1:
            return None
        return next(iter(self.games))

    def shown_games(self) -> str:
        return "; ".join(f"{key}: {', '.join(sorted(g))}" for key, g in self.declared_games)


def _chain(predicates: tuple[tuple[Predicate, str, str], ...]) -> Check:
    """One closure running every predicate. A predicate that raises is named in the reason
    and the listing is rejected: a failing plugin can only ever block a purchase.

    Generated as straight-line source, as :func:`_all_pass` is (only generated identifiers
    enter it; keys and plugin names are values of its namespace): it makes the reasons of
    every turned-down pair the engine counts, and a loop over the predicates cost a
    third of that.
    """
    namespace: dict[str, Any] = {"_raised": raised}
    lines = ["def check(listing, view, ctx):", "    reasons = None"]
    for i, (predicate, key, plugin) in enumerate(predicates):
        namespace[f"p_{i}"] = predicate
        namespace[f"key_{i}"] = key
        namespace[f"plugin_{i}"] = plugin
        lines += [
            "    try:",
            f"        reason = p_{i}(listing, view, ctx)",
            "    except Exception as exc:",
            f"        reason = _raised(key_{i}, plugin_{i}, exc)",
            "    if reason is not None:",
            "        if reasons is None:",
            "            reasons = [reason]",
            "        else:",
            "            reasons.append(reason)",
        ]
    lines.append("    return reasons")
    exec("\n".join(lines) + "\n", namespace)
    check: Check = namespace["check"]
    return check


def _all_pass(max_price: Money, tradable_only: bool, tests: tuple[Test, ...]) -> Passes:
    """One function: true when the core checks and every test pass. A test that raises
    fails the listing (its reason, naming the plugin, is produced by :func:`_chain` when
    the reasons are read).

    The function is generated as one ``and`` expression, as dataclasses and attrs generate
    their methods: it runs once per (listing, rule) pair, and a loop over the tests costs
    more than the core checks themselves. Only generated identifiers enter the source.
    """
    terms = ["listing.price <= max_price"]
    if tradable_only:
        terms.append("listing.unlock_at is None")
    terms += [f"test_{i}(listing, view, ctx)" for i in range(len(tests))]
    source = (
        "def passes(listing, view, ctx):\n"
        "    try:\n"
        f"        return {' and '.join(terms)}\n"
        "    except Exception:\n"
        "        return False\n"
    )
    namespace: dict[str, Any] = {"max_price": max_price}
    namespace.update((f"test_{i}", test) for i, test in enumerate(tests))
    exec(source, namespace)
    passes: Passes = namespace["passes"]
    return passes


def _as_test(predicate: Predicate) -> Test:
    def test(listing: Listing, view: NameView, ctx: EvalContext) -> bool:
        return predicate(listing, view, ctx) is None

    return test


def _max_price_predicate(max_price: Money) -> Predicate:
    def over_max_price(listing: Listing, view: NameView, ctx: EvalContext) -> str | None:
        if listing.price <= max_price:
            return None
        return f"price {format_usd(listing.price)} above max_price {format_usd(max_price)}"

    return over_max_price


def _tradable_predicate(listing: Listing, view: NameView, ctx: EvalContext) -> str | None:
    if listing.unlock_at is None:
        return None
    return TRADE_LOCKED


class _NameIndex(dict[str, IndexEntry]):
    """Name -> :data:`IndexEntry`; indexing a name not seen yet works its entry out
    (``__missing__``), so that :func:`engine.rules.scan` looks every name of a batch up
    in one pass in C (``map(index.__getitem__, names)``) with no check for misses after.
    ``get`` does not compute (a plain dict's)."""

    __slots__ = ("_compute",)

    def __init__(self, compute: Callable[[str], IndexEntry]) -> None:
        super().__init__()
        self._compute = compute

    def __missing__(self, name: str) -> IndexEntry:
        return self._compute(name)


class RuleSet:
    """A loaded, compiled rules file: account, budgets, rules, and the name index.

    ``rules`` are the enabled rules that buy listings, highest priority first;
    ``buy_order_rules`` are the enabled ``action: buy_order`` rules; ``problems`` are the
    warnings found while loading (errors prevent a RuleSet from existing).
    """

    def __init__(
        self,
        *,
        filename: str,
        account: Account,
        budgets: Budgets,
        rules: Sequence[CompiledRule],
        disabled: Sequence[str] = (),
        problems: Sequence[Problem] = (),
        notify: NotifyCore | None = None,
        prices: PricesSettings | None = None,
        portfolio: PortfolioSettings | None = None,
        sources_used: frozenset[str] = frozenset(),
        orders: OrdersSettings | None = None,
        api: ApiSettings | None = None,
    ) -> None:
        self.filename = filename
        self.orders = orders or OrdersSettings()
        """The ``orders:`` section (defaults when absent)."""
        self.api = api
        """The ``api:`` section, if any (``snipe run`` serves the API when it is there)."""
        self.prices = prices or PricesSettings()
        """The ``prices:`` section (defaults when absent)."""
        self.portfolio = portfolio or PortfolioSettings()
        """The ``portfolio:`` section (defaults when absent)."""
        self.sources_used = sources_used.union(*(r.references for r in rules))
        """Every price source a rule's criteria read (:attr:`Compiled.references`), and
        ``sources_used`` given."""
        self.notify = notify
        """The ``notify:`` section (notifier keys read with ``criterion_values``), if any."""
        self.account = account
        self.budgets = budgets
        ordered = sorted(rules, key=lambda r: (-r.priority, r.index))
        self.rules: tuple[CompiledRule, ...] = tuple(r for r in ordered if r.action != "buy_order")
        self.buy_order_rules: tuple[CompiledRule, ...] = tuple(
            r for r in ordered if r.action == "buy_order"
        )
        self.disabled = tuple(disabled)
        self.problems = tuple(problems)
        self.watched_names: frozenset[str] = frozenset().union(*(r.names for r in ordered))
        """Every exact name the enabled rules ask for (search these by name)."""
        self.fetch_trade_locked = any(r.trade_locked is not None for r in self.rules)
        """Whether a buying rule accepts trade-locked listings (so searches and snapshots
        must ask for them too)."""
        self.watched_patterns: dict[str, tuple[str, ...]] = {
            r.name: r.patterns for r in ordered if r.patterns
        }
        """Rule -> its glob patterns and ``/regex/``es; non-empty means the catalogue or
        the snapshot must be scanned to find matching names."""
        self._views: dict[str, NameView] = {}
        # name -> (view, rules watching it, their plan), or () when no rule does: the
        # hot-path index; one plan per distinct set of rules (few), shared by its names
        self._index: dict[str, IndexEntry] = _NameIndex(self._index_entry)
        self._plans: dict[tuple[int, ...], Plan] = {}
        self._judges: dict[tuple[int, ...], Judge | None] = {}

    def view(self, name: str) -> NameView:
        """The :class:`NameView` of ``name``, with the rules that watch it (memoised)."""
        view = self._views.get(name)
        if view is None:
            view = self._compute_view(name)
        return view

    def _compute_view(self, name: str) -> NameView:
        parts = split_name(name)
        bare = NameView(parts.name, parts.base_name, parts.phase, parts.exterior)
        rules = tuple(r for r in self.rules if r.why_not_watched(bare) is None)
        view = NameView(parts.name, parts.base_name, parts.phase, parts.exterior, rules)
        if len(self._views) >= _VIEW_CACHE_LIMIT:
            self._views.clear()
            self._index.clear()
        self._views[name] = view
        self._index[name] = (view, rules, self._plan(rules)) if rules else ()
        return view

    def _plan(self, rules: tuple[CompiledRule, ...]) -> Plan:
        key = tuple(map(id, rules))  # the rules live as long as the RuleSet
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = make_plan(rules)
        return plan

    def judge(self, rules: tuple[CompiledRule, ...]) -> Judge | None:
        """The feed's judge of ``rules`` (a name's watching rules; see
        :mod:`engine.rules._judge`), one per distinct set, or ``None`` when a rule is
        not exact."""
        key = tuple(map(id, rules))  # the rules live as long as the RuleSet
        if key not in self._judges:
            self._judges[key] = make_judge(rules)
        return self._judges[key]

    def _index_entry(self, name: str) -> IndexEntry:
        self._compute_view(name)
        entry = self._index.get(name)  # stored just now (get: no __missing__ again)
        assert entry is not None
        return entry

    def forget_names(self) -> None:
        """Drop the memoised name views (they are rebuilt on demand)."""
        self._views.clear()
        self._index.clear()

    def api_key(self, environ: Mapping[str, str] | None = None) -> SecretStr:
        """The API key as the account block says (environment, file next to the rules file,
        or inline); printing it shows ``**********``."""
        return self.account.resolve_api_key(environ, relative_to=self.filename)

    def why_not_watched(self, name: str) -> dict[str, str]:
        """For each rule that does not watch ``name``: why not."""
        view = self.view(name)
        out = {}
        for rule in self.rules:
            reason = rule.why_not_watched(view)
            if reason is not None:
                out[rule.name] = reason
        return out

    def rule(self, name: str) -> CompiledRule:
        """The enabled rule called ``name``."""
        for rule in (*self.rules, *self.buy_order_rules):
            if rule.name == name:
                return rule
        raise KeyError(name)

    def __repr__(self) -> str:
        return (
            f"<RuleSet {self.filename!r}: {len(self.rules)} rules, "
            f"{len(self.buy_order_rules)} buy-order rules>"
        )
