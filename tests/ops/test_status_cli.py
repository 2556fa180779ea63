"""`snipe status LEDGER`: one screen from the ledger and the running engine's status file."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from engine import VirtualClock
from engine.cli import main
from engine.cli._status import engine_state
from engine.ledger import Intent, Ledger, PurchaseState
from engine.sniper._statusfile import (
    read_status_file,
    status_document,
    status_path_for,
    write_status_file,
)

NOW = 1_767_300_000.0
MIDNIGHT = 1_767_312_000.0  # 2026-01-02T00:00:00Z


@pytest.mark.parametrize(
    ("document", "state"),
    [
        (None, "unknown"),
        ({"mode": "running", "updated_at": NOW - 2, "write_every": 5}, "running"),
        ({"mode": "halted", "updated_at": NOW - 2, "write_every": 5}, "halted"),
        ({"mode": "running", "updated_at": NOW - 3600, "write_every": 5}, "stale"),
        ({"mode": "running", "write_every": 5}, "stale"),
        ({"mode": "stopped", "updated_at": NOW - 3600}, "stopped"),
    ],
)
def test_engine_state_tells_a_dead_process_from_a_running_one(
    document: dict[str, Any] | None, state: str
) -> None:
    assert engine_state(document, NOW) == state


async def _ledger_with_purchases(path: Path, now: float) -> None:
    clock = VirtualClock(start=now - 60)
    async with await Ledger.open(path, clock=clock) as ledger:
        for n, price in enumerate((12_000, 8_000)):
            intent = Intent(
                project_id=f"snp-{n}", item_id=str(n), name="AWP", price=price, rule="deals"
            )
            await ledger.record_intent(intent)
        await ledger.transition("snp-0", PurchaseState.BOUGHT, charged_price=12_000)
        await ledger.transition("snp-1", PurchaseState.FAILED, reason="refused: sold")


def _status_file(ledger: Path, now: float, **changes: Any) -> None:
    document = {
        "format": 1,
        "pid": 4242,
        "mode": "running",
        "halt_reason": None,
        "started_at": now - 3 * 3600 - 120,
        "updated_at": now,
        "write_every": 5.0,
        "caps": {"total": 1_000_000, "per_day": 100_000},
        "search_budget": {"used": 7, "limit": 20},
        "rate_limited": 1,
        "notifications": {"webhook": {"sent": 3, "failed": 0, "dropped": 1}},
        "metrics_port": 9464,
        "errors": ["search: the service is unavailable (503)"],
    }
    document.update(changes)
    write_status_file(status_path_for(ledger), document)


async def test_status_shows_state_uptime_spend_and_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ledger = tmp_path / "snipe.sqlite"
    now = MIDNIGHT + 120  # the purchases were made a minute after midnight: today
    await _ledger_with_purchases(ledger, now)
    _status_file(ledger, now)
    assert await _status(["status", str(ledger)], now) == 0
    out = capsys.readouterr().out
    assert "running, up 3h 2m (pid 4242)" in out
    assert "today $12.00 of $100.00 (12%)" in out
    assert "total $12.00 of $1,000.00 (1%)" in out
    assert "bought 1, failed 1" in out
    assert "searches    7/20" in out
    assert "webhook: sent 3, failed 0, dropped 1" in out
    assert "the service is unavailable (503)" in out
    assert len(out.splitlines()) <= 24  # one screen


@pytest.mark.parametrize(
    ("changes", "code", "says"),
    [
        ({"mode": "halted", "halt_reason": "kill file x exists"}, 4, "HALTED: kill file x exists"),
        ({"updated_at": 1_000.0}, 5, "not running? the status file was last written"),
        ({"mode": "stopped"}, 5, "stopped"),
        (
            {"updated_at": 1_000.0, "stopped_by": "refused to trade: bad link"},
            5,
            "ago; refused to trade: bad link",
        ),
        (
            {"mode": "starting", "waiting": "no trade link check: 503", "start_attempts": 3},
            5,
            "starting, waiting (attempt 3): no trade link check: 503",
        ),
    ],
)
async def test_status_exit_codes_follow_the_engine_state(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    changes: dict[str, Any],
    code: int,
    says: str,
) -> None:
    ledger = tmp_path / "snipe.sqlite"
    await _ledger_with_purchases(ledger, NOW)
    _status_file(ledger, NOW, **changes)
    assert await _status(["status", str(ledger)], NOW) == code
    assert says in capsys.readouterr().out


async def test_status_without_a_status_file_still_shows_the_ledger(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ledger = tmp_path / "snipe.sqlite"
    await _ledger_with_purchases(ledger, NOW)
    assert await _status(["status", str(ledger), "--json"], NOW) == 5
    report = json.loads(capsys.readouterr().out)
    assert report["state"] == "unknown"
    assert report["spent_today"] == 12_000
    assert report["purchases_today"] == {"BOUGHT": 1, "FAILED": 1}


async def test_purchases_before_utc_midnight_are_not_today(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ledger = tmp_path / "snipe.sqlite"
    await _ledger_with_purchases(ledger, MIDNIGHT + 30)  # made 30 s before midnight
    assert await _status(["status", str(ledger), "--json"], MIDNIGHT + 30) == 5
    report = json.loads(capsys.readouterr().out)
    assert report["spent_today"] == 0
    assert report["spent_total"] == 12_000


async def test_status_of_a_missing_ledger_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert await _main(["status", str(tmp_path / "nope.sqlite")]) == 2
    assert "nope.sqlite" in capsys.readouterr().err


async def test_the_status_file_round_trips_without_secrets(tmp_path: Path) -> None:
    from sniper.harness import quiet_sandbox, rig, rules_text

    clock = VirtualClock()
    sandbox = quiet_sandbox(clock)
    async with rig(clock, sandbox, rules_text("AWP | Asiimov (Field-Tested)")) as r:
        r.engine.status.halt("because")
        document = status_document(await r.engine.view(), every=5.0)
    path = tmp_path / "x.status.json"
    write_status_file(path, document)
    assert read_status_file(path) == document
    assert document["mode"] == "halted"
    assert sandbox.api_key not in path.read_text()
    assert read_status_file(tmp_path / "missing.json") is None


async def _status(argv: list[str], now: float) -> int:
    """``snipe status`` with its clock fixed at ``now``."""
    import anyio

    from engine.cli import build_parser
    from engine.cli._status import run

    args = build_parser().parse_args(argv)
    return await anyio.to_thread.run_sync(partial(run, args, clock=VirtualClock(now)))


async def _main(argv: list[str]) -> int:
    import anyio

    # the command runs its own event loop: give it a thread of its own
    return await anyio.to_thread.run_sync(main, argv)
