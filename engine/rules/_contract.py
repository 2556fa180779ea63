"""What a criterion is: the contract between the rule engine and every criterion plugin.

A criterion owns one YAML key of a rule. At configuration time it gives the engine a type
that validates the key's value (:attr:`Criterion.schema`) and a ``compile`` function that
turns the validated value into a :class:`Compiled`: a predicate over listings, and/or a
filter over item names. The engine chains those plain closures into one check per rule;
the hot path never goes through pluggy.

A predicate answers ``None`` when the listing passes and a short, specific reason when it
does not (``"float 0.23 above max 0.15"``). It must be pure (same listing and context, same
answer), must not raise on a listing that lacks the data it looks at (return a reason
instead: a filter that cannot be checked rejects, it is never silently skipped), and must
not do I/O.

Two optional fast forms of the predicate let the engine skip building text: ``test``
(pass or fail) runs while deciding, and ``kinds`` (which kind of reason) while counting
the skip reasons a status or a backtest report shows. Reasons are counted by kind: the
text with its numbers blanked (``"float # above max #"``), one full example per kind.
A criterion without ``kinds`` is counted from its predicate's text, the same counts; see
:data:`ReasonKind` to write one.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from .._money import Money
from .._slots import slots_maker
from ..models import Listing

__all__ = [
    "BudgetState",
    "Compiled",
    "Criterion",
    "Describe",
    "EvalContext",
    "NameFilter",
    "NameView",
    "Predicate",
    "PriceSource",
    "Problem",
    "Quote",
    "ReasonKind",
    "RuleContext",
    "RuleSpend",
    "Test",
]


@dataclass(frozen=True, slots=True)
class RuleSpend:
    """What one rule has spent and bought, in-flight purchases included."""

    spent: Money = 0
    count: int = 0


@dataclass(frozen=True, slots=True)
class BudgetState:
    """Money already committed, *including purchases in flight or of unknown outcome*
    (a purchase whose answer was lost may have happened; it counts until resolved).

    ``spent_today`` is the current day's spend as the ledger defines the day.
    ``spent_today``, ``spent_total`` and ``per_rule`` include ``order_exposure``: what live
    buy orders may still buy counts against every cap (reasons say so when it is not 0).
    """

    spent_today: Money = 0
    spent_total: Money = 0
    per_rule: Mapping[str, RuleSpend] = field(default_factory=dict)
    order_exposure: Money = 0


@dataclass(frozen=True, slots=True)
class Quote:
    """A reference price with what a guard needs to judge it: ``observations`` behind it
    (``None``: the source does not count any) and ``as_of``, the epoch second its data is
    from (``None``: unknown). See :meth:`PriceSource.quote`."""

    price: Money
    observations: int | None = None
    as_of: float | None = None


QuoteKey = tuple[str, str | None]
"""(base name, Doppler phase or ``None``): how quote tables are keyed."""


@dataclass(frozen=True, slots=True)
class EvalContext:
    """Everything outside the listings that a decision depends on.

    ``now`` is epoch seconds (from the injected clock). ``reference_prices`` maps a price
    source name to ``{item name: price}`` (USD x 1000): the last answer of the source's
    :meth:`PriceSource.fetch` the engine holds, fetched at ``reference_as_of[name]``.
    ``game`` is the game the listings were fetched for (a rule with ``match.game`` rejects
    listings of an unknown game). Build a new context
    per batch rather than changing the mappings of one already used: decisions read it
    again when their reasons are asked for. ``references`` maps a source name to
    ``{(base name, phase): Quote}`` for sources that report observations and age (the
    built-in ``market.*``, ``service.*`` and ``file.*`` sources, filled by the engine's
    :class:`~engine.reference.ReferenceHub`).
    """

    now: float
    reference_prices: Mapping[str, Mapping[str, Money]] = field(default_factory=dict)
    budget: BudgetState = field(default_factory=BudgetState)
    game: str | None = None
    references: Mapping[str, Mapping[QuoteKey, Quote]] = field(default_factory=dict)
    reference_as_of: Mapping[str, float] = field(default_factory=dict)
    sticker_prices: Mapping[str, Money] = field(default_factory=dict)
    """Stickers' prices by sticker name (USD x 1000; 0: not on sale) as the service's
    searches showed them recently enough to be trusted (the engine keeps them
    ``account.sticker_prices_for`` seconds); empty when none is known. Read by a
    criterion's :attr:`Compiled.feed_test`: a listing told by the feed carries its
    stickers' names only."""


_EvalContextOf = Callable[
    [
        float,
        Mapping[str, Mapping[str, Money]],
        BudgetState,
        str | None,
        Mapping[str, Mapping[QuoteKey, Quote]],
        Mapping[str, float],
        Mapping[str, Money],
    ],
    EvalContext,
]

# (one per feed event: made by its slots' setters, at half the cost of the frozen
# dataclass's __init__; a field added to the class fails here, at import)
eval_context_of = cast(
    _EvalContextOf,
    slots_maker(
        EvalContext,
        (
            "now",
            "reference_prices",
            "budget",
            "game",
            "references",
            "reference_as_of",
            "sticker_prices",
        ),
    ),
)
"""``eval_context_of(now, reference_prices, budget, game, references, reference_as_of,
sticker_prices)``: ``EvalContext(...)`` of these values, made faster (every one given,
positionally)."""


@dataclass(frozen=True, slots=True)
class NameView:
    """What the engine knows about one distinct item name, computed once per name.

    ``base_name`` has a Doppler phase written into the name removed (``phase`` is that
    phase); ``exterior`` is ``FN``..``BS`` or ``None``. ``rules`` are the compiled rules
    whose name selection accepts this name, highest priority first.
    """

    name: str
    base_name: str
    phase: str | None
    exterior: str | None
    rules: tuple[Any, ...] = ()


Predicate = Callable[[Listing, NameView, EvalContext], str | None]
"""``(listing, name view, context) -> None`` when it passes, else the reason it does not."""

Test = Callable[[Listing, NameView, EvalContext], bool]
"""``(listing, name view, context) -> True`` when it passes: a predicate without reasons."""

ReasonKind = Callable[[Listing, NameView, EvalContext], Hashable | None]
"""``(listing, name view, context) -> None`` when the predicate passes the listing, else a
*kind*: any hashable value standing for the reason the predicate gives, without its text.

The engine counts skip reasons by the reason's text with its numbers blanked (each run of
digits, with a leading ``-`` or ``$``, its ``,`` separators and one decimal part, becomes
``#``) and shows one full reason per kind, made by the predicate when read. With
``kinds``, it makes the text only the first time it meets a kind (to learn its blanked
text), then counts that kind without text. The rule: **two listings given the same kind
get reasons whose blanked texts are equal.** So a kind is usually one small int per
``return`` of the predicate, paired with whatever the reason takes from the listing that
is not a number (a phase name, a source name) or that is written in more than one shape
(``2d 4h`` vs ``36m``, ``1e-05`` vs ``0.5``). A finer kind than needed is harmless (two
kinds with the same blanked text are counted together); a coarser one miscounts. A value
whose shape is hard to tell may itself be the kind (``(1, wear)``): the engine keeps a
few hundred kinds per criterion of a rule and counts any beyond from the text.

``kinds`` must agree with the predicate on pass or fail and must not raise more than it
does (when it raises, the predicate decides, with its text). The contract kit
(:func:`engine.testing.check_criterion_contract`) checks both rules on its edge listings.
"""

Describe = Callable[[Listing, NameView, EvalContext], str]
"""``(listing, name view, context) -> text`` saying what an accepted listing measured."""

NameFilter = Callable[[NameView], str | None]
"""``(name view) -> None`` when the rule watches this name, else why not. Run once per
distinct name (memoised), never per listing."""


@dataclass(frozen=True, slots=True)
class Compiled:
    """A criterion compiled for one rule.

    ``predicate`` runs per listing; ``name_filter`` runs once per distinct name and decides
    whether the rule watches it; ``names`` lists the exact names the rule asks for (the
    engine searches for them and indexes them); ``summary`` is a short human description of
    the condition (``"float 0.00-0.07"``), shown in explanations of accepted purchases.
    ``test`` is an optional fast form of ``predicate`` that answers only pass (``True``) or
    fail, without building a reason; when given, it must agree with ``predicate`` on every
    listing (the contract kit checks that). The engine runs ``test`` on every listing and
    ``predicate`` only when someone reads the reasons of a rejection.
    ``kinds`` is an optional form of ``predicate`` for counting: the kind of the reason it
    gives, without its text (see :data:`ReasonKind`); without it, reasons are counted
    from their text, the same counts at the cost of making every text.
    ``patterns`` describes selections beyond exact names (globs, regexes): a rule with any
    needs the catalogue scanned, since its names are not known in advance.

    ``names``, ``patterns``, ``games``, ``references`` and ``trade_locked`` are the
    criterion's declarations: the core reads them, and nothing else, to know what to
    search, which games to fetch, which reference prices to supply and whether
    trade-locked listings may be bought. Built-in criteria declare the same way.
    """

    predicate: Predicate | None = None
    test: Test | None = None
    name_filter: NameFilter | None = None
    names: frozenset[str] = frozenset()
    patterns: tuple[str, ...] = ()
    summary: str = ""
    describe: Describe | None = None
    """For an accepted listing, the condition with what was measured (``"discount 31% (at
    least 25%) vs market.p25 $12.00 ..."``); shown instead of ``summary`` in its reasons."""

    # -- declarations: what the core needs from this criterion. The core reads only these
    # (never a criterion's key or value), so a plugin's criterion is served like a built-in.

    games: frozenset[str] = frozenset()
    """The games the criterion restricts the rule to (``frozenset({"csgo"})``); empty: any
    game. A rule's games are what its criteria's declarations have in common (declarations
    with nothing in common are an error); restricted to one game, the rule is searched,
    snapshotted and its buy orders placed in that game only. The predicate still checks
    :attr:`EvalContext.game` itself: the declaration says where to look, not what passes."""
    references: tuple[str, ...] = ()
    """The reference price sources the predicate reads (names as ``snipe plugins`` lists
    them: ``platform_price``, ``market.p25``, ``service.platform_price``, ``file.NAME`` or
    a plugin's source). The engine fetches the sources the rules declare and supplies them
    in :attr:`EvalContext.references` (read through :meth:`PriceSource.quote`) or
    :attr:`EvalContext.reference_prices`. A name no source is registered under is an error
    when the rules load."""
    trade_locked: float | None = None
    """Whether the criterion accepts trade-locked listings (those with ``unlock_at``), and
    for how long a lock: the longest wait from now until ``unlock_at``, in seconds
    (``math.inf``: any). ``None`` (the default): it does not vouch for them. A rule none of
    whose criteria accepts them never buys a trade-locked listing (a core check); when one
    does, the engine asks the service for trade-locked listings too, its predicate sees
    them, and an accepted one is bought with ``allow_trade_locked``. The predicate must
    still judge each lock itself (give the reason a wait is too long); the core does not
    repeat that check."""
    listing_only: bool = False
    """Whether the predicate's (and the test's) answers and reasons depend on nothing but
    the listing, its name view and :attr:`EvalContext.game`: not on the clock, the
    reference prices or the budget. The engine then keeps a listing's decisions while
    the listing, its game and the rules are unchanged, and judges only what changed (a
    search repeats most of its listings). False by default, so a criterion that does not
    say is judged afresh every time."""
    needs_search: bool = True
    """Whether the predicate needs what only a v2 search returns (stickers' wear and
    price; anything beyond the listing fields of the live feed: ``item_id``, ``name``,
    ``price``, ``float``, ``phase``, ``paint_index``, ``sticker_names``,
    ``platform_price``, ``unlock_at``). A listing from the feed that such a rule could
    accept is confirmed by one search of its name before buying; the others are bought at
    once. True by default, so a plugin that does not say is never judged on less than it
    reads; the built-ins that only read feed fields say False. Ignored for a criterion
    without a predicate (it judges nothing)."""
    feed_test: Test | None = None
    """For a criterion that :attr:`needs_search`: what a feed event already tells of it.
    A test on the feed's fields (and :attr:`EvalContext.sticker_prices`) that is false
    only for a listing the criterion can never pass whatever a search shows (too few
    sticker names, stickers whose known prices cannot add up to the value asked), so
    such a feed listing costs no confirming search. ``None``: the feed tells nothing of
    it (every listing that passes the rule's other checks is searched)."""
    kinds: ReasonKind | None = None
    """The kind of the reason ``predicate`` gives a listing, without its text (see
    :data:`ReasonKind`); ``None``: the engine counts this criterion's reasons from their
    text. Ignored without a predicate."""
    exact: bool = False
    """Whether the criterion vouches that its ``test`` and ``kinds`` pass exactly the
    listings its ``predicate`` passes, and that they fail (or raise) on every listing it
    fails or raises on (what :func:`engine.testing.check_criterion_contract` checks of
    both on its edge listings). The engine then judges a feed event by the rule's ``kinds``
    alone, each check run once for both the verdict and the skip counts, instead of its
    tests and then its kinds. False by default: a criterion that does not say has its
    ``test`` decide and its ``kinds`` count, as declared (one with neither is exact by
    construction: both are its predicate)."""
    raw_fields: frozenset[str] | None = None
    """The raw form of the criterion: the :class:`~engine.models.Listing` attributes its
    predicate, ``test`` and ``kinds`` read (beside the name view and the context's game),
    all among :data:`engine.models.RAW_FIELDS`. A criterion that declares them, and is
    :attr:`listing_only`, is run on a search listing's
    :class:`~engine.models.RawListing` stand-in before any model is built, so a listing
    that no rule watching its name can accept is never built (``engine.rules.RawScreen``);
    it must then read nothing else of the listing (the stand-in has nothing else).
    ``None`` (the default): the criterion may accept anything, so its rule's listings
    are always built."""


@dataclass(frozen=True, slots=True)
class Problem:
    """An error or warning found while loading rules, with its place."""

    severity: Literal["error", "warning"]
    message: str
    location: str | None = None
    field: str | None = None

    def __str__(self) -> str:
        parts = [p for p in (self.location, self.field) if p]
        return ": ".join([*parts, self.message])


class RuleContext:
    """Given to :meth:`Criterion.compile`: the rule being compiled and a way to report.

    ``values`` holds every validated value of the rule (core keys and criteria), so a
    criterion may look at another one (the phase criterion reads the watched names).
    ``price_sources`` are the registered reference price sources by name.
    """

    def __init__(
        self,
        *,
        rule_name: str,
        key: str,
        values: Mapping[str, Any],
        price_sources: Mapping[str, PriceSource],
        where: Callable[[tuple[str | int, ...]], str | None],
        field_prefix: str,
    ) -> None:
        self.rule_name = rule_name
        self.key = key
        self.values = values
        self.price_sources = price_sources
        self.problems: list[Problem] = []
        self._where = where
        self._field_prefix = field_prefix

    def warn(self, message: str, *path: str | int) -> None:
        """Report that the rule probably does not do what its author meant."""
        self._report("warning", message, path)

    def error(self, message: str, *path: str | int) -> None:
        """Report that the rule is wrong (for example: it can never match)."""
        self._report("error", message, path)

    def _report(self, severity: Literal["error", "warning"], message: str, path: Any) -> None:
        sub = (self.key, *path)
        dotted = ".".join(str(p) for p in sub)
        self.problems.append(
            Problem(
                severity=severity,
                message=f"rule {self.rule_name!r}: {message}",
                location=self._where(sub),
                field=f"{self._field_prefix}.{dotted}",
            )
        )


@dataclass(frozen=True)
class Criterion:
    """One YAML key of a rule, contributed by a plugin through ``snipe_register_criteria``.

    ``schema`` is any type pydantic validates (usually a model with ``extra="forbid"``);
    ``compile(value, rule_context)`` receives the validated value and returns a
    :class:`Compiled` (it may report problems through the context). ``description`` is
    shown by ``snipe plugins``; ``example`` is a YAML snippet for the documentation.
    ``plugin`` is filled in by the engine with the name of the plugin that registered it.
    """

    key: str
    schema: Any
    compile: Callable[[Any, RuleContext], Compiled]
    description: str = ""
    example: str = ""
    plugin: str = ""


class PriceSource:
    """A reference price source, contributed through ``snipe_register_price_sources``.

    A criterion names the sources it reads in :attr:`Compiled.references` (the built-in
    ``discount`` names those of its ``versus``). When a rule names a source, the engine
    awaits :meth:`fetch` for the watched names every :attr:`every` seconds, in its
    references step beside the buying path (I/O happens there, never in a predicate, never
    between a search answer and a purchase). Decisions read the answer last held, put into
    :attr:`EvalContext.reference_prices` under :attr:`name`, with the time it was fetched
    in :attr:`EvalContext.reference_as_of` (its age, for ``discount.max_age``);
    :meth:`reference` then reads it per listing. A failed fetch keeps the last answer,
    its age growing. Subclass and set ``name``.
    """

    name: str = ""
    description: str = ""
    every: float | None = 60.0
    """Seconds between two :meth:`fetch` calls; ``None``: never fetched (a source whose
    prices come with the listing, or from the engine's reference hub)."""

    async def fetch(self, names: Sequence[str]) -> Mapping[str, Money]:
        """Reference prices (USD x 1000) for ``names``; names without one are left out.
        Called off the buying path, every :attr:`every` seconds; it may take its time."""
        return {}

    def reference(self, listing: Listing, view: NameView, ctx: EvalContext) -> Money | None:
        """The reference price for ``listing``: by its own name, then by its base name."""
        table = ctx.reference_prices.get(self.name)
        if not table:
            return None
        price = table.get(listing.name)
        return table.get(view.base_name) if price is None else price

    def quote(self, listing: Listing, view: NameView, ctx: EvalContext) -> Quote | None:
        """The reference for ``listing`` with its observations and age, for the guards
        ``min_observations`` and ``max_age``.

        From :attr:`EvalContext.references` when the engine filled a table for this
        source: by (base name, phase) when the listing's phase is known (a Doppler phase is
        never judged by another phase's price, nor by the name's price over all phases),
        else by (base name, ``None``). Otherwise :meth:`reference`, with no observation
        count, as of when :meth:`fetch` answered (``ctx.reference_as_of``), else as of now
        (a price that comes with the listing is current).
        """
        table = ctx.references.get(self.name)
        if table is not None:
            phase = listing.phase or view.phase
            return table.get((view.base_name, phase))
        price = self.reference(listing, view, ctx)
        return Quote(price, None, ctx.reference_as_of.get(self.name, ctx.now)) if price else None

    def __repr__(self) -> str:
        return f"<PriceSource {self.name!r}>"
