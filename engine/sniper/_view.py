"""One read model of the engine: :class:`EngineView`, a bounded snapshot of its state.

Everything that shows the engine to a person or a program reads one view, built by
:meth:`Engine.view`, instead of assembling the figures on its own: the status line
(:func:`status_line`), the status file (``_statusfile.status_document``), the metrics
(``EngineMetrics.refresh``), the daily summary (``_daily.daily_summary``) and the demo's
progress. So they agree on every number, and a new observer (a dashboard, an API) has
one place to read.

Bounded: a view holds counts, the latest purchase attempts (at most
:data:`~engine.sniper._status.RECENT_PURCHASES`), the latest errors and the commonest
skip reasons, never a list that grows with the run. Building one reads the ledger (a few
queries), so observers build one per refresh, not per listing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .._money import format_usd
from ..ledger import utc_day_start
from ..paper import PaperView
from ._bandwidth import format_bytes
from ._budget import budget_words
from ._feedwatch import FeedView
from ._status import EngineMode, Outcome, PurchaseRecord

if TYPE_CHECKING:
    from ._engine import Engine

__all__ = [
    "EngineView",
    "SetAsideCount",
    "SkipCount",
    "build_view",
    "feed_words",
    "status_line",
]

SKIP_KINDS = 20
"""How many of the commonest (rule, kind of reason) pairs a view keeps."""

_WENT_THROUGH = (Outcome.BOUGHT, Outcome.RESERVED)


@dataclass(frozen=True)
class SetAsideCount:
    """Items of answers set aside for one (endpoint, field), with the latest example."""

    endpoint: str
    field: str
    count: int
    example: str | None


@dataclass(frozen=True)
class SkipCount:
    """How often one kind of reason turned a listing down for one rule, with the latest
    full reason of that kind."""

    rule: str
    example: str
    count: int


@dataclass(frozen=True)
class EngineView:
    """The engine's state at ``now`` (engine clock). Money is USD x 1000.

    Ledger figures: ``spent_total``/``spent_today`` are committed purchases (spent and in
    flight; a dry run's would-be purchases), without buy-order exposure, which is
    ``order_exposure``; ``by_state`` counts purchases per ledger state (every state, zeros
    included). Run figures (``searches``, ``outcomes``, ...) count since the engine
    started.
    """

    now: float
    mode: EngineMode
    halt_reason: str | None
    dry_run: bool
    started_at: float | None
    buying_since: float | None
    waiting: str | None
    start_attempts: int
    rules_file: str
    cap_total: int
    cap_per_day: int
    spent_total: int
    spent_today: int
    order_exposure: int
    by_state: Mapping[str, int]
    unresolved: int
    open_trades: int
    overdue: int
    released: int
    search_used: int
    search_limit: int | None
    searches: int
    rate_limited: int
    snapshots: int
    snapshot_bytes: Mapping[str, int]
    listings_seen: int
    candidates: int
    outcomes: Mapping[Outcome, int]
    recent: tuple[PurchaseRecord, ...]
    """The latest purchase attempts, oldest first (bounded)."""
    purchases_recorded: int
    """Purchase attempts recorded since the start (``recent`` holds the latest)."""
    watched: int
    not_searched: int
    median_age: float | None
    oldest_age: float | None
    errors: tuple[str, ...]
    set_aside: tuple[SetAsideCount, ...]
    unexpected: Mapping[str, int]
    skips: tuple[SkipCount, ...]
    """The commonest (rule, kind of reason) pairs, most common first (bounded)."""
    orders_live: int
    """Buy orders snipe placed that are live (their exposure counts against the caps)."""
    orders_planned: int
    """Buy orders a dry run would place."""
    references: Mapping[str, int]
    """Reference prices held: ``names`` learned from snapshots, and per price list the
    names it prices."""
    paused: str | None = None
    """Why an operator paused buying (``Engine.pause``), while paused."""
    feed: FeedView | None = None
    """The live listing feed's state; ``None``: the feed is off."""
    paper: PaperView | None = None
    """A paper run's figures (``snipe run --paper``); ``None``: not a paper run."""

    @property
    def halted(self) -> bool:
        return self.mode is EngineMode.HALTED

    @property
    def bought(self) -> int:
        """Purchases that went through this run (bought or reserved)."""
        return sum(self.outcomes.get(o, 0) for o in _WENT_THROUGH)

    @property
    def used_total(self) -> int:
        """What the total cap counts: purchases and buy-order exposure."""
        return self.spent_total + self.order_exposure

    @property
    def used_today(self) -> int:
        """What the daily cap counts: today's purchases and buy-order exposure."""
        return self.spent_today + self.order_exposure

    @property
    def left_total(self) -> int:
        return max(0, self.cap_total - self.used_total)

    @property
    def left_today(self) -> int:
        """Money left today: under the daily cap and under what the total cap leaves."""
        return max(0, min(self.cap_per_day - self.used_today, self.cap_total - self.used_total))


async def build_view(engine: Engine) -> EngineView:
    """The view of ``engine`` now (see :meth:`Engine.view`)."""
    status, ledger, clock = engine.status, engine.ledger, engine.clock
    now = clock.now()
    totals = await ledger.totals()
    today = await ledger.totals(since=utc_day_start(now))
    exposure = (await ledger.order_exposure()).total
    orders_live = len(await ledger.orders())
    unresolved = len(await ledger.unresolved())
    open_trades = len(await ledger.open_trades())
    released = len(await ledger.released(since=now - engine.reconciler.settings.watch))
    used, limit = engine.limiter.usage("search")
    waiting, median, worst = engine.schedule.coverage(now)
    budgets = engine.ruleset.budgets
    hub = engine.references
    return EngineView(
        now=now,
        mode=status.mode,
        halt_reason=status.halt_reason,
        dry_run=engine.settings.dry_run,
        started_at=status.started_at,
        buying_since=status.buying_since,
        waiting=status.waiting,
        start_attempts=status.start_attempts,
        rules_file=engine.ruleset.filename,
        cap_total=budgets.total,
        cap_per_day=budgets.per_day,
        spent_total=totals.committed,
        spent_today=today.committed,
        order_exposure=exposure,
        by_state=dict(totals.by_state),
        unresolved=unresolved,
        open_trades=open_trades,
        overdue=engine.reconciler.overdue,
        released=released,
        search_used=used,
        search_limit=limit,
        searches=status.searches,
        rate_limited=status.rate_limited,
        snapshots=status.snapshots,
        snapshot_bytes=dict(status.snapshot_bytes),
        listings_seen=status.listings_seen,
        candidates=status.candidates,
        outcomes=dict(status.outcomes),
        recent=tuple(status.purchases),
        purchases_recorded=status.purchases_recorded,
        watched=len(engine.schedule.watched),
        not_searched=waiting,
        median_age=median,
        oldest_age=worst,
        errors=tuple(status.errors),
        set_aside=tuple(
            SetAsideCount(endpoint, field, count, status.set_aside_example.get((endpoint, field)))
            for (endpoint, field), count in sorted(status.set_aside.items())
        ),
        unexpected=dict(status.unexpected),
        skips=tuple(
            SkipCount(rule, status.skip_examples[rule, kind], count)
            for (rule, kind), count in status.skip_by_rule.most_common(SKIP_KINDS)
        ),
        orders_live=orders_live,
        orders_planned=len(engine.orders.planned),
        references={
            "names": len(hub.book),
            **{source: len(held.prices) for source, held in hub.lists.items()},
        },
        paused=status.paused,
        feed=engine.feedwatch.view(now),
        paper=await engine.paper.view() if engine.paper is not None else None,
    )


def status_line(view: EngineView) -> str:
    """Spend against caps, search budget used, coverage, candidates, purchase states. A
    dry run says so and speaks of what it would have spent and bought."""
    dry, paper = view.dry_run, view.paper
    states = ", ".join(
        f"{'would buy' if dry and k == 'BOUGHT' else k.lower()} {v}"
        for k, v in view.by_state.items()
        if v
    )
    mode = f"dry run, {view.mode.value}" if dry else view.mode.value
    if paper is not None:
        mode = f"PAPER, {view.mode.value}"
        states = paper_words(paper)
    if view.paused is not None:
        mode += ", paused"
    # a dry run places no buy order: nothing is exposed, and nothing was spent
    spent = (
        f"would spend {format_usd(view.spent_total)}"
        if dry
        else f"paper spent {format_usd(view.spent_total)}"
        if paper is not None
        else budget_words(view.spent_total, view.order_exposure)
    )
    median, worst = view.median_age, view.oldest_age
    ages = "none searched yet" if median is None else f"median age {_age(median)}, oldest "
    if worst is not None:
        ages += _age(worst)
    if view.not_searched and median is not None:
        ages += f", {view.not_searched} not searched yet"
    return (
        f"[{mode}] {spent} of "
        f"{format_usd(view.cap_total)} | searches {view.search_used}/{view.search_limit} in "
        f"window | {view.watched} names, {ages}"
        f" | candidates {view.candidates} | {states or 'no purchases'}"
        + (f" | overdue {view.overdue}" if view.overdue else "")
        + f" | snapshots {format_bytes(sum(view.snapshot_bytes.values()))}"
        + (f" | {feed_words(view.feed)}" if view.feed is not None else "")
    )


def paper_words(paper: PaperView) -> str:
    """A paper run in a few words: ``paper: 2 pending, 5 bought, 3 missed (2 gone, 1 price
    changed), wallet $412.000 of $500.000``."""
    judged = paper.judged
    missed = {k: v for k, v in judged.items() if k != "bought" and v}
    words = f"paper: {paper.pending} pending, {judged.get('bought', 0)} bought"
    words += f", {sum(missed.values())} missed"
    if missed:
        words += " (" + ", ".join(f"{v} {k}" for k, v in missed.items()) + ")"
    if paper.wallet_left is not None and paper.wallet_start is not None:
        words += f", wallet {format_usd(paper.wallet_left)} of {format_usd(paper.wallet_start)}"
    else:
        words += ", wallet not opened yet"
    return words


def feed_words(feed: FeedView) -> str:
    """The feed in a few words: ``feed trusted, 431.2 ev/s, 2 reconnects, 2 healed, ...``."""
    since = (
        "no event yet"
        if feed.seconds_since_event is None
        else (f"last event {feed.seconds_since_event:.0f}s ago")
    )
    words = f"feed {feed.state}, {feed.events_per_second:.1f} ev/s, {since}"
    words += f", {feed.reconnects} reconnects, {feed.gaps_healed} healed, {feed.missed} missed"
    if feed.errors:
        words += f", {feed.errors} errors (last {feed.last_error}), retried"
    if feed.bytes_per_day is not None:
        words += f", {format_bytes(int(feed.bytes_per_day))}/day"
        if feed.compressed:
            words += " deflated"
    return words


def _age(seconds: float) -> str:
    return f"{seconds:.0f}s"
