"""A feed event's listing, from the event to a purchase, a confirming search or a skip.

:class:`FeedListings` is a part of :class:`~engine.sniper._feedwatch.FeedWatch` (a
mixin, so the watch's attributes are its own; see that module's docstring for what the
feed is to the engine): the per-event path, run for every ``new`` and ``update`` event of
a watched name (~430 events a second live, a quarter of them watched), and the priority
lane's flags of the listings a search must confirm. It lives apart to keep
``_feedwatch.py`` a readable size.

Per event, the rules' checks run on the listing alone (the name's plan, as
:func:`engine.rules.scan` runs it for a batch of one); when no rule's checks pass (most
events), the skip reasons are counted at once (:meth:`EngineStatus.skipped_pairs`), with
no scan, decision or reason text made; a listing some rule passes goes through
:meth:`Engine.decide`, the one path to a purchase. When every rule of the name is exact,
its judge (:mod:`engine.rules._judge`) does both at once: each rule's ``kinds`` runs
once, its verdict the plan's, its kinds the counts.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from typing import TYPE_CHECKING

from ..client import FeedListingEvent
from ..models import FeedListing, Listing
from ..rules import CompiledRule, Decision, EvalContext, Judge, NameView, Plan, watching
from ._auditbook import AuditBook
from ._confirm import BEYOND, SKIP_KINDS, Candidate, ConfirmQueue
from ._known import KnownListings

if TYPE_CHECKING:
    from ._auditbook import Suspect
    from ._engine import Engine

__all__ = ["CONFIRM", "FeedListings", "Watching"]

log = logging.getLogger("snipe.engine.feed")
_ENGINE_LOG = logging.getLogger("snipe.engine")  # Engine.decide logs every decision at DEBUG

CONFIRM = "confirm"
"""The source of a priority-lane flag put for the feed's candidates
(:meth:`SearchSchedule.flag`): withdrawn when none of the name's candidates waits."""

Watching = tuple[tuple[CompiledRule, ...], int, tuple[CompiledRule, ...], Judge | None]
"""A name's watching rules, their highest ``max_price``, those of them that confirm a
feed listing by a search first, and their judge (``None``: a rule is not exact)."""

Named = (
    tuple[NameView, tuple[CompiledRule, ...], Plan, int, tuple[CompiledRule, ...], Judge | None]
    | tuple[()]
)
"""What a feed event of a name needs: its view, watching rules and their plan (the rules'
index entry, :func:`engine.rules.watching`) and the rest of its :data:`Watching`; ``()``
when no rule watches it."""

NAMES_HELD = 65_536
"""Names whose :data:`Named` is kept before they are all made again (a bound on memory:
names come from the service)."""


class FeedListings:
    """The listing events of :class:`~engine.sniper._feedwatch.FeedWatch` (see the module
    docstring); the attributes below are the watch's, set by its constructor."""

    engine: Engine
    events: int
    bought: int
    bought_items: set[str]
    _last_event_at: float | None
    _seen: dict[str, float]
    _confirms: dict[str, bool]
    _confirms_of: object
    _any_confirms: bool
    _ceilings: dict[int, Watching]
    _names: dict[str, Named]
    _cheap_tier: bool
    _suspects: dict[str, tuple[Suspect, str | None]]
    book: AuditBook
    known: KnownListings
    confirm: ConfirmQueue

    def _needs_search(self) -> dict[str, bool]:
        """Rule name -> whether its feed listings are confirmed by a search first, for the
        rules running now (an operator may replace them between two events)."""
        ruleset = self.engine.ruleset
        if self._confirms_of is not ruleset:
            self._confirms = {r.name: r.needs_search for r in ruleset.rules}
            self._any_confirms = any(self._confirms.values())
            self._confirms_of = ruleset
            self._ceilings = {}
            self._names = {}
        return self._confirms

    def _watching(self, rules: tuple[CompiledRule, ...]) -> Watching:
        """What the event path needs of ``rules`` (a name's watching rules), made once per
        tuple (shared by its names; kept with it so a reused id cannot mislead): above the
        highest ``max_price`` no rule could buy, and the event costs no decision."""
        known = self._ceilings.get(id(rules))
        if known is not None and known[0] is rules:
            return known
        if len(self._ceilings) >= 4096:  # views are remade when the rule set's cache fills
            self._ceilings.clear()
        made = (
            rules,
            max(r.max_price for r in rules),
            tuple(r for r in rules if r.needs_search),
            self.engine.ruleset.judge(rules),
        )
        self._ceilings[id(rules)] = made
        return made

    def _name(self, name: str) -> Named:
        """``name``'s :data:`Named` for the rules running now, made once per name (the
        rules' index entry and :meth:`_watching`'s, one lookup an event)."""
        if self._confirms_of is not self.engine.ruleset:
            self._needs_search()  # a new rule set: what was made for the old one goes
        named = self._names.get(name)
        if named is None:
            entry = watching(self.engine.ruleset, name)
            if entry:
                view, rules, plan = entry
                _, ceiling, confirming, judge = self._watching(rules)
                named = (view, rules, plan, ceiling, confirming, judge)
            else:
                named = ()
            if len(self._names) >= NAMES_HELD:
                self._names.clear()
            self._names[name] = named
        return named

    def _listing(self, event: FeedListingEvent) -> Awaitable[None] | None:
        """A ``new`` or ``update`` event: handled now when no rule's checks pass it (nearly
        every event); else what is left to await, its way through :meth:`Engine.decide`
        (a plain call then: no coroutine made and awaited per event)."""
        engine = self.engine
        now = engine.clock.now()
        self.events += 1
        self._last_event_at = now
        listing = event.listing
        names = self._names
        named = names.get(listing.name) if self._confirms_of is engine.ruleset else None
        if named is None:
            named = self._name(listing.name)
        if not named:
            return None
        view, rules, plan, ceiling, confirming, judge = named
        # re-told ids move to the end, so the oldest is first (see _forget)
        self._seen.pop(listing.item_id, None)
        self._seen[listing.item_id] = now
        if self._cheap_tier:
            self.book.told(listing.name, listing.item_id, listing.price, event.kind, now)
        if listing.price > ceiling:
            return None  # no rule could buy it: no ledger read
        # a listing a recent search showed: decided on what it showed, by every rule
        # (its name, so its rules, the event's: only search-only fields are added)
        shown = self.known.enrich(listing, now) if self._any_confirms else None
        subject = shown or listing
        context = engine.eval_context([subject], now, listing.game)
        # What Engine.decide does when no rule's checks pass (its decisions are all
        # turn-downs, the budget and the ledger unread), without a scan or a Decision
        # built per turned-down pair: the skip counts are the same. A listing some rule
        # passes (or a debug log of every decision) goes through decide itself, the one
        # path to a purchase.
        if judge is not None:  # each rule's checks run once, for the verdict and counts
            found = judge(subject, view, context)
            turned_down = found is not None
        else:
            found = None
            passed: list[object] = []
            plan(subject, view, context, passed.append)  # scan's first pass, for one listing
            turned_down = not passed
        if turned_down and not _ENGINE_LOG.isEnabledFor(logging.DEBUG):
            if found is not None:
                engine.status.skipped_found(rules, found, subject, view, context)
            else:
                engine.status.skipped_pairs(rules, subject, view, context)
            self._unbought(listing, shown, view, confirming, context, now)
            return None
        return self._decide(listing, shown, subject, view, confirming, now)

    async def _decide(
        self,
        listing: FeedListing,
        shown: Listing | None,
        subject: Listing,
        view: NameView,
        confirming: tuple[CompiledRule, ...],
        now: float,
    ) -> None:
        """``listing``'s event, some rule's checks passing ``subject`` (what a search
        showed of it, or itself): through :meth:`Engine.decide` and the buyer."""
        engine = self.engine
        confirms = self._confirms
        decisions, context = await engine.decide([subject], now, game=listing.game)
        buy = [
            d
            for d in decisions
            if d.accepted and (shown is not None or not confirms.get(d.rule, True))
        ]
        if buy:
            if shown is not None:
                self._drop_candidate(listing)  # decided: an older event's wait is over
            if listing.item_id in await engine._buy(buy, context):
                self.bought += 1
                self.bought_items.add(listing.item_id)
            return
        self._unbought(listing, shown, view, confirming, context, now)

    def _unbought(
        self,
        listing: Listing,
        shown: Listing | None,
        view: NameView,
        confirming: tuple[CompiledRule, ...],
        context: EvalContext,
        now: float,
    ) -> None:
        """``listing``'s event bought nothing: decided on what a search showed, an older
        event's wait for a search is over; else a rule that needs a search may want one."""
        if shown is not None:
            self._drop_candidate(listing)
        elif confirming:
            self._maybe_confirm(listing, view, confirming, context, now)

    def _maybe_confirm(
        self,
        listing: Listing,
        view: NameView,
        confirming: tuple[CompiledRule, ...],
        context: EvalContext,
        now: float,
    ) -> None:
        """A listing no rule bought on the event: a candidate for a confirming search if a
        rule that needs one (of ``confirming``, the name's) passes what the feed can tell
        of it (else it can never be a deal, and costs no search)."""
        if listing.item_id in self.bought_items:
            return  # told again after the feed's purchase of it
        price = listing.price
        wanting: list[CompiledRule] | None = None  # (made for a candidate only: few)
        for r in confirming:  # (a loop: no comprehension frame per event)
            if price <= r.max_price and (
                r.feed_passes is None or r.feed_passes(listing, view, context)
            ):
                if wanting is None:
                    wanting = [r]
                else:
                    wanting.append(r)
        if wanting is None:
            return
        engine = self.engine
        name = engine._searched_name(listing.name)
        candidate = Candidate(listing, now, tuple(wanting))
        if self.known.beyond(name, listing.price, now):
            # a search seconds ago showed 50 listings of the name, all cheaper: this one's
            # search could not show it either (what settle() would find, a search sooner)
            self.confirm.skipped[SKIP_KINDS[BEYOND]] += 1
            self._skipped([(candidate, BEYOND)])
            return
        # every candidate of a name waits for the same search: a burst of events of one
        # name costs one search (flagging a flagged name only raises its rank)
        self.confirm.add(name, candidate)
        self._flag(name, max(r.max_price for r in wanting) - listing.price, now, CONFIRM)

    def _flag(self, name: str, promise: int, now: float, source: str = "") -> None:
        """Put ``name`` in the priority lane (the search step's next batches); ``source``
        :data:`CONFIRM`: for candidates only (withdrawn when none waits)."""
        schedule = self.engine.schedule
        if name not in schedule.watched:  # a copy of every watched name: only when new
            schedule.watch(schedule.watched | {name})
        hot = schedule.hot_count
        schedule.flag(name, promise=promise, at=now, source=source)
        if schedule.hot_count != hot:  # already flagged: the search is due already
            self.engine.wake()

    def _drop_candidate(self, listing: Listing) -> None:
        """``listing``'s candidate (an older event's) is no longer waiting; its name leaves
        the priority lane when none of its candidates waits."""
        if self.confirm.forget(listing.item_id) is not None:
            self._unflag(listing.name)

    def _unflag(self, name: str) -> None:
        """No candidate of ``name`` waits any more: the feed's flag on it is withdrawn (a
        search would confirm nothing), unless the cheap audit suspects it."""
        searched = self.engine._searched_name(name)
        if not self.confirm.waiting(searched) and searched not in self._suspects:
            self.engine.schedule.unflag(searched, source=CONFIRM)

    def _skipped(self, skipped: list[tuple[Candidate, str]]) -> None:
        """Candidates not bought for ``skipped``'s reasons: counted with the engine's
        other skips (per rule and reason), never bought on the feed's word."""
        decisions = [
            Decision(c.listing, r.name, False, (why,), c.listing.price, r.action, r.priority, False)
            for c, why in skipped
            for r in c.rules
        ]
        for decision in decisions:
            log.debug("%s", decision)
        self.engine.status.skipped_all(decisions)
