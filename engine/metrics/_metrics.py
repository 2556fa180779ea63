"""Prometheus metrics of one engine, on a registry of its own (never the global one).

Counters that happen (requests by endpoint and outcome, 429s, detection latency) are
recorded as they happen; figures that are state (purchases by state, spend and caps,
search-budget use, the reconciliation queue, the engine's counters) are read from one
:meth:`~engine.sniper.Engine.view` by :meth:`EngineMetrics.refresh` just before each
scrape, the same view the status line and the status file show.

Money is exported in dollars (``*_usd``), as dashboards expect; the exact figures are in
the ledger (USD x 1000).

Detection latency (``snipe_detection_latency_seconds``): for each purchase that went
through, the seconds from snipe's first sight of the listing to the purchase request. The
first sight is the snapshot poll that flagged the listing's name (a new listing or a price
drop a rule could afford), or, for a listing found by a routine search, that search's
answer. The marketplace does not say when a listing was put up, so the time before the
snapshot showed it is not counted; the snapshot is refreshed every 10 s.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from .._money import MILLS_PER_USD
from ..hookspecs import hookimpl

if TYPE_CHECKING:
    from ..notify import ChannelStats
    from ..rules import Decision, EvalContext
    from ..sniper import Engine, EngineView, FeedView

__all__ = ["CONTENT_TYPE", "DETECTION_BUCKETS", "EngineMetrics", "LatencyTracker"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
DETECTION_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 60.0, 120.0, 300.0)
_FIRST_SEEN_MAX = 50_000


def _usd(amount: int) -> float:
    return amount / MILLS_PER_USD


class LatencyTracker:
    """A plugin object measuring detection latency (see the module docstring) from the
    ``snipe_decisions``, ``snipe_veto_purchase`` (it never vetoes) and ``snipe_purchase``
    hooks."""

    def __init__(self, engine: Engine, histogram: Histogram) -> None:
        self._engine = engine
        self._histogram = histogram
        self._first_seen: dict[str, float] = {}
        self._requested: dict[str, float] = {}

    @hookimpl
    def snipe_decisions(self, decisions: Any, context: EvalContext) -> None:
        flagged = self._engine.schedule.flagged_at
        for decision in decisions:
            if not decision.accepted or decision.item_id in self._first_seen:
                continue
            seen = min(flagged.get(decision.name, context.now), context.now)
            self._first_seen[decision.item_id] = seen
        _forget_oldest(self._first_seen)

    @hookimpl
    def snipe_veto_purchase(self, decision: Decision, context: EvalContext) -> None:
        # asked right before the intent is written and the request sent; some attempts
        # never reach snipe_purchase (dry runs, caps), hence the bound
        self._requested[decision.item_id] = self._engine.clock.now()
        _forget_oldest(self._requested)

    @hookimpl
    def snipe_purchase(self, decision: Decision, outcome: str, detail: str | None) -> None:
        requested = self._requested.pop(decision.item_id, None)
        seen = self._first_seen.pop(decision.item_id, None)
        if outcome == "bought" and requested is not None and seen is not None:
            self._histogram.observe(max(0.0, requested - seen))


def _forget_oldest(times: dict[str, float]) -> None:
    """Keep at most ``_FIRST_SEEN_MAX`` entries (dicts keep insertion order)."""
    if len(times) > _FIRST_SEEN_MAX:
        for key in list(times)[: _FIRST_SEEN_MAX // 2]:
            del times[key]


class EngineMetrics:
    """The metrics of ``engine``. Install :meth:`observe_request` as the client's request
    observer and :attr:`latency` as a plugin; call :meth:`refresh` then :meth:`render`."""

    def __init__(
        self,
        engine: Engine,
        *,
        notifications: Mapping[str, ChannelStats] | None = None,
    ) -> None:
        self.engine = engine
        self.notifications = notifications or {}
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "snipe_requests",
            "Requests to the marketplace by endpoint and outcome (ok or the error kind).",
            ["endpoint", "outcome"],
            registry=self.registry,
        )
        self.rate_limited = Counter(
            "snipe_rate_limited_responses",
            "429 (too many requests) answers received from the marketplace.",
            registry=self.registry,
        )
        self.detection_latency = Histogram(
            "snipe_detection_latency_seconds",
            "Seconds from first sight of a listing to the purchase request, per purchase.",
            buckets=DETECTION_BUCKETS,
            registry=self.registry,
        )
        self.latency = LatencyTracker(engine, self.detection_latency)
        self.state: EngineView | None = None
        """The engine's view at the last :meth:`refresh` (``None`` before the first)."""
        self.registry.register(_StateCollector(self))

    def observe_request(self, endpoint: str, outcome: str) -> None:
        """The client's request observer."""
        self.requests.labels(endpoint=endpoint, outcome=outcome).inc()
        if outcome == "rate_limited":
            self.rate_limited.inc()

    async def refresh(self) -> None:
        """Read the state figures: one view of the engine."""
        self.state = await self.engine.view()

    def render(self) -> bytes:
        """The exposition text (Prometheus text format 0.0.4)."""
        return generate_latest(self.registry)


class _StateCollector(Collector):
    def __init__(self, metrics: EngineMetrics) -> None:
        self._m = metrics

    def describe(self) -> Iterable[Metric]:
        return []  # not known before the first refresh; collected on every scrape

    def collect(self) -> Iterable[Metric]:
        state = self._m.state
        if state is not None:
            yield from _engine_families(state)
        yield _notifications(self._m.notifications)


def _engine_families(state: EngineView) -> Iterable[Metric]:
    """The state figures of one view."""
    purchases = GaugeMetricFamily(
        "snipe_purchases", "Purchases in the ledger by state.", labels=["state"]
    )
    for name, count in sorted(state.by_state.items()):
        purchases.add_metric([name.lower()], count)
    yield purchases
    spend = GaugeMetricFamily(
        "snipe_spend_usd",
        "Money committed by purchases (spent or in flight), in dollars, in the period;"
        " buy-order exposure is not included (snipe_buy_order_exposure_usd).",
        labels=["period"],
    )
    spend.add_metric(["total"], _usd(state.spent_total))
    spend.add_metric(["today"], _usd(state.spent_today))
    yield spend
    yield GaugeMetricFamily(
        "snipe_buy_order_exposure_usd",
        "What live buy orders may still buy, in dollars; every cap counts it.",
        value=_usd(state.order_exposure),
    )
    caps = GaugeMetricFamily("snipe_cap_usd", "Spending caps, in dollars.", labels=["cap"])
    caps.add_metric(["total"], _usd(state.cap_total))
    caps.add_metric(["per_day"], _usd(state.cap_per_day))
    yield caps
    left = GaugeMetricFamily(
        "snipe_cap_remaining_usd",
        "Money left under each cap, in dollars (purchases and buy-order exposure counted).",
        labels=["cap"],
    )
    left.add_metric(["total"], _usd(state.left_total))
    left.add_metric(["per_day"], _usd(state.left_today))
    yield left
    yield GaugeMetricFamily(
        "snipe_search_budget_used",
        "Search requests in the current rate-limit window.",
        value=state.search_used,
    )
    if state.search_limit is not None:
        yield GaugeMetricFamily(
            "snipe_search_budget_limit",
            "Search requests allowed per window.",
            value=state.search_limit,
        )
    queue = GaugeMetricFamily(
        "snipe_reconcile_queue",
        "Purchases waiting for reconciliation: unresolved (answer lost or never sent), "
        "open trades (bought or reserved, followed until completed or refunded), overdue "
        "(open trades past send_until the service still calls open; never refunded by "
        "the clock) and released (not bought on the service's word, watched for a day).",
        labels=["kind"],
    )
    queue.add_metric(["unresolved"], state.unresolved)
    queue.add_metric(["open_trades"], state.open_trades)
    queue.add_metric(["overdue"], state.overdue)
    queue.add_metric(["released"], state.released)
    yield queue
    mode = GaugeMetricFamily(
        "snipe_engine_mode", "1 for the engine's current mode.", labels=["mode"]
    )
    for name in ("starting", "running", "halted", "stopped"):
        mode.add_metric([name], 1 if state.mode.value == name else 0)
    yield mode
    yield GaugeMetricFamily(
        "snipe_engine_halted", "1 while buying is HALTED.", value=1 if state.halted else 0
    )
    if state.started_at is not None:
        yield GaugeMetricFamily(
            "snipe_uptime_seconds",
            "Seconds since the engine started.",
            value=max(0.0, state.now - state.started_at),
        )
    for name, value, text in (
        ("snipe_searches", state.searches, "Search requests answered."),
        ("snipe_snapshots", state.snapshots, "Price snapshots read."),
        ("snipe_listings_seen", state.listings_seen, "Listings seen in search answers."),
        ("snipe_candidates", state.candidates, "Listings a rule accepted."),
    ):
        yield CounterMetricFamily(name, text, value=value)
    yield _counted(
        "snipe_malformed_items",
        "Items of answers (listings, trades, history rows, orders) that could not be "
        "read and were set aside, by endpoint and field; the rest of each answer is used.",
        ["endpoint", "field"],
        {(s.endpoint, s.field): s.count for s in state.set_aside},
    )
    yield _counted(
        "snipe_unexpected_errors",
        "Errors outside snipe's own types, by loop (each a retried step or a HALT).",
        ["loop"],
        {(loop,): n for loop, n in state.unexpected.items()},
    )
    yield GaugeMetricFamily(
        "snipe_start_waiting",
        "1 while the start-up gate waits out a transient failure.",
        value=1 if state.waiting is not None else 0,
    )
    yield _counted(
        "snipe_snapshot_bytes",
        "Bytes of prices snapshot downloaded (gzip, as sent), by game (all: unfiltered).",
        ["game"],
        {(game,): n for game, n in state.snapshot_bytes.items()},
    )
    if state.feed is not None:
        yield from _feed_families(state.feed)


def _feed_families(feed: FeedView) -> Iterable[Metric]:
    """The live listing feed (absent when it is off)."""
    yield GaugeMetricFamily(
        "snipe_feed_connected", "1 while the listing feed is connected.", value=int(feed.connected)
    )
    yield GaugeMetricFamily(
        "snipe_feed_trusted",
        "1 while the feed is trusted (connected, gap healed, audits clean): the snapshot "
        "then only audits it.",
        value=int(feed.state == "trusted"),
    )
    for name, value, text in (
        ("snipe_feed_events", feed.events, "Listing feed events handled (new, update, removed)."),
        ("snipe_feed_reconnects", feed.reconnects, "Listing feed connections after the first."),
        ("snipe_feed_gaps_healed", feed.gaps_healed, "Feed gaps healed by a snapshot diff."),
        (
            "snipe_feed_errors",
            feed.errors,
            "Unexpected errors of the feed's client, each retried after backoff.",
        ),
        (
            "snipe_feed_missed",
            feed.missed,
            "Listings of watched names the feed never told, found by either audit tier "
            "(snipe_feed_missed_by_audit_total splits them).",
        ),
        ("snipe_feed_bytes", feed.bytes_received, "Listing feed payload bytes received."),
        (
            "snipe_feed_audit_suspects",
            feed.suspects,
            "Watched names the cheap audit (GET /v1/prices) flagged for a search.",
        ),
        (
            "snipe_feed_audit_bytes",
            feed.audit_bytes,
            "Bytes of GET /v1/prices the cheap audit read.",
        ),
    ):
        yield CounterMetricFamily(name, text, value=value)
    yield _counted(
        "snipe_feed_audits",
        "Audits of the trusted feed, by tier: full (a snapshot poll) or cheap (GET /v1/prices).",
        ["tier"],
        {("full",): feed.audits_full, ("cheap",): feed.audits_cheap},
    )
    yield _counted(
        "snipe_feed_missed_by_audit",
        "Of snipe_feed_missed_total, by the audit tier that found them: full (the snapshot "
        "diff) or cheap (the search of a name GET /v1/prices made suspect).",
        ["tier"],
        {("full",): feed.missed_full, ("cheap",): feed.missed_cheap},
    )
    if feed.seconds_since_event is not None:
        yield GaugeMetricFamily(
            "snipe_feed_seconds_since_event",
            "Seconds since the last listing feed event.",
            value=feed.seconds_since_event,
        )


def _notifications(notifications: Mapping[str, ChannelStats]) -> Metric:
    notes = CounterMetricFamily(
        "snipe_notifications",
        "Notifications by channel and result (sent, failed, dropped).",
        labels=["channel", "result"],
    )
    for channel, stats in sorted(notifications.items()):
        notes.add_metric([channel, "sent"], stats.sent)
        notes.add_metric([channel, "failed"], stats.failed)
        notes.add_metric([channel, "dropped"], stats.dropped)
    return notes


_Labels = TypeVar("_Labels", bound=tuple[str, ...])


def _counted(
    name: str, text: str, labels: list[str], counts: Mapping[_Labels, int]
) -> CounterMetricFamily:
    """A counter with one sample per label values, in a stable order."""
    family = CounterMetricFamily(name, text, labels=labels)
    for values, count in sorted(counts.items()):
        family.add_metric(list(values), count)
    return family
