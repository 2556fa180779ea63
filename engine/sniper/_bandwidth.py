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
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..client import GAMES
from ..rules import RuleSet

__all__ = [
    "GAME_SNAPSHOT_BYTES",
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
    all_games: bool
    """True when the rules do not all name a game: the figure is for every game, an upper
    bound (the engine fetches only the games where the rules' names are found)."""

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
        return text


def daily_estimate(ruleset: RuleSet, period: float | None = None) -> BandwidthEstimate:
    """The snapshot bandwidth a day of ``snipe run`` with ``ruleset`` is expected to take
    (``period``: seconds between polls, default the rules file's ``account.snapshot_every``).
    """
    every = float(period if period is not None else ruleset.account.snapshot_every)
    games = rule_games(ruleset)
    fetched: Iterable[str] = games if games is not None else sorted(GAMES)
    polls = _DAY / every
    per_poll = sum(GAME_SNAPSHOT_BYTES[g] for g in fetched)
    return BandwidthEstimate(
        games=tuple(fetched),
        period=every,
        bytes_per_day=round(polls * per_poll),
        all_games=games is None,
    )


def _size(count: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count:.0f} B"


def format_bytes(count: float) -> str:
    """``12.3 MB``: decimal units, as bandwidth is billed."""
    return _size(count)
