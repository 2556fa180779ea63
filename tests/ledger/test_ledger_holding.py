"""A ledger in memory answers a read made again with nothing written since, and a
reconcile pass's queries for rows it holds none of, without a trip to its connection's
thread (``Ledger._read``, ``Ledger._holding``), and always the answer the file gives; a
file ledger, which another process may write, is always read."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from engine import LedgerError, VirtualClock
from engine.ledger import (
    MEMORY,
    TRANSITIONS,
    Driver,
    HistoryFill,
    Ledger,
    OrderState,
    PurchaseState,
    _ledger,
)

from .support import intent

S = PurchaseState
ORDER_NAMES = ("Case", "Key", "Capsule")


async def _reads(ledger: Ledger, now: float, *, every: bool = True) -> dict[str, Any]:
    """Every query a reconcile pass and an order sync make (and, with ``every``, others
    an engine, its status and a report make)."""
    return {
        "unresolved": await ledger.unresolved(),
        "open_trades": await ledger.open_trades(),
        "overdue": await ledger.overdue(now),
        "released": await ledger.released(since=now - 600),
        "released_before": await ledger.released_before(now - 300),
        "orders": await ledger.orders(),
        "all_orders": await ledger.orders(live_only=False) if every else None,
        "exposure": await ledger.order_exposure(),
        "open_fills": await ledger.open_fills(),
        "purchases": await ledger.purchases() if every else None,
        "totals": await ledger.totals(since=now - 900) if every else None,
        "committed": await ledger.committed_by_rule(since=now - 900) if every else None,
        "live_items": await ledger.live_items(["item-1", "item-2", "fill-3"]) if every else None,
        "get": await ledger.get("snp-test-0001") if every else None,
        "events": await ledger.events() if every else None,
    }


async def _random_step(ledger: Ledger, draw: random.Random, step: int) -> object:
    """One write the engine may make, drawn by ``draw`` (the same draws give the same
    write on any ledger); a move the ledger refuses is part of the answer."""
    purchases = await ledger.purchases()
    orders = await ledger.orders(live_only=False)
    # Mostly moves towards the end, so that each kind of row comes and goes.
    kind = draw.choice(["intent", "move", "move", "move", "order", "order_move", "fills"])
    moving = [p for p in purchases if TRANSITIONS[p.state]] or purchases
    try:
        if kind == "intent" or (kind == "move" and not purchases):
            send_until = int(ledger._clock.now()) + draw.choice([30, 600])
            made = replace(intent(step, price=draw.randrange(100, 2_000)), send_until=send_until)
            return (await ledger.record_intent(made)).state
        if kind == "move":
            purchase = draw.choice(moving)
            allowed = sorted(TRANSITIONS[purchase.state])
            to = draw.choice(allowed if allowed and draw.random() < 0.9 else list(S))
            reason = "test" if to in (S.FAILED, S.REFUNDED, S.RELEASED) else None
            return (await ledger.transition(purchase.project_id, to, reason=reason)).state
        if kind == "order" or not orders:
            name = draw.choice(ORDER_NAMES)
            return await ledger.reserve_order(
                name=name, rule="r1", game="csgo", price=draw.randrange(100, 900), amount=3
            )
        order = draw.choice(orders)
        if kind == "fills":
            if draw.random() < 0.5:
                return await ledger.record_fills(order, min(order.amount, order.filled + 1))
            fill = HistoryFill(10_000 + step, 500, draw.choice([1, 2, 5, 6]), f"fill-{step}")
            return await ledger.attach_fills(order, [fill])
        if order.state is OrderState.PENDING and draw.random() < 0.6:
            return await ledger.order_placed(order, order_id=step, price=order.price)
        state = draw.choice([OrderState.CLOSED, OrderState.FAILED, *OrderState])
        return await ledger.set_order_state(order, state, reason="t")
    except LedgerError as exc:  # refused (a move the state machine forbids...): no write
        return type(exc)


@pytest.mark.parametrize("seed", range(6))
async def test_a_ledger_in_memory_answers_as_its_file_does(
    tmp_path: Path, clock: VirtualClock, driver: Driver, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    if seed % 2:  # few reads kept: they are dropped and read again often
        monkeypatch.setattr(_ledger, "_KEPT_READS", 3)
        monkeypatch.setattr(_ledger, "_KEPT_ROWS", 5)
    async with (
        await Ledger.open(MEMORY, clock=clock, driver=driver) as memory,
        await Ledger.open(tmp_path / "l.sqlite", clock=clock, driver=driver) as file,
    ):
        draws = [random.Random(seed), random.Random(seed)]
        ticks = random.Random(-seed)
        for step in range(60):
            assert await _reads(memory, clock.now()) == await _reads(file, clock.now()), step
            done = [await _random_step(memory, draws[0], step)]
            done.append(await _random_step(file, draws[1], step))
            assert done[0] == done[1], step
            clock.advance(ticks.choice([0, 5, 60, 400]))
        assert await _reads(memory, clock.now()) == await _reads(file, clock.now())


def _count_calls(ledger: Ledger) -> Callable[[], int]:
    connection = ledger._connection
    assert connection is not None
    calls = 0
    run = connection.execute_fetchall

    async def counted(sql: str, parameters: Any = ()) -> Any:
        nonlocal calls
        calls += 1
        return await run(sql, parameters)

    connection.execute_fetchall = counted  # type: ignore[method-assign]
    return lambda: calls


async def test_a_ledger_in_memory_with_nothing_pending_reads_nothing(
    clock: VirtualClock, driver: Driver
) -> None:
    async with await Ledger.open(MEMORY, clock=clock, driver=driver) as ledger:
        done = await ledger.record_intent(intent(1))
        await ledger.transition(done.project_id, S.COMPLETED)
        calls = _count_calls(ledger)
        first = await _reads(ledger, clock.now(), every=False)
        assert calls() == 1  # what it holds, read once
        clock.advance(3600)
        assert await _reads(ledger, clock.now(), every=False) == first
        assert calls() == 1
        assert not any(first[k] for k in first if k != "exposure")
        assert first["exposure"].total == 0
        every = await ledger.purchases()
        assert await ledger.purchases() == every
        assert calls() == 2  # the same read again, nothing written since: kept
        # a purchase written is seen at once: its write made the answers stale
        pending = await ledger.record_intent(intent(2))
        assert await ledger.unresolved() == [pending]
        await ledger.transition(pending.project_id, S.UNKNOWN)
        assert [p.state for p in await ledger.unresolved()] == [S.UNKNOWN]
        await ledger.transition(pending.project_id, S.BOUGHT)
        assert await ledger.unresolved() == []
        assert [p.project_id for p in await ledger.open_trades()] == [pending.project_id]
        assert len(await ledger.purchases()) == len(every) + 1


async def test_a_file_ledger_sees_what_another_process_wrote(
    tmp_path: Path, clock: VirtualClock, driver: Driver
) -> None:
    path = tmp_path / "l.sqlite"
    async with await Ledger.open(path, clock=clock, driver=driver) as ours:
        assert await ours.unresolved() == []
        calls = _count_calls(ours)
        # another `snipe run` on the same file (nothing locks it) writes an intent
        async with await Ledger.open(path, clock=clock, driver=driver) as theirs:
            written = await theirs.record_intent(intent(1))
        assert await ours.unresolved() == [written]
        assert calls() == 1  # read, as every time
