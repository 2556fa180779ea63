"""Bandwidth: the snapshot is fetched only for the games the rules watch, its period comes
from the rules file, every byte downloaded is counted, and `snipe check` estimates a day."""

from __future__ import annotations

import httpx
import pytest

from engine import ConfigError, VirtualClock
from engine.cli import main
from engine.metrics import EngineMetrics
from engine.rules import load_rules_text
from engine.sniper import EngineSettings
from engine.sniper._bandwidth import (
    GAME_SNAPSHOT_BYTES,
    REDISCOVER_EVERY,
    daily_estimate,
    format_bytes,
)

from .harness import pick_item, plant, quiet_sandbox, rig, rules_text


class Recording(httpx.AsyncBaseTransport):
    """The sandbox app, with every snapshot request's ``game`` and body size noted."""

    def __init__(self, app: httpx.AsyncBaseTransport) -> None:
        self.app = app
        self.snapshots: list[tuple[str | None, int]] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.app.handle_async_request(request)
        if request.url.path == "/v1/prices/snapshot":
            body = await response.aread()
            self.snapshots.append((request.url.params.get("game"), len(body)))
            stream = httpx.ByteStream(body)  # streamed again, so the client counts its bytes
            return httpx.Response(response.status_code, headers=response.headers, stream=stream)
        return response


def _rules(*matches: str, every: str = "") -> str:
    account_extra = f"\n  snapshot_every: {every}" if every else ""
    rules = "\n".join(
        f"""  - name: r{n}
    match: {match}
    discount: 20
    max_price: "200.00\""""
        for n, match in enumerate(matches)
    )
    return f"""
version: 1
account:
  base_url: "http://sandbox"
  trade_link: "https://steamcommunity.com/tradeoffer/new/?partner=123456789&token=AbCdEfGh"{account_extra}
budgets: {{per_day: "500.00", total: "1000.00"}}
rules:
{rules}
"""


async def test_only_the_games_the_rules_name_are_fetched_and_every_byte_is_counted(
    clock: VirtualClock,
) -> None:
    sandbox = quiet_sandbox(clock)
    recording = Recording(httpx.ASGITransport(app=sandbox.app))
    rules = _rules('{patterns: ["*"], game: rust}', '{names: ["AK-47 | Redline (Field-Tested)"], '
                   "game: dota2}")  # fmt: skip
    async with rig(clock, sandbox, rules, transport=recording) as r:
        await r.engine.poll_snapshot()
        clock.advance(10.0)
        await r.engine.poll_snapshot()
        line = await r.engine.status_line()
        metrics = EngineMetrics(r.engine)
        await metrics.refresh()
        exposed = metrics.render().decode()
    assert [game for game, _ in recording.snapshots] == ["dota2", "rust"] * 2
    counted = r.engine.status.snapshot_bytes
    assert set(counted) == {"dota2", "rust"}
    assert counted.total() == sum(size for _, size in recording.snapshots) > 0
    assert "| snapshots " in line
    for game in ("dota2", "rust"):
        assert f'snipe_snapshot_bytes_total{{game="{game}"}} {float(counted[game])}' in exposed


async def test_without_a_game_in_the_rules_the_games_are_learned_then_looked_at_hourly(
    clock: VirtualClock,
) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)  # a csgo item
    recording = Recording(httpx.ASGITransport(app=sandbox.app))
    async with rig(clock, sandbox, rules_text(item.name), transport=recording) as r:
        await r.engine.poll_snapshot()
        first = [game for game, _ in recording.snapshots]
        assert sorted(first) == ["csgo", "dota2", "rust", "tf2"]  # one request per game
        assert item.name in r.engine.schedule.watched
        for _ in range(3):
            clock.advance(10.0)
            await r.engine.poll_snapshot()
        assert [game for game, _ in recording.snapshots[4:]] == ["csgo"] * 3
        clock.advance(REDISCOVER_EVERY)
        await r.engine.poll_snapshot()
        assert len(recording.snapshots) == 7 + 4  # every game again, once an hour
        clock.advance(10.0)
        await r.engine.poll_snapshot()
        assert recording.snapshots[-1][0] == "csgo"  # and still the game it watches
        assert len(recording.snapshots) == 12


async def test_a_watched_name_not_listed_at_the_first_look_is_found_when_it_is(
    clock: VirtualClock,
) -> None:
    sandbox = quiet_sandbox(clock)
    item = next(  # a csgo item nobody lists yet
        i
        for i in sandbox.market.items
        if i.game == "csgo"
        and not i.phases
        and 5_000 < i.reference < 150_000
        and not sandbox.market.cheapest(i.name, include_hold=True)
    )
    recording = Recording(httpx.ASGITransport(app=sandbox.app))
    async with rig(clock, sandbox, rules_text(item.name), transport=recording) as r:
        await r.engine.poll_snapshot()
        clock.advance(10.0)
        await r.engine.poll_snapshot()  # still not listed: every game is looked at
        assert len(recording.snapshots) == 8
        plant(sandbox, item, price=item.reference)
        clock.advance(10.0)
        await r.engine.poll_snapshot()  # listed now: its game is learned
        clock.advance(10.0)
        await r.engine.poll_snapshot()
    assert [game for game, _ in recording.snapshots[12:]] == ["csgo"]


async def test_a_backtest_engine_fetches_the_whole_snapshot_in_one_request(
    clock: VirtualClock,
) -> None:
    sandbox = quiet_sandbox(clock)
    recording = Recording(httpx.ASGITransport(app=sandbox.app))
    settings = EngineSettings(snapshot_by_game=False)
    rules = _rules('{patterns: ["*"], game: rust}')
    async with rig(clock, sandbox, rules, settings=settings, transport=recording) as r:
        await r.engine.poll_snapshot()
    assert recording.snapshots[0][0] is None
    assert set(r.engine.status.snapshot_bytes) == {"all"}


def test_the_snapshot_period_is_read_from_the_rules_file() -> None:
    assert load_rules_text(_rules('{names: ["X"]}')).account.snapshot_every == 10
    assert load_rules_text(_rules('{names: ["X"]}', every='"2m"')).account.snapshot_every == 120
    with pytest.raises(ConfigError) as info:
        load_rules_text(_rules('{names: ["X"]}', every='"5s"'))
    assert "account.snapshot_every" in str(info.value)


DAY = 86_400


@pytest.mark.parametrize(
    ("matches", "every", "games", "per_day", "all_games"),
    [
        (['{names: ["X"], game: csgo}'], "", ("csgo",), DAY // 10 * 45_000_000, False),
        (['{names: ["X"], game: csgo}'], "60", ("csgo",), DAY // 60 * 45_000_000, False),
        (
            ['{names: ["X"], game: rust}', '{names: ["Y"], game: tf2}'],
            "",
            ("rust", "tf2"),
            DAY // 10 * 8_000_000,
            False,
        ),
        (
            ['{names: ["X"], game: rust}', '{names: ["Y"]}'],
            "",
            ("csgo", "dota2", "rust", "tf2"),
            DAY // 10 * 65_000_000,
            True,
        ),
    ],
)
def test_the_daily_bandwidth_estimate(
    matches: list[str], every: str, games: tuple[str, ...], per_day: int, all_games: bool
) -> None:
    estimate = daily_estimate(load_rules_text(_rules(*matches, every=every)))
    assert (estimate.games, estimate.bytes_per_day, estimate.all_games) == (
        games,
        per_day,
        all_games,
    )
    assert sum(GAME_SNAPSHOT_BYTES.values()) == 65_000_000  # the live market's whole snapshot


def test_snipe_check_prints_the_daily_estimate_and_its_assumption(
    tmp_path: object, capsys: pytest.CaptureFixture[str]
) -> None:
    from pathlib import Path

    rules = Path(str(tmp_path)) / "rules.yaml"
    rules.write_text(_rules('{names: ["X"], game: csgo}', every='"30s"'))
    assert main(["check", str(rules)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "~129.6 GB/day of snapshots (csgo, every 30 s" in out
    assert "assumed sizes per game" in out
    assert "delays detection ~15 s on average" in out


def test_snipe_status_shows_the_snapshot_bytes_of_the_run() -> None:
    from engine.cli._status import render

    report = {
        "state": "running",
        "spent_today": 0,
        "spent_total": 0,
        "in_flight": 0,
        "refunded": 0,
        "purchases_today": {},
        "purchases_total": 0,
        "errors": [],
        "snapshot_bytes": {"csgo": 45_000_000, "rust": 5_000_000},
    }
    text = render("ledger.sqlite", report, now=0.0)
    assert "snapshots   50.0 MB this run (csgo 45.0 MB, rust 5.0 MB)" in text


# csgo's frames, deflated (the default offers permessage-deflate; bench_detection.py's
# 46.5 B a frame), at its assumed share of the feed's ~430 events/s (~416/s, as the bench)
FRAMES = round(430 * 0.967 * 47 * DAY)
HEALS = 4 * 2 * 45_000_000  # 4 reconnections a day assumed, two csgo snapshots each
PRICES = 30_000 * 200  # one GET /v1/prices?game=csgo answer (assumed rows x bytes)


@pytest.mark.parametrize(
    ("feed", "audit", "with_feed"),
    [
        # a cheap audit every 5 min, a full snapshot every hour
        ("auto", "", FRAMES + HEALS + DAY // 3600 * 45_000_000 + DAY // 300 * PRICES),
        (
            "on",
            "\n  audit_every: 15m",
            FRAMES + HEALS + DAY // 3600 * 45_000_000 + DAY // 900 * PRICES,
        ),
        (
            "on",
            "\n  audit_every: 10m\n  full_audit_every: 6h",
            FRAMES + HEALS + 4 * 45_000_000 + DAY // 600 * PRICES,
        ),
        # the cheap tier off: every audit a full snapshot, as before it existed
        ("on", "\n  full_audit_every: 5m", FRAMES + HEALS + DAY // 300 * 45_000_000),
        ("off", "", None),
    ],
)
def test_the_daily_estimate_counts_the_feed_and_its_audit_when_the_feed_is_used(
    feed: str, audit: str, with_feed: int | None
) -> None:
    text = _rules('{names: ["X"], game: csgo}').replace(
        "\nbudgets:", f"\n  feed: {feed}{audit}\nbudgets:", 1
    )
    estimate = daily_estimate(load_rules_text(text))
    assert estimate.bytes_per_day == DAY // 10 * 45_000_000  # the snapshot way, as before
    assert estimate.with_feed_per_day == with_feed
    if with_feed is not None:
        assert with_feed < estimate.bytes_per_day / 10
        assert estimate.audit_bytes_per_day == (
            estimate.full_audit_bytes_per_day + estimate.cheap_audit_bytes_per_day
        )
        assert estimate.describe().startswith(
            f"~{format_bytes(with_feed)}/day with the live feed if the service accepts "
            "permessage-deflate"
        )
        assert "without it (feed off or down): ~388.8 GB/day" in estimate.describe()
        cheap = "a cheap audit (GET /v1/prices" in estimate.describe()
        assert cheap == ("full_audit_every: 5m" not in audit)
    else:
        assert "feed" not in estimate.describe()


def _feed_rules(match: str, extra: str = "") -> str:
    return _rules(match).replace("\nbudgets:", f"{extra}\nbudgets:", 1)


def test_the_feed_estimate_agrees_with_the_bench_for_csgo() -> None:
    """bench/bench_detection.py measures ~4.9 GB/day watching csgo with the feed (frames
    deflated, audits, heals): the estimate says as much, and what it assumes."""
    estimate = daily_estimate(load_rules_text(_feed_rules('{names: ["X"], game: csgo}')))
    assert estimate.with_feed_per_day is not None
    assert 4.7e9 < estimate.with_feed_per_day < 5.1e9
    assert 1.6e9 < (estimate.feed_bytes_per_day or 0) < 1.8e9  # the bench: 1.67 GB deflated
    words = " ".join(estimate.describe().split())
    plain = estimate.with_feed_per_day - FRAMES + round(430 * 0.967 * 300 * DAY)
    assert f"if the service accepts permessage-deflate (~{format_bytes(plain)} plain)" in words
    for assumption in (
        "~47 B each deflated",
        "~300 B plain",
        "each game's share assumed",
        "4 reconnections a day assumed",
        "~30,000 names x ~200 B without gzip, assumed",
    ):
        assert assumption in words


def test_the_feed_estimate_counts_the_watched_games_frames_only_and_plain_when_off() -> None:
    rust = daily_estimate(load_rules_text(_feed_rules('{names: ["X"], game: rust}')))
    csgo = daily_estimate(load_rules_text(_feed_rules('{names: ["X"], game: csgo}')))
    assert rust.feed_bytes_per_day == round(430 * 0.008 * 47 * DAY)  # ~3 events/s, not 430
    assert (rust.feed_bytes_per_day or 0) * 100 < (csgo.feed_bytes_per_day or 0)
    every = daily_estimate(load_rules_text(_feed_rules('{names: ["X"]}')))  # no game named
    assert every.feed_bytes_per_day == round(430 * 47 * DAY)  # every game: an upper bound
    off = daily_estimate(
        load_rules_text(_feed_rules('{names: ["X"], game: csgo}', "\n  feed_compression: off"))
    )
    assert off.feed_bytes_per_day == off.feed_plain_bytes_per_day == round(430 * 0.967 * 300 * DAY)
    assert "permessage-deflate" not in off.describe()
    assert "~300 B each plain (feed_compression: off), assumed" in off.describe()
