"""The rate limiter's journal: a restarted process starts from the window the previous one
left, on a VirtualClock (no test really sleeps)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from engine import Limit, RateLimiter, VirtualClock, _limitjournal
from engine._limitjournal import JournalLine, LimitJournal, parse, restore

PERIOD = 60.0
TIMEOUT = 10.0


def sent(call: str, at: float, bucket: str = "search") -> JournalLine:
    return JournalLine("sent", bucket, call, at)


def done(call: str, at: float, bucket: str = "search") -> JournalLine:
    return JournalLine("done", bucket, call, at)


# -- pure logic ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("lines", "now", "expected"),
    [
        pytest.param([], 100.0, [], id="empty"),
        pytest.param([sent("a", 50.0), done("a", 51.0)], 100.0, [51.0], id="done-in-window"),
        pytest.param([sent("a", 10.0), done("a", 40.0)], 100.0, [], id="done-left-window"),
        pytest.param([sent("a", 10.0), done("a", 40.0)], 99.0, [40.0], id="done-just-inside"),
        pytest.param([sent("a", 80.0)], 100.0, [90.0], id="in-flight-until-timeout"),
        pytest.param([sent("a", 95.0)], 100.0, [100.0], id="in-flight-capped-at-now"),
        pytest.param([sent("a", 20.0)], 100.0, [], id="in-flight-long-gone"),
        pytest.param([done("z", 70.0)], 100.0, [70.0], id="compacted-done-alone"),
        pytest.param([done("a", 500.0)], 100.0, [100.0], id="future-capped-at-now"),
        pytest.param(
            [sent("a", 60.0), sent("b", 61.0), done("b", 62.0), done("a", 64.0)],
            100.0,
            [62.0, 64.0],
            id="sorted",
        ),
        pytest.param([done("a", 70.0, bucket="other")], 100.0, [], id="unknown-bucket"),
    ],
)
def test_restore_says_when_each_call_still_in_the_window_started(
    lines: list[JournalLine], now: float, expected: list[float]
) -> None:
    starts = restore(lines, now=now, periods={"search": PERIOD}, timeout=TIMEOUT)
    assert starts == {"search": expected}


@pytest.mark.parametrize(
    ("text", "good"),
    [
        ("sent search a.1 12.5\n", [sent("a.1", 12.5)]),
        ("done search a.1 13\n", [done("a.1", 13.0)]),
        ("\n", []),
        ("sent search a.1\n", []),
        ("gone search a.1 12.5\n", []),
        ("sent search a.1 twelve\n", []),
        ("sent search a.1 nan\n", []),
        ("sent search a.1 inf\n", []),
        ("sent search a.1 12.5 extra\n", []),
        ("\x00\x01garbage\n", []),
    ],
)
def test_parse_keeps_good_lines_and_skips_bad_ones(text: str, good: list[JournalLine]) -> None:
    assert parse([text]) == good


def test_a_line_round_trips() -> None:
    line = sent("ab12.3", 1763903112.123456)
    assert parse([line.text()]) == [line]


# -- a limiter restored from a journal -----------------------------------------------------


def journal_at(tmp_path: Path) -> LimitJournal:
    return LimitJournal.for_ledger(tmp_path / "ledger.sqlite")


def write(path: Path, lines: list[JournalLine]) -> None:
    path.write_text("".join(line.text() for line in lines), encoding="utf-8")


async def first_life(clock: VirtualClock, tmp_path: Path, calls: int) -> None:
    """A process that sends ``calls`` searches (each answered after 0.5 s) and exits."""
    limiter = RateLimiter(clock, {"search": Limit(20, PERIOD)})
    limiter.attach_journal(journal_at(tmp_path), timeout=TIMEOUT)
    async with clock.autojump():
        for _ in range(calls):
            async with limiter.hold("search"):
                await clock.sleep(0.5)
    limiter.close_journal()


async def send_times(clock: VirtualClock, limiter: RateLimiter, calls: int) -> list[float]:
    times: list[float] = []
    async with clock.autojump():
        for _ in range(calls):
            async with limiter.hold("search"):
                times.append(clock.now())
    return times


@pytest.fixture
def opened() -> Iterator[list[RateLimiter]]:
    """Limiters whose journal files are closed after the test."""
    limiters: list[RateLimiter] = []
    yield limiters
    for limiter in limiters:
        limiter.close_journal()


def restarted(clock: VirtualClock, tmp_path: Path, opened: list[RateLimiter]) -> RateLimiter:
    limiter = RateLimiter(clock, {"search": Limit(20, PERIOD)})
    limiter.attach_journal(journal_at(tmp_path), timeout=TIMEOUT)
    opened.append(limiter)
    return limiter


async def test_a_restarted_limiter_waits_for_the_window_the_previous_life_used(
    clock: VirtualClock, tmp_path: Path, opened: list[RateLimiter]
) -> None:
    start = clock.now()
    await first_life(clock, tmp_path, calls=20)  # answers at start+0.5, +1.0, ... +10.0
    limiter = restarted(clock, tmp_path, opened)
    assert limiter.usage("search") == (20, 20)
    times = await send_times(clock, limiter, 3)
    # the first of the previous life's calls leaves the window 60 s after its answer
    assert times[0] == pytest.approx(start + 0.5 + PERIOD)
    assert times[1] == pytest.approx(start + 1.0 + PERIOD)


async def test_without_the_journal_a_restart_would_send_at_once(
    clock: VirtualClock, tmp_path: Path, opened: list[RateLimiter]
) -> None:
    """What the test above guards against: a fresh limiter has forgotten the window."""
    await first_life(clock, tmp_path, calls=20)
    fresh = RateLimiter(clock, {"search": Limit(20, PERIOD)})
    now = clock.now()
    assert await send_times(clock, fresh, 3) == [now, now, now]


async def test_a_call_killed_in_flight_counts_until_the_request_timeout(
    clock: VirtualClock, tmp_path: Path, opened: list[RateLimiter]
) -> None:
    start = clock.now()
    journal = journal_at(tmp_path)
    write(
        journal.path,
        [*(done(f"d{n}", start - 5.0) for n in range(19)), sent("killed", start - 2.0)],
    )
    limiter = restarted(clock, tmp_path, opened)
    times = await send_times(clock, limiter, 1)
    # the 19 finished calls leave at start+55, the killed one only at start-2+10+60
    assert times == [pytest.approx(start - 2.0 + TIMEOUT + PERIOD)]


async def test_a_garbage_line_is_skipped_with_a_warning_and_the_good_ones_count(
    clock: VirtualClock,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    opened: list[RateLimiter],
) -> None:
    start = clock.now()
    journal = journal_at(tmp_path)
    good = "".join(done(f"d{n}", start - 1.0).text() for n in range(20))
    journal.path.write_bytes(b"sent search x \xff\xfe garbage\n" + good.encode() + b"done sea")
    with caplog.at_level(logging.WARNING, logger="snipe.limiter"):
        limiter = restarted(clock, tmp_path, opened)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [
        f"{journal.path}:1: unreadable rate-limit journal line skipped",
        f"{journal.path}:22: unreadable rate-limit journal line skipped",
    ]
    assert limiter.usage("search") == (20, 20)
    assert await send_times(clock, limiter, 1) == [pytest.approx(start - 1.0 + PERIOD)]


async def test_the_journal_is_rewritten_compactly_at_start(
    clock: VirtualClock, tmp_path: Path, opened: list[RateLimiter]
) -> None:
    start = clock.now()
    journal = journal_at(tmp_path)
    old = [line for n in range(500) for line in (sent(f"o{n}", start - 900), done(f"o{n}", 0))]
    write(journal.path, [*old, sent("k", start - 3.0), done("r", start - 1.0)])
    restarted(clock, tmp_path, opened).close_journal()
    lines = journal.read()
    assert sorted((line.kind, line.at) for line in lines) == [
        ("done", start - 1.0),
        ("done", start),  # killed in flight: sent+timeout is later than now
    ]
    assert not journal.path.with_name(journal.path.name + ".tmp").exists()


async def test_the_journal_is_compacted_when_it_grows(
    clock: VirtualClock,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    opened: list[RateLimiter],
) -> None:
    monkeypatch.setattr(_limitjournal, "COMPACT_AFTER", 10)
    limiter = restarted(clock, tmp_path, opened)
    async with clock.autojump():
        for _ in range(200):
            async with limiter.hold("search"):
                await clock.sleep(1.0)
    limiter.close_journal()
    lines = journal_at(tmp_path).read()
    assert len(lines) <= 10 + 20  # a window's worth of calls, plus what came since
    # and it still restores the last window exactly
    again = restarted(clock, tmp_path, opened)
    assert again.usage("search") == (20, 20)


async def test_a_journal_that_cannot_be_written_does_not_stop_the_calls(
    clock: VirtualClock, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    limiter = RateLimiter(clock, {"search": Limit(20, PERIOD)})
    missing = LimitJournal(tmp_path / "no-such-dir" / "ledger.limits")
    with caplog.at_level(logging.WARNING, logger="snipe.limiter"):
        limiter.attach_journal(missing, timeout=TIMEOUT)
        with anyio.fail_after(1):
            assert len(await send_times(clock, limiter, 3)) == 3
    limiter.close_journal()
    assert "no longer journalled" in caplog.text
