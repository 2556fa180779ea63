"""How the engine uses the live listing feed (:class:`FeedSettings`, from the rules
file's ``account``) and what it shows of it (:class:`FeedView`): the data of
:mod:`._feedwatch`, apart so that module stays about behaviour."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["FeedSettings", "FeedView"]


@dataclass(frozen=True)
class FeedSettings:
    """How the engine uses the feed (the rules file's ``account.feed``, ``audit_every``)."""

    mode: str = "auto"
    audit_every: float = 300.0
    """Seconds between audits while the feed is trusted: the cheap tier (``GET
    /v1/prices`` against the engine's own view, see :mod:`._auditbook`) unless a full
    snapshot audit is due."""
    full_audit_every: float = 3600.0
    """Seconds between full snapshot audits while the feed is trusted (the first audit
    slot after this long since the last full snapshot poll). Not above ``audit_every``:
    every audit is a full snapshot (the cheap tier is off)."""
    audit_skew: float = 30.0
    """Seconds either side of a ``/v1/prices`` request whose feed events may or may not be
    in its answer (the tolerance of the cheap tier)."""
    count_slack: int = 0
    """Listings a name's ``count`` may differ by before it is a suspect, on top of one per
    listing told within ``audit_skew`` of either answer."""
    audit_grace: float = 5.0
    """Seconds between a ``/v1/prices`` answer and its judgement: the events of changes
    it shows may still be on their way (the feed's own delay, the engine's queue)."""
    missed_limit: int = 3
    """Missed listings one audit may find (a full one in its diff; a cheap one in the
    searches of its suspects) before the feed is distrusted."""
    remember_for: float = 900.0
    """Seconds an item id the feed told is remembered for the audit (the tolerance
    window: longer than ``audit_every``, so a listing told just before one audit is
    still known at the next)."""
    buffer: int = 8192
    """Events queued between the client and the engine."""
    sticker_prices_for: float = 300.0
    """Seconds what a search showed of a listing (its stickers) and of stickers' prices
    is trusted to decide a feed event without a confirming search (see
    :mod:`._known`); 0: every candidate waits for its own search."""
    known_limit: int = 50_000
    """Listings a search showed kept at most, the oldest forgotten first (a listing with
    its stickers is a kilobyte or two: tens of megabytes at most; five minutes of a
    busy priority lane, ~100 searches of ~5 names, show about half as many)."""


@dataclass(frozen=True)
class FeedView:
    """The feed's state for observers (part of :class:`EngineView`). ``state`` is one of
    ``connecting``, ``healing`` (connected, gap not healed yet), ``trusted``,
    ``distrusted`` (connected, but an audit found it missing listings), ``down``,
    ``unavailable`` (``auto`` gave up: no handshake). After an unexpected error of the
    client it is ``down`` (or ``connecting`` before any handshake) until the client, run
    again after backoff, connects (``errors`` counts them)."""

    state: str
    connected: bool
    events: int
    events_per_second: float
    reconnects: int
    gaps_healed: int
    seconds_since_event: float | None
    missed: int
    bytes_received: int
    bytes_per_day: float | None
    bought: int
    """Purchases a feed event started at once (no confirming search) that the service
    said were bought or reserved: not the decisions that accepted them (a purchase
    refused, capped or of unknown outcome is not counted)."""
    confirm_searches: int
    set_aside: int
    compressed: bool | None = None
    """The connection runs with permessage-deflate (``None``: no connection yet)."""
    confirm_waiting: int = 0
    """Feed listings waiting for their confirming search now."""
    confirm_told: int = 0
    """Feed listings a rule needing a search could accept (each waited for one)."""
    confirm_found: int = 0
    """...that their confirming search showed (then decided as any search's listing)."""
    confirm_skipped: tuple[tuple[str, int], ...] = ()
    """...that it did not, by kind (``gone``, ``removed``, ``beyond_cheapest``)."""
    confirm_reused: int = 0
    """Feed events of a listing a recent search showed, decided on what it showed (no
    confirming search; see :mod:`._known`)."""
    missed_full: int = 0
    """Of ``missed``: found by the full (snapshot) audit."""
    missed_cheap: int = 0
    """Of ``missed``: proven by the searches of the cheap audit's suspects."""
    audits_full: int = 0
    audits_cheap: int = 0
    suspects: int = 0
    """Names the cheap audit flagged for a search."""
    audit_bytes: int = 0
    """Bytes of ``GET /v1/prices`` the cheap audit downloaded (as sent)."""
    errors: int = 0
    """Unexpected errors of the feed's client, each logged, and retried after backoff
    (the snapshot standing in meanwhile)."""
    last_error: str | None = None
    """The latest of them, named by its type (never its text, which might hold a key)."""
