"""Every loop survives the unexpected: an error outside snipe's own types is logged with its
traceback once, counted, and becomes a retried step or a clean HALT, never an exception
group; a purchase in flight then is resolved by project_id, as after a crash."""

from __future__ import annotations

import logging
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from engine import VirtualClock
from engine.ledger import PurchaseState
from engine.ops import OpsSettings, operations
from engine.sniper import EngineMode

from .harness import Rig, pick_item, plant, purchases_of, quiet_sandbox, rig, rules_text


def failing(times: int, error: Callable[[], BaseException], real: Callable[..., Any]) -> Any:
    """``real``, except that its first ``times`` calls raise ``error()``."""
    calls = {"n": 0}

    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] <= times:
            raise error()
        return await real(*args, **kwargs)

    return wrapper


def tracebacks(caplog: pytest.LogCaptureFixture, loop: str) -> int:
    return sum(
        1 for r in caplog.records if r.exc_info and r.getMessage().startswith(f"{loop}: unexpected")
    )


async def test_a_sqlite_error_in_reconciling_is_retried(
    clock: VirtualClock, caplog: pytest.LogCaptureFixture
) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    plant(sandbox, item, price=item.reference // 2)
    async with rig(clock, sandbox, rules_text(item.name)) as r:
        r.ledger.open_trades = failing(  # type: ignore[method-assign]
            3, lambda: sqlite3.OperationalError("database is locked"), r.ledger.open_trades
        )
        async with clock.autojump():
            status = await r.engine.run(duration=600)
        (purchase,) = await r.ledger.purchases()
    assert status.mode is EngineMode.STOPPED  # retried, never halted
    assert status.unexpected["reconcile"] == 3
    assert tracebacks(caplog, "reconcile") == 1  # the traceback once, then one line each
    assert any("database is locked" not in e and "reconcile" in e for e in status.errors)
    assert purchase.state is PurchaseState.COMPLETED  # followed to the end all the same


async def test_a_bug_in_a_search_step_is_retried_then_it_buys(
    clock: VirtualClock, caplog: pytest.LogCaptureFixture
) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    plant(sandbox, item, price=item.reference // 2)
    async with rig(clock, sandbox, rules_text(item.name)) as r:
        r.engine.decide = failing(  # type: ignore[method-assign]
            2, lambda: KeyError("a plugin's bug"), r.engine.decide
        )
        async with clock.autojump():
            status = await r.engine.run(duration=300)
    assert status.mode is EngineMode.STOPPED
    assert status.unexpected["search"] == 2
    assert tracebacks(caplog, "search") == 1
    assert len(purchases_of(sandbox)) == 1


async def test_a_bug_that_repeats_halts_cleanly(clock: VirtualClock) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    plant(sandbox, item, price=item.reference // 2)
    async with rig(clock, sandbox, rules_text(item.name)) as r:
        r.engine.decide = failing(  # type: ignore[method-assign]
            10**6, lambda: ZeroDivisionError("division by zero"), r.engine.decide
        )
        async with clock.autojump():
            status = await r.engine.run(duration=900)  # returns: no exception group
    assert status.mode is EngineMode.HALTED
    assert status.halt_reason is not None
    assert "search: unexpected error builtins.ZeroDivisionError" in status.halt_reason
    assert "5 times in a row" in status.halt_reason
    assert purchases_of(sandbox) == []


async def test_an_error_while_buying_halts_and_the_purchase_is_resolved_as_after_a_crash(
    clock: VirtualClock,
) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    deal = plant(sandbox, item, price=item.reference // 2)
    async with rig(clock, sandbox, rules_text(item.name)) as r:
        # the disk fails right after the purchase was sent: its answer cannot be recorded
        r.ledger.transition = failing(  # type: ignore[method-assign]
            1, lambda: sqlite3.OperationalError("disk I/O error"), r.ledger.transition
        )
        async with clock.autojump():
            status = await r.engine.run(duration=300)
        (purchase,) = await r.ledger.purchases()
    assert status.mode is EngineMode.HALTED
    assert status.halt_reason is not None
    assert status.halt_reason.startswith("buyer: unexpected error")
    assert status.unexpected["buyer"] == 1
    # left INTENT by the failure, then found by project_id while HALTED (reconciling goes on)
    assert purchase.item_id == str(deal.item_id)
    assert purchase.state in (PurchaseState.BOUGHT, PurchaseState.COMPLETED)
    assert len(purchases_of(sandbox)) == 1


async def test_an_unexpected_error_in_an_operations_step_never_stops_anything(
    clock: VirtualClock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import engine.ops._operations as ops_module

    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    real_write = ops_module.write_status_file
    calls = {"n": 0}

    def flaky_write(path: Any, document: Any) -> None:
        calls["n"] += 1
        if 2 <= calls["n"] <= 8:  # more than the 5 in a row that would halt an engine loop
            raise TypeError("a bug in the status writer")
        real_write(path, document)

    monkeypatch.setattr(ops_module, "write_status_file", flaky_write)
    status_file = tmp_path / "l.status.json"
    r: Rig
    async with rig(clock, sandbox, rules_text(item.name)) as r, clock.autojump():
        settings = OpsSettings(status_file=status_file, status_every=5.0)
        async with operations(r.engine, settings):
            status = await r.engine.run(duration=600)
    assert status.mode is EngineMode.STOPPED  # never halts buying
    assert status.unexpected["ops: status file"] == 7
    assert calls["n"] > 9  # written again after the failures
    assert status_file.exists()


def test_snipe_run_prints_one_line_not_an_exception_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from engine.cli import _run as run_module
    from engine.cli import main

    def broken(*args: object, **kwargs: object) -> object:
        raise ExceptionGroup("unhandled errors in a TaskGroup", [RuntimeError("boom")])

    monkeypatch.setattr(run_module, "open_engine", broken)
    monkeypatch.setenv("SNIPE_API_KEY", "a-key-for-this-test")
    rules = tmp_path / "rules.yaml"
    rules.write_text(rules_text("AWP | Asiimov (Field-Tested)"))
    logging.getLogger("snipe").propagate = True
    assert main(["run", str(rules), "--ledger", str(tmp_path / "l.sqlite")]) == 1
    err = capsys.readouterr().err
    assert "snipe run: stopped by an unexpected error: builtins.RuntimeError" in err
    assert "ExceptionGroup" not in err
    assert "a-key-for-this-test" not in err
    assert sys.exc_info() == (None, None, None)


async def test_an_operations_task_that_fails_is_started_again_never_halting(
    clock: VirtualClock,
) -> None:
    from engine.ops._operations import Operations, _guarded

    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    runs: list[float] = []

    async def task() -> None:
        runs.append(clock.now())
        if len(runs) <= 6:
            raise RuntimeError("a bug in a notifier")

    async with rig(clock, sandbox, rules_text(item.name)) as r, clock.autojump():
        await _guarded(Operations(r.engine), "notification delivery", task)
    assert len(runs) == 7
    assert r.engine.status.unexpected["ops: notification delivery"] == 6
    assert not r.engine.status.halted  # 6 in a row would halt an engine loop, not this
    assert runs[-1] - runs[0] == 5 + 10 + 20 + 40 + 60 + 60  # backoff from error_backoff 5 s
