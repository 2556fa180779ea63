"""A dry run says so and speaks of what it *would* do; money in dollars in log lines; no
status-file noise at start; repeated errors counted, not printed each time (issue 11)."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import pytest
from sniper.harness import TRADE_LINK, pick_item, plant, quiet_sandbox, rig, rules_text

from engine import IntentRefused, VirtualClock
from engine.cli import build_parser
from engine.cli._run import banner
from engine.ledger import MEMORY, Cap, Intent, Ledger
from engine.ops import OpsSettings, operations
from engine.rules import load_rules_text
from engine.sniper import EngineSettings, EngineStatus, Outcome
from engine.sniper._statusfile import read_status_file, write_status_file


async def test_a_dry_run_summary_says_would_and_log_lines_show_dollars(
    clock: VirtualClock, caplog: pytest.LogCaptureFixture
) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    deal = plant(sandbox, item, price=item.reference // 2)
    caplog.set_level(logging.INFO, logger="snipe")
    settings = EngineSettings(dry_run=True)
    async with rig(clock, sandbox, rules_text(item.name), settings=settings) as r:
        async with clock.autojump():
            status = await r.engine.run(duration=120)
        line = await r.engine.status_line()
    assert status.outcomes[Outcome.DRY_RUN] == 1
    assert sandbox.ground_truth()["purchases"] == []
    assert line.startswith("[dry run, stopped] would spend ")
    assert "would buy 1" in line
    assert "spent" not in line
    assert "bought" not in line
    assert "never" not in line  # coverage, not "oldest never"
    dollars = f"${deal.price // 1000:,}."
    messages = [rec.getMessage() for rec in caplog.records if rec.name == "snipe.buyer"]
    assert any(m.startswith("would buy ") and f"at {dollars}" in m for m in messages), messages
    assert not any(f"at {deal.price}" in m for m in messages)


async def test_a_live_status_line_before_any_search_does_not_say_never(
    clock: VirtualClock,
) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    async with rig(clock, sandbox, rules_text(item.name)) as r:
        r.engine.schedule.watch({item.name, "Another Name"})
        line = await r.engine.status_line()
    assert line.startswith("[starting] committed $0.00 (no buy-order exposure) of ")
    assert "none searched yet" in line
    assert "never" not in line


def test_the_start_banner_of_a_dry_run_names_address_ledger_and_caps() -> None:
    ruleset = load_rules_text(rules_text("AK-47 | Redline (Field-Tested)"), "rules.yaml")
    args = build_parser().parse_args(
        ["run", "rules.yaml", "--dry-run", "--for", "10m", "--base-url", "http://127.0.0.1:8787"]
    )
    text = banner(ruleset, args)
    assert "DRY RUN" in text
    assert "http://127.0.0.1:8787" in text
    assert "ledger in memory" in text
    assert "$500.00 a day, $1,000.00 in total" in text
    live = banner(ruleset, build_parser().parse_args(["run", "rules.yaml"]))
    assert "DRY RUN" not in live
    assert "BUYS" in live
    assert "snipe-ledger.sqlite" in live
    assert TRADE_LINK not in text + live


async def test_no_status_file_warning_at_start(
    clock: VirtualClock, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    status_file = tmp_path / "ledger.sqlite.status.json"
    caplog.set_level(logging.WARNING)
    async with rig(clock, sandbox, rules_text(item.name)) as r:
        for _ in range(3):  # the first writes (start and periodic) once raced each other
            async with clock.autojump(), operations(r.engine, OpsSettings(status_file=status_file)):
                await r.engine.run(duration=30)
    assert not [rec for rec in caplog.records if "status file" in rec.getMessage()]
    document = read_status_file(status_file)
    assert document is not None
    assert not [e for e in document["errors"] if "status file" in e]


def test_status_files_written_at_once_never_fail(tmp_path: Path) -> None:
    target = tmp_path / "l.sqlite.status.json"
    failures: list[BaseException] = []

    def write(n: int) -> None:
        for i in range(200):
            try:
                write_status_file(target, {"writer": n, "i": i})
            except BaseException as exc:
                failures.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    assert read_status_file(target) is not None
    assert [p.name for p in tmp_path.iterdir()] == [target.name]  # no temporary left


def test_a_repeated_error_is_counted_not_printed_each_time(
    caplog: pytest.LogCaptureFixture,
) -> None:
    status = EngineStatus()
    caplog.set_level(logging.WARNING, logger="snipe")
    for _ in range(600):
        status.error("buy order: buy orders are not replayed in backtests")
    status.error("search: HTTP 502")
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 4  # the first, at 10 and 100 times, and the other error
    assert lines[1].endswith("(seen 10 times)")
    assert status.repeated_errors() == {
        "buy order: buy orders are not replayed in backtests": 600,
        "search: HTTP 502": 1,
    }


@pytest.mark.parametrize(
    ("cap", "says"),
    [
        (
            Cap(limit=5_000),
            "$3.496 committed (in flight and buy-order exposure included) + $3.496 would"
            " exceed the limit of $5.00",
        ),
        (
            Cap(limit=1, kind="count"),
            "1 purchase committed (in flight and buy-order exposure included) + 1 purchase",
        ),
    ],
)
async def test_a_cap_refusal_is_told_in_dollars(clock: VirtualClock, cap: Cap, says: str) -> None:
    async with await Ledger.open(MEMORY, clock=clock) as ledger:

        def one(n: int) -> Intent:
            return Intent(
                project_id=f"snp-{n}", item_id=f"i{n}", name="x", price=3_496, rule="r", game="csgo"
            )

        await ledger.record_intents([one(1)], caps=[cap])
        with pytest.raises(IntentRefused) as refused:
            await ledger.record_intents([one(2)], caps=[cap])
    assert says in str(refused.value)
    assert "USD x 1000" not in str(refused.value)


def test_a_dry_run_s_daily_summary_says_would() -> None:
    from engine.notify import DailySummary
    from engine.notify._events import summary_notice

    day = DailySummary(
        day="2026-01-01",
        purchases=2,
        spent=6_698,
        refunds=0,
        refunded=0,
        failed=0,
        unresolved=0,
        spent_total=6_698,
        cap_per_day=150_000,
        cap_total=1_000_000,
        dry_run=True,
    )
    notice = summary_notice(day, 0.0)
    text = " ".join(notice.lines)
    assert "dry run" in notice.title
    assert "would buy 2, would spend $6.698" in text
    assert "spent" not in text
    assert "purchases 2" not in text
