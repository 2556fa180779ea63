"""The engine's observable state: running or HALTED, and the counters a status line shows."""

from __future__ import annotations

import enum
import logging
import re
from collections import Counter, deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from ..rules import NO_REASON, CompiledRule, Scan, rejection_kinds, rejection_reasons

if TYPE_CHECKING:
    from ..models import Listing, SetAside
    from ..rules import Decision, EvalContext, NameView

__all__ = [
    "RECENT_PURCHASES",
    "EngineMode",
    "EngineStatus",
    "Outcome",
    "PurchaseRecord",
    "SkipTally",
    "reason_kind",
    "tally_pairs",
    "tally_skips",
]

_Pair = tuple["CompiledRule", "Listing", "NameView"]
"""A (rule, listing, view) pair the rules' checks turned down."""

_NO_REASONS = (NO_REASON,)

_Example = tuple["CompiledRule", int, Any, Any, Any]
"""An example whose text is made when read: (rule, index of its predicate in
``rule.sites``, listing, view, context)."""


RECENT_PURCHASES = 100
"""How many of the latest purchase attempts :attr:`EngineStatus.purchases` keeps (the
ledger keeps every purchase; this is what observers show)."""

SKIPS_HELD = 256
"""How many decisions (or scanned listings) :class:`EngineStatus` holds before counting
their skip reasons (see :meth:`EngineStatus.skipped_all`): a bound on the memory held and
on the pause one count makes when nobody asks for the counts in between (1,024 feed
events paused the loop 22 ms on the loaded machine: each reason of a feed event is new
text for :func:`reason_kind`)."""

log = logging.getLogger("snipe.engine")


class EngineMode(enum.Enum):
    STARTING = "starting"
    RUNNING = "running"
    HALTED = "halted"
    """Buying has stopped for a reason a person must look at; reconciling goes on."""
    STOPPED = "stopped"


class Outcome(enum.Enum):
    """What happened to one accepted decision."""

    BOUGHT = "bought"
    RESERVED = "reserved"
    REFUSED = "refused"
    UNKNOWN = "unknown"
    NOT_SENT = "not_sent"
    VETOED = "vetoed"
    CAPPED = "capped"
    DUPLICATE = "duplicate"
    DRY_RUN = "dry_run"
    PAPER = "paper"
    """A paper run's would-be purchase: not sent, pending its judgement (engine.paper)."""


@dataclass(frozen=True)
class PurchaseRecord:
    """One accepted decision and what came of it, for summaries."""

    at: float
    name: str
    item_id: str
    rule: str
    price: int
    outcome: Outcome
    detail: str | None
    reasons: tuple[str, ...]
    reference: int | None = None
    """The listing's reference (platform) price when it had one, USD x 1000."""
    float_value: float | None = None


@dataclass
class EngineStatus:
    """Counters and the HALTED switch. Only the engine's own tasks write it."""

    mode: EngineMode = EngineMode.STARTING
    halt_reason: str | None = None
    started_at: float | None = None
    searches: int = 0
    rate_limited: int = 0
    snapshots: int = 0
    snapshot_bytes: Counter[str] = field(default_factory=Counter)
    """Bytes of prices snapshot downloaded (as sent, gzip), by game (``all``: unfiltered)."""
    listings_seen: int = 0
    candidates: int = 0
    consecutive_failures: int = 0
    outcomes: Counter[Outcome] = field(default_factory=Counter)
    _skip_reasons: Counter[str] = field(default_factory=Counter, repr=False)
    # an example is its text, or (rule, site, listing, view, context) whose text is made
    # when read (_Example): the latest pair of that kind, its reason from the same rule
    _skip_examples: dict[tuple[str, str], str | _Example] = field(default_factory=dict, repr=False)
    _examples_unmade: bool = field(default=False, repr=False)
    _skip_by_rule: Counter[tuple[str, str]] = field(default_factory=Counter, repr=False)
    _skips_pending: list[Scan | Sequence[Decision] | _Tallied] = field(
        default_factory=list, repr=False
    )
    """Batches whose skip reasons are not counted yet, oldest first (see
    :meth:`skipped_scan`)."""
    _skips_pending_listings: int = field(default=0, repr=False)
    _found_counts: dict[int, int] = field(default_factory=dict, repr=False)
    """Reasons of one kind that :meth:`skipped_found` met since the counts were last
    brought up to date, by the kind's slot (``CompiledRule.kind_slots``), first met first:
    newer than every batch counted, older than every batch held (:meth:`skipped_found`
    counts those first)."""
    _found_latest: dict[int, _Example] = field(default_factory=dict, repr=False)
    """The latest example of each slot of ``_found_counts``."""
    purchases: deque[PurchaseRecord] = field(default_factory=lambda: deque(maxlen=RECENT_PURCHASES))
    """The latest purchase attempts, oldest first (at most :data:`RECENT_PURCHASES`)."""
    purchases_recorded: int = 0
    """Purchase attempts recorded since the start (``purchases`` holds the latest)."""
    errors: deque[str] = field(default_factory=lambda: deque(maxlen=20))
    set_aside: Counter[tuple[str, str]] = field(default_factory=Counter)
    """Items of answers that could not be read and were left out, by (endpoint, field)."""
    set_aside_example: dict[tuple[str, str], str] = field(default_factory=dict)
    """The latest such item of each (endpoint, field), described."""
    error_counts: Counter[str] = field(default_factory=Counter)
    """How often each kind of error happened (:func:`reason_kind`); the log gets the first
    of a kind, then one line at every power of ten, so a repeated error does not flood it."""
    error_texts: dict[str, str] = field(default_factory=dict)
    """The first full text of each kind of error."""
    waiting: str | None = None
    """While the start-up gate waits out a transient failure: what it waits for."""
    start_attempts: int = 0
    """Attempts of the start-up gate's account check so far."""
    buying_since: float | None = None
    """When the start-up gate let buying begin (engine clock)."""
    unexpected: Counter[str] = field(default_factory=Counter)
    """Errors outside snipe's own types, by the loop they happened in."""
    paused: str | None = None
    """Why an operator paused buying (``None``: not paused); unlike HALTED, resumable."""
    on_halt: Callable[[str], None] | None = field(default=None, repr=False, compare=False)
    """Told the reason once, when buying HALTs (the engine passes it to the
    ``snipe_halted`` hook); one that raises is logged and ignored."""

    @property
    def halted(self) -> bool:
        return self.mode is EngineMode.HALTED

    @property
    def buying_allowed(self) -> bool:
        return self.mode is EngineMode.RUNNING and self.paused is None

    def halt(self, reason: str) -> None:
        """Stop buying (reconciling goes on). The first reason is kept."""
        if self.mode is not EngineMode.HALTED:
            self.mode = EngineMode.HALTED
            self.halt_reason = reason
            log.error("HALTED: %s", reason)
            if self.on_halt is not None:
                try:
                    self.on_halt(reason)
                except Exception:
                    log.exception("the HALT observer failed")

    def record_purchase(self, record: PurchaseRecord) -> None:
        """Keep ``record`` among the latest purchase attempts."""
        self.purchases.append(record)
        self.purchases_recorded += 1

    def purchases_since(self, recorded: int) -> list[PurchaseRecord]:
        """The attempts recorded after the first ``recorded`` ones (those still kept)."""
        new = self.purchases_recorded - recorded
        if new <= 0:
            return []
        held = list(self.purchases)
        return held[-new:] if new < len(held) else held

    def item_set_aside(self, endpoint: str, item: SetAside) -> None:
        """The client's malformed-item observer: count it (the client logs each kind)."""
        kind = (endpoint, item.field)
        self.set_aside[kind] += 1
        self.set_aside_example[kind] = str(item)[:300]

    def error(self, text: str) -> None:
        kind = reason_kind(text)
        self.error_counts[kind] += 1
        count = self.error_counts[kind]
        if count == 1:
            self.error_texts[kind] = text
            self.errors.append(text)
            log.warning("%s", text)
        elif _power_of_ten(count):
            self.errors.append(f"{text} (seen {count} times)")
            log.warning("%s (seen %d times)", text, count)

    def repeated_errors(self) -> dict[str, int]:
        """Each kind of error (its first text) and how often it happened."""
        return {self.error_texts[kind]: n for kind, n in self.error_counts.items()}

    # -- skip reasons: counted when read -------------------------------------------------
    #
    # A turned-down (listing, rule) pair costs no text while deciding: a batch is held as
    # the rules' scan (or its decisions) and its reasons are worked out from the same
    # compiled rules (engine.rules.rejection_kinds) when the counts are read, or when
    # SKIPS_HELD listings are held. Same counts, same order, same examples as counting
    # each batch at once: the batches are counted in the order they were decided.
    # Counting costs no text either for a predicate whose reasons are all of one kind
    # (the core's max_price and trade lock): it is counted by its kind, known when the
    # rule was compiled, and only the latest example of each kind is made into text,
    # when the examples are read.

    @property
    def skip_reasons(self) -> Counter[str]:
        """How often each kind of reason turned a listing down (keys: :func:`reason_kind`,
        an internal key never shown: ``skip_examples`` has a full reason of each kind)."""
        if self._skips_pending or self._found_counts:
            self._count_skips()
        return self._skip_reasons

    @property
    def skip_examples(self) -> dict[tuple[str, str], str]:
        """For each (rule, kind of reason), the latest full reason of that kind."""
        if self._skips_pending or self._found_counts:
            self._count_skips()
        examples = self._skip_examples
        if self._examples_unmade:
            self._examples_unmade = False
            for key, example in examples.items():
                if type(example) is tuple:
                    rule, site, listing, view, context = example
                    examples[key] = rule.site_reason(site, listing, view, context)
        return cast(dict[tuple[str, str], str], examples)

    @property
    def skip_by_rule(self) -> Counter[tuple[str, str]]:
        """How often each (rule, kind of reason) turned a listing down."""
        if self._skips_pending or self._found_counts:
            self._count_skips()
        return self._skip_by_rule

    def skipped(self, rule: str, reason: str) -> None:
        """Count ``reason`` (a full reason) turning down a listing for ``rule``."""
        if self._skips_pending or self._found_counts:
            self._count_skips()
        kind = reason_kind(reason)
        self._skip_reasons[kind] += 1
        self._skip_by_rule[rule, kind] += 1
        self._skip_examples[rule, kind] = reason

    def skipped_all(self, decisions: Sequence[Decision], *, buying: bool = False) -> None:
        """Count every reason of every turned-down decision, as :meth:`skipped` one by one
        would (same counts, same insertion order, the last reason of a kind its example),
        when the counts are next read: the reasons of a decision turned down by the rules'
        checks are worked out on demand (``decisions`` must not change afterwards).
        ``buying``: the batch has purchases to make, so what is held is not counted now
        even past :data:`SKIPS_HELD` (the next batch without one, or a read, counts it)."""
        self._hold(decisions, len(decisions), buying)

    def skipped_scan(self, checked: Scan) -> None:
        """Count the reasons of every pair ``checked`` turned down (and of its
        decisions), as :meth:`skipped_all` of its ``all_decisions()`` would, without
        building a decision or a reason now."""
        self._hold(checked, len(checked.listings) + len(checked.decisions), False)

    def skipped_pairs(
        self,
        rules: Sequence[CompiledRule],
        listing: Listing,
        view: NameView,
        context: EvalContext,
    ) -> None:
        """Count, now, the reasons of every rule of ``rules`` (a name's watching rules, all
        of whose checks turned ``listing`` down in ``context``), as :meth:`skipped_scan`
        of a scan of ``listing`` alone would: same counts, same order, same examples. For
        one listing at a time (a feed event): nothing held, no scan kept, and the rules'
        kinds run right after their checks, while what the checks worked out (a reference
        chosen) is still at hand (``engine.builtin``'s chooser keeps its latest)."""
        found: list[Sequence[int | str]] = []
        for rule in rules:
            kinds = rule.kinds
            found.append(
                (kinds(listing, view, context) or _NO_REASONS)
                if kinds is not None
                else rejection_reasons(rule, listing, view, context)
            )
        self.skipped_found(rules, found, listing, view, context)

    def skipped_found(
        self,
        rules: Sequence[CompiledRule],
        found: Sequence[Sequence[int | str]],
        listing: Listing,
        view: NameView,
        context: EvalContext,
    ) -> None:
        """:meth:`skipped_pairs`, given what each rule's ``kinds`` gave ``listing`` (per
        rule of ``rules``, in order; a feed's judge ran them: ``engine.rules._judge``).

        Per feed event: a reason of one kind is counted by its kind's slot (an int: no
        tuple made and hashed, no Counter touched per reason) and put in the counts by
        kind when they are next read or another batch is counted (:meth:`_count_found`),
        in the order the slots were first met: the same counts, order and examples."""
        if self._skips_pending:  # the batches before this one are counted first
            self._count_skips()
        counts, latest = self._found_counts, self._found_latest
        count = counts.get
        for rule, found_by in zip(rules, found, strict=True):
            slots = rule.kind_slots
            for reason in found_by:
                if type(reason) is int:  # of one kind (engine.rules.rejection_kinds): no text
                    slot = slots[reason]
                    counts[slot] = count(slot, 0) + 1
                    latest[slot] = (rule, reason, listing, view, context)
                else:  # its text: counted now, after the slots met before it
                    if counts:
                        self._count_found()
                    text = cast(str, reason)
                    key = (rule.name, _KINDS.get(text) or reason_kind(text))
                    self._skip_examples[key] = text
                    self._skip_reasons[key[1]] += 1
                    self._skip_by_rule[key] += 1

    def _count_found(self) -> None:
        """Put the reasons :meth:`skipped_found` counted by slot in the counts by kind."""
        counts, latest = self._found_counts, self._found_latest
        reasons, counted, examples = self._skip_reasons, self._skip_by_rule, self._skip_examples
        for slot, n in counts.items():
            example = latest[slot]
            key = example[0].site_kinds[example[1]]  # (a slot's ids share their key)
            reasons[key[1]] += n
            counted[key] += n
            examples[key] = example
        self._examples_unmade = True
        counts.clear()
        latest.clear()

    def _hold(self, batch: Scan | Sequence[Decision] | _Tallied, size: int, buying: bool) -> None:
        self._skips_pending.append(batch)
        self._skips_pending_listings += size
        if not buying and self._skips_pending_listings >= SKIPS_HELD:
            self._count_skips()

    def skipped_tallies(self, tallies: Sequence[SkipTally]) -> None:
        """Count the reasons ``tallies`` hold (see :func:`tally_skips`), in order, as
        :meth:`skipped_all` of the decisions they were made from would."""
        self._hold(_Tallied(tallies), sum(t.decisions for t in tallies), False)

    def _count_skips(self) -> None:
        if self._found_counts:  # met before every batch held (skipped_found counts those)
            self._count_found()
        pending, self._skips_pending = self._skips_pending, []
        self._skips_pending_listings = 0
        by_rule: dict[tuple[str, str], int] = {}
        examples: dict[tuple[str, str], str | _Example] = {}
        for batch in pending:
            if isinstance(batch, _Tallied):
                for held in batch:
                    # a name's counts made when it was judged: merged in the same order
                    # (first seen first, the latest example last) as counting its pairs
                    for key, n in held.counts:
                        by_rule[key] = by_rule.get(key, 0) + n
                    examples.update(held.examples)
            else:
                _tally_into(batch, by_rule, examples)
        reasons, counted = self._skip_reasons, self._skip_by_rule
        for key, n in by_rule.items():
            reasons[key[1]] += n
            counted[key] += n
        if examples:
            self._skip_examples.update(examples)
            self._examples_unmade = True


class SkipTally:
    """The skip counts of one batch of decisions, made once (:func:`tally_skips`) and
    counted again each time the same decisions stand (a name whose listings did not
    change since they were judged): ``counts`` in the order the keys were first met,
    ``examples`` the latest of each key. Never changed once made."""

    __slots__ = ("counts", "decisions", "examples")

    def __init__(
        self,
        counts: tuple[tuple[tuple[str, str], int], ...],
        examples: dict[tuple[str, str], str | _Example],
        decisions: int,
    ) -> None:
        self.counts = counts
        self.examples = examples
        self.decisions = decisions


class _Tallied(tuple[SkipTally, ...]):
    """A batch of :class:`SkipTally` held for counting (told apart from decisions)."""

    __slots__ = ()


def tally_skips(decisions: Sequence[Decision]) -> SkipTally:
    """The skip counts of ``decisions``, as :meth:`EngineStatus.skipped_all` would count
    them (same reasons, same examples: worked out from the same compiled rules)."""
    by_rule: dict[tuple[str, str], int] = {}
    examples: dict[tuple[str, str], str | _Example] = {}
    _tally_into(decisions, by_rule, examples)
    return SkipTally(tuple(by_rule.items()), examples, len(decisions))


def _tally_into(
    batch: Scan | Sequence[Decision],
    by_rule: dict[tuple[str, str], int],
    examples: dict[tuple[str, str], str | _Example],
) -> None:
    """Count every reason of every pair ``batch`` turned down into ``by_rule`` (key:
    (rule, kind)), the latest of each key into ``examples``."""
    kinds, kind_of, found_in = _KINDS, reason_kind, rejection_kinds
    if isinstance(batch, Scan):  # the pairs its rules' checks turned down first
        _tally_pairs(batch.rejected(), batch.context, by_rule, examples)
        decisions: Sequence[Decision] = batch.decisions
    else:
        decisions = batch
    for decision in decisions:
        if decision[2]:  # accepted (a Decision is a tuple: no property call per pair)
            continue
        found: Sequence[int | str] | None = decision[7]  # reasons made when allocating
        if found is None:  # turned down by its rule's checks: made on demand
            rule, listing, view, context = (
                decision[8],
                decision[0],
                decision[9],
                decision[10],
            )
            found = found_in(rule, listing, view, context)
        for reason in found:
            if isinstance(reason, str):
                key = (decision[1], kinds.get(reason) or kind_of(reason))
                examples[key] = reason
            else:
                key = rule.site_kinds[reason]
                examples[key] = (rule, reason, listing, view, context)
            by_rule[key] = by_rule.get(key, 0) + 1


def tally_pairs(pairs: Iterable[_Pair], context: EvalContext) -> SkipTally:
    """The skip counts of the pairs the rules' checks turned down (``pairs``: (rule,
    listing, view), as :meth:`engine.rules.Scan.rejected` gives them, judged in
    ``context``), as :func:`tally_skips` of their decisions would count them, without
    building a decision."""
    by_rule: dict[tuple[str, str], int] = {}
    examples: dict[tuple[str, str], str | _Example] = {}
    n = _tally_pairs(pairs, context, by_rule, examples)
    return SkipTally(tuple(by_rule.items()), examples, n)


def _tally_pairs(
    pairs: Iterable[_Pair],
    context: EvalContext,
    by_rule: dict[tuple[str, str], int],
    examples: dict[tuple[str, str], str | _Example],
) -> int:
    """Count the reasons of turned-down ``pairs`` (see :func:`_tally_into`); returns how
    many pairs there were."""
    kinds, kind_of, found_in = _KINDS, reason_kind, rejection_kinds
    n = 0
    for rule, listing, view in pairs:
        n += 1
        for reason in found_in(rule, listing, view, context):
            if isinstance(reason, str):
                key = (rule.name, kinds.get(reason) or kind_of(reason))
                examples[key] = reason
            else:  # of one kind (engine.rules.rejection_kinds): no text
                key = rule.site_kinds[reason]
                examples[key] = (rule, reason, listing, view, context)
            by_rule[key] = by_rule.get(key, 0) + 1
    return n


def _power_of_ten(n: int) -> bool:
    while n % 10 == 0:
        n //= 10
    return n == 1


_NUMBER = re.compile(r"-?\$?[0-9][0-9,]*(?:\.[0-9]+)?")


_KINDS: dict[str, str] = {}
_KINDS_HELD = 200_000


def reason_kind(reason: str) -> str:
    """A key for alike reasons or errors: the text with its numbers blanked. Only a key:
    show the full reasons (``skip_examples``), never this."""
    # Memoised: a backtest meets the same listing (same price, same reason) search after
    # search, and the regular expression was a tenth of its time (bench_backtest (d)).
    kind = _KINDS.get(reason)
    if kind is None:
        if len(_KINDS) >= _KINDS_HELD:
            _KINDS.clear()
        kind = _KINDS[reason] = _NUMBER.sub("#", reason)
    return kind
