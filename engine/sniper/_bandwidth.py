"""What the prices snapshot costs in bandwidth, and which games to fetch. Pure.

The whole-market snapshot is large (about 65 MB of gzip on the live market, 1.3 million
rows); fetched every 10 s that is about 560 GB a day. Two settings bound it:

- **games**: the snapshot request takes ``game=``; when every buying rule is
  restricted to games (``match.game``, or any criterion's declared ``games``), only those
  games are fetched. Otherwise the engine learns which games
  hold names its rules watch from one snapshot per game and fetches only those, looking at
  the others again every :data:`REDISCOVER_EVERY` seconds (a name pattern may match an item
  of another game later).
- **period** (``account.snapshot_every``, default 10 s, the service's own refresh): the
  detection latency a poll period costs is on average half the period (plus up to the
  service's 10 s refresh), at worst the whole period plus 10 s.
- **the live feed** (``account.feed``, ``auto`` by default): while it is healthy the
  feed's frames come instead of the snapshots: ~430 events a second over every game
  (wire-notes.md), of which the client is sent only the games it subscribes to (the
  rules' games: :data:`GAME_FEED_SHARE`), deflated when the service accepts the
  client's permessage-deflate offer (``account.feed_compression: auto``, the default:
  :data:`FEED_FRAME_DEFLATED_BYTES`; the plain figure is given beside it); its heals
  (:data:`RECONNECTS_PER_DAY`); and its audits, in two tiers: every
  ``account.audit_every`` (300 s) one ``GET /v1/prices`` per game (the cheap audit: a
  row per name, :data:`PRICE_ROW_BYTES` each), and the snapshot only every
  ``account.full_audit_every`` (3600 s; equal to ``audit_every``, every audit is a
  snapshot). The estimate then gives both: with the feed, and without it (``feed:
  off``, or the feed down: the snapshot every period).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..client import GAMES
from ..rules import RuleSet

__all__ = [
    "FEED_EVENTS_PER_SECOND",
    "FEED_FRAME_BYTES",
    "FEED_FRAME_DEFLATED_BYTES",
    "GAME_FEED_SHARE",
    "GAME_PRICE_ROWS",
    "GAME_SNAPSHOT_BYTES",
    "PRICE_ROW_BYTES",
    "RECONNECTS_PER_DAY",
    "REDISCOVER_EVERY",
    "BandwidthEstimate",
    "daily_estimate",
    "format_bytes",
    "rule_games",
]

REDISCOVER_EVERY = 3600.0
"""Seconds between looks at the games no rule's name was found in (when rules do not all
name their game)."""

GAME_SNAPSHOT_BYTES: dict[str, int] = {
    "csgo": 45_000_000,
    "dota2": 12_000_000,
    "rust": 5_000_000,
    "tf2": 3_000_000,
}
"""Typical gzip size of one game's CSV snapshot. ASSUMPTION: the live whole-market
snapshot is about 65 MB of gzip (wire-notes.md); its split by game is an estimate from the
games' share of listings (CS2 the bulk of them), not a measurement."""

FEED_EVENTS_PER_SECOND = 430.0
"""The live feed's mean rate over every game (wire-notes.md; bursts near 2,800/s)."""

FEED_FRAME_BYTES = 300
"""Bytes of one plain feed frame on the wire (``account.feed_compression: off``, or a
service that refuses the offer). ASSUMPTION: the recorded frame in wire-notes.md is about
300 bytes; the sandbox's writer averages ~263 with the websocket header
(bench/bench_detection.py measures it)."""

FEED_FRAME_DEFLATED_BYTES = 47
"""Bytes of one feed frame on the wire with permessage-deflate (``auto``, when the
service accepts the offer). ASSUMPTION: bench/bench_detection.py measures 46.5 B a frame
on a socket over the sandbox's frames (one deflate context a connection); the live
frames, a little larger, are assumed to deflate alike."""

GAME_FEED_SHARE: dict[str, float] = {
    "csgo": 0.967,
    "dota2": 0.020,
    "rust": 0.008,
    "tf2": 0.005,
}
"""Each game's share of the feed's events (the client is sent its subscribed games'
only). ASSUMPTION, as bench/bench_detection.py's: csgo's share is the sandbox market's
(96.7% of its changes, ~416 of the ~430 events/s); the rest split by snapshot size. Not
measured on the live market (by snapshot size csgo would be 69%)."""

RECONNECTS_PER_DAY = 4
"""Feed reconnections a day. ASSUMPTION, as bench/bench_detection.py's; each costs two
snapshots of the watched games: the heal, and the first poll after it (always a full
one, see ``FeedWatch._cheap_slot``)."""

GAME_PRICE_ROWS: dict[str, int] = {
    "csgo": 30_000,
    "dota2": 15_000,
    "rust": 5_000,
    "tf2": 8_000,
}
"""Rows of ``GET /v1/prices?game=...`` (names with listings, a Doppler phase a row of its
own). ASSUMPTION: not measured on the live market; tens of thousands of names for csgo."""

PRICE_ROW_BYTES = 200
"""Bytes of one ``GET /v1/prices`` row as sent, without gzip (the sandbox's rows measure
~196 B, ``img`` address included: bench/bench_detection.py). A service that gzips the
answer sends several times less."""

_DAY = 86_400.0


def rule_games(ruleset: RuleSet) -> tuple[str, ...] | None:
    """The games the buying rules watch, when every one of them is restricted to games
    (:attr:`CompiledRule.games`); ``None`` when some rule may match items of any game."""
    games = [rule.games for rule in ruleset.rules]
    if not games or not all(games):
        return None
    return tuple(sorted(frozenset[str]().union(*games)))


@dataclass(frozen=True)
class BandwidthEstimate:
    """The expected snapshot download per day."""

    games: tuple[str, ...]
    period: float
    bytes_per_day: int
    """Snapshots alone, every ``period`` (the feed off, or down)."""
    all_games: bool
    """True when the rules do not all name a game: the figure is for every game, an upper
    bound (the engine fetches only the games where the rules' names are found)."""
    feed_bytes_per_day: int | None = None
    """With the feed (``account.feed`` not ``off``): its frames, ``None`` without it;
    deflated with ``account.feed_compression: auto`` (if the service accepts it)."""
    feed_plain_bytes_per_day: int | None = None
    """The same frames plain (what ``auto`` costs if the service refuses deflate)."""
    deflate: bool = False
    """``feed_bytes_per_day`` assumes permessage-deflate (``feed_compression: auto``)."""
    events_per_second: float = 0.0
    """The feed's events of the watched games a second (assumed shares)."""
    heal_bytes_per_day: int = 0
    """With the feed: the snapshots of its heals (:data:`RECONNECTS_PER_DAY`)."""
    audit_every: float = 300.0
    audit_bytes_per_day: int = 0
    """With the feed: its audits (the full and the cheap tier together)."""
    full_audit_every: float = 3600.0
    full_audit_bytes_per_day: int = 0
    """Of ``audit_bytes_per_day``: the snapshots of the full audit."""
    cheap_audit_bytes_per_day: int = 0
    """Of ``audit_bytes_per_day``: the ``GET /v1/prices`` answers of the cheap audit."""

    @property
    def with_feed_per_day(self) -> int | None:
        if self.feed_bytes_per_day is None:
            return None
        return self.feed_bytes_per_day + self.audit_bytes_per_day + self.heal_bytes_per_day

    def describe(self) -> str:
        """One line for ``snipe check``, with the assumption stated."""
        games = "every game" if self.all_games else ", ".join(self.games)
        per_poll = sum(GAME_SNAPSHOT_BYTES[g] for g in self.games)
        text = (
            f"~{_size(self.bytes_per_day)}/day of snapshots ({games}, every "
            f"{self.period:g} s, ~{_size(per_poll)} gzip a poll; assumed sizes per game from "
            "the live market's ~65 MB whole snapshot: "
            + ", ".join(f"{g} {_size(GAME_SNAPSHOT_BYTES[g])}" for g in sorted(GAME_SNAPSHOT_BYTES))
            + ")"
        )
        text += (
            f"; polling every {self.period:g} s delays detection ~{self.period / 2:g} s on average"
        )
        if self.all_games:
            text += "; at most: name `match.game` in every rule to fetch only those games"
        with_feed = self.with_feed_per_day
        if with_feed is None or self.feed_bytes_per_day is None:
            return text
        if self.cheap_audit_bytes_per_day:
            rows = sum(GAME_PRICE_ROWS[g] for g in self.games)
            audits = (
                f"a full snapshot audit every {self.full_audit_every:g} s "
                f"~{_size(self.full_audit_bytes_per_day)}, a cheap audit (GET /v1/prices, "
                f"~{rows:,} names x ~{PRICE_ROW_BYTES} B without gzip, assumed) every "
                f"{self.audit_every:g} s ~{_size(self.cheap_audit_bytes_per_day)}"
            )
        else:
            audits = (
                f"an audit snapshot every {self.audit_every:g} s ~{_size(self.audit_bytes_per_day)}"
            )
        return f"{self._feed_words(with_feed, audits)}; without it (feed off or down): " + text

    def _feed_words(self, with_feed: int, audits: str) -> str:
        """The figure with the feed, each of its assumptions named."""
        frames = self.feed_bytes_per_day or 0
        plain = self.feed_plain_bytes_per_day or frames
        rate = (
            f"~{self.events_per_second:.0f} events/s of the watched games "
            f"(~{FEED_EVENTS_PER_SECOND:g}/s over every game, each game's share assumed)"
        )
        if self.deflate:
            head = (
                f"~{_size(with_feed)}/day with the live feed if the service accepts "
                f"permessage-deflate (~{_size(with_feed - frames + plain)} plain)"
            )
            each = (
                f"~{FEED_FRAME_DEFLATED_BYTES} B each deflated (measured on the sandbox's "
                f"frames), ~{FEED_FRAME_BYTES} B plain (~{_size(plain)}), assumed"
            )
        else:
            head = f"~{_size(with_feed)}/day with the live feed"
            each = f"~{FEED_FRAME_BYTES} B each plain (feed_compression: off), assumed"
        heals = (
            f"heals ~{_size(self.heal_bytes_per_day)} ({RECONNECTS_PER_DAY} reconnections a "
            "day assumed, 2 snapshots each)"
        )
        return f"{head} (its frames ~{_size(frames)}: {rate}, {each}; {audits}; {heals})"


def daily_estimate(ruleset: RuleSet, period: float | None = None) -> BandwidthEstimate:
    """The snapshot bandwidth a day of ``snipe run`` with ``ruleset`` is expected to take
    (``period``: seconds between polls, default the rules file's ``account.snapshot_every``).
    """
    every = float(period if period is not None else ruleset.account.snapshot_every)
    games = rule_games(ruleset)
    fetched: Iterable[str] = games if games is not None else sorted(GAMES)
    fetched = tuple(fetched)
    polls = _DAY / every
    per_poll = sum(GAME_SNAPSHOT_BYTES[g] for g in fetched)
    account = ruleset.account
    audit_every = max(every, float(account.audit_every))
    full_every = max(audit_every, float(account.full_audit_every))
    feed = plain = None
    full = cheap = heals = 0
    deflate = account.feed_compression == "auto"
    rate = FEED_EVENTS_PER_SECOND * sum(GAME_FEED_SHARE[g] for g in fetched)
    if account.feed != "off":
        plain = round(rate * FEED_FRAME_BYTES * _DAY)
        feed = round(rate * FEED_FRAME_DEFLATED_BYTES * _DAY) if deflate else plain
        heals = RECONNECTS_PER_DAY * 2 * per_poll
        full = round(_DAY / full_every * per_poll)
        if full_every > audit_every:
            # one answer an audit slot: a cheap audit, or the base after a full one
            rows = sum(GAME_PRICE_ROWS[g] for g in fetched)
            cheap = round(_DAY / audit_every * rows * PRICE_ROW_BYTES)
    return BandwidthEstimate(
        games=fetched,
        period=every,
        bytes_per_day=round(polls * per_poll),
        all_games=games is None,
        feed_bytes_per_day=feed,
        feed_plain_bytes_per_day=plain,
        deflate=deflate,
        events_per_second=rate,
        heal_bytes_per_day=heals,
        audit_every=audit_every,
        audit_bytes_per_day=full + cheap,
        full_audit_every=full_every,
        full_audit_bytes_per_day=full,
        cheap_audit_bytes_per_day=cheap,
    )


def _size(count: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count:.0f} B"


def format_bytes(count: float) -> str:
    """``12.3 MB``: decimal units, as bandwidth is billed."""
    return _size(count)
