"""The ledger on a real file, on both backends and both drivers."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

from engine import IntentRefusal, IntentRefused, LedgerError, VirtualClock
from engine.ledger import (
    BUDGET_STATES,
    MEMORY,
    TRANSITIONS,
    Cap,
    Committed,
    Driver,
    Ledger,
    PurchaseState,
    utc_day_start,
)

from .support import intent

S = PurchaseState


async def test_an_intent_is_readable_back_with_its_event(
    ledger: Ledger, clock: VirtualClock
) -> None:
    written = await ledger.record_intent(intent(1, price=12_500))
    assert written.state is S.INTENT
    assert written.created_at == clock.now()
    assert await ledger.get("snp-test-0001") == written
    events = await ledger.events("snp-test-0001")
    assert [(e.from_state, e.to_state) for e in events] == [(None, S.INTENT)]
    assert await ledger.get("snp-nope") is None


async def test_a_purchase_moves_through_its_life(ledger: Ledger, clock: VirtualClock) -> None:
    await ledger.record_intent(intent(1, price=12_500))
    clock.advance(1)
    await ledger.transition("snp-test-0001", S.UNKNOWN, details={"endpoint": "GET /v1/buy-one-p2p"})
    clock.advance(60)
    bought = await ledger.transition(
        "snp-test-0001",
        S.BOUGHT,
        charged_price=12_000,
        marketplace_id=30717149,
        details={"trade_status": 2},
    )
    assert bought.charged_price == 12_000
    assert bought.amount == 12_000
    assert bought.marketplace_id == 30717149
    clock.advance(600)
    done = await ledger.transition("snp-test-0001", S.COMPLETED, details={"trade_status": 5})
    assert done == await ledger.get("snp-test-0001")
    assert done.charged_price == 12_000  # kept when not given again
    assert done.updated_at == clock.now()
    events = await ledger.events("snp-test-0001")
    assert [e.to_state for e in events] == [S.INTENT, S.UNKNOWN, S.BOUGHT, S.COMPLETED]
    assert events[1].details == {"endpoint": "GET /v1/buy-one-p2p"}
    assert events[3].from_state is S.BOUGHT


@pytest.mark.parametrize(
    ("path", "target", "reason"),
    [
        ((S.FAILED,), S.BOUGHT, None),
        ((S.BOUGHT, S.COMPLETED), S.REFUNDED, "late"),
        ((S.BOUGHT,), S.RESERVED, None),
        ((), S.INTENT, None),
        ((S.UNKNOWN,), S.FAILED, None),  # FAILED without a reason
    ],
)
async def test_an_illegal_transition_raises_and_writes_nothing(
    ledger: Ledger, clock: VirtualClock, path: tuple[S, ...], target: S, reason: str | None
) -> None:
    await ledger.record_intent(intent(1))
    for step in path:
        await ledger.transition("snp-test-0001", step, reason="setup")
    before = await ledger.get("snp-test-0001")
    events_before = await ledger.events()
    clock.advance(5)
    with pytest.raises(LedgerError, match="snp-test-0001"):
        await ledger.transition("snp-test-0001", target, reason=reason, charged_price=1)
    assert await ledger.get("snp-test-0001") == before
    assert await ledger.events() == events_before


async def test_transition_of_an_unknown_purchase_or_with_bad_details_writes_nothing(
    ledger: Ledger,
) -> None:
    with pytest.raises(LedgerError, match="no purchase with project_id 'snp-ghost'"):
        await ledger.transition("snp-ghost", S.BOUGHT)
    await ledger.record_intent(intent(1))
    with pytest.raises(LedgerError, match="not one the ledger stores"):
        await ledger.transition("snp-test-0001", S.BOUGHT, details={"url": "x"})
    with pytest.raises(LedgerError, match="charged_price"):
        await ledger.transition("snp-test-0001", S.BOUGHT, charged_price=-5)
    assert (await ledger.get("snp-test-0001")).state is S.INTENT  # type: ignore[union-attr]
    assert len(await ledger.events()) == 1


async def test_the_same_listing_is_never_bought_twice(ledger: Ledger) -> None:
    await ledger.record_intent(intent(1, item="listing-7"))
    for state in (S.INTENT, S.UNKNOWN, S.BOUGHT, S.COMPLETED):
        if state is not S.INTENT:
            await ledger.transition("snp-test-0001", state)
        with pytest.raises(IntentRefused) as refused:
            await ledger.record_intent(intent(2, item="listing-7"))
        assert refused.value.reason is IntentRefusal.DUPLICATE_ITEM
        assert "snp-test-0001" in str(refused.value)
    assert await ledger.get("snp-test-0002") is None


async def test_a_refunded_listing_is_not_bought_again_but_a_failed_one_may_be(
    ledger: Ledger,
) -> None:
    await ledger.record_intent(intent(1, item="a"))
    await ledger.transition("snp-test-0001", S.REFUNDED, reason="Invalid tradelink")
    with pytest.raises(IntentRefused):
        await ledger.record_intent(intent(2, item="a"))
    await ledger.record_intent(intent(3, item="b"))
    await ledger.transition("snp-test-0003", S.FAILED, reason="Item sold")
    again = await ledger.record_intent(intent(4, item="b"))
    assert again.state is S.INTENT


async def test_a_project_id_is_used_once(ledger: Ledger) -> None:
    await ledger.record_intent(intent(1))
    await ledger.transition("snp-test-0001", S.FAILED, reason="System busy")
    with pytest.raises(IntentRefused) as refused:
        await ledger.record_intent(intent(1, item="other"))
    assert refused.value.reason is IntentRefusal.DUPLICATE_PROJECT_ID
    assert len(await ledger.purchases()) == 1


@pytest.mark.parametrize(
    ("cap", "allowed"),
    [
        (Cap(limit=3_000), 3),
        (Cap(limit=2_999), 2),
        (Cap(limit=2, kind="count"), 2),
        (Cap(limit=1_000, rule="r1"), 1),
        (Cap(limit=0, rule="other-rule"), 5),  # another rule's cap does not apply
    ],
)
async def test_a_cap_counts_in_flight_purchases(ledger: Ledger, cap: Cap, allowed: int) -> None:
    for n in range(allowed):
        await ledger.record_intent(intent(n), caps=[cap])
    for n in range(allowed, 5):
        with pytest.raises(IntentRefused) as refused:
            await ledger.record_intent(intent(n), caps=[cap])
        assert refused.value.reason is IntentRefusal.CAP
        assert refused.value.limit == cap.limit
    assert len(await ledger.unresolved()) == allowed  # every one still in flight


async def test_failed_and_refunded_release_budget_and_the_charge_replaces_the_ceiling(
    ledger: Ledger,
) -> None:
    cap = Cap(limit=10_000, name="test budget")
    for n in range(4):
        await ledger.record_intent(intent(n, price=2_500), caps=[cap])
    with pytest.raises(IntentRefused, match=r"test budget: \$10\.00 committed"):
        await ledger.record_intent(intent(9, price=1), caps=[cap])
    await ledger.transition("snp-test-0000", S.FAILED, reason="Item sold")
    await ledger.transition("snp-test-0001", S.BOUGHT, charged_price=2_000)
    await ledger.transition("snp-test-0002", S.REFUNDED, reason="Buyer failed to accept")
    assert await ledger.committed() == 2_000 + 2_500
    await ledger.record_intent(intent(10, price=5_500), caps=[cap])
    assert await ledger.committed() == 10_000
    totals = await ledger.totals()
    assert (totals.spent, totals.in_flight, totals.refunded) == (2_000, 8_000, 2_500)
    assert totals.by_state["FAILED"] == 1
    assert totals.by_rule["r1"].count == 3


async def test_daily_cap_counts_only_today(ledger: Ledger, clock: VirtualClock) -> None:
    clock.jump_to(utc_day_start(clock.now()) + 23 * 3600)
    await ledger.record_intent(intent(1, price=4_000))
    clock.advance(2 * 3600)  # the next UTC day
    daily = Cap(limit=5_000, since=utc_day_start(clock.now()))
    await ledger.record_intent(intent(2, price=5_000), caps=[daily])
    with pytest.raises(IntentRefused):
        await ledger.record_intent(intent(3, price=1), caps=[daily])
    assert await ledger.committed(since=utc_day_start(clock.now())) == 5_000
    assert await ledger.committed() == 9_000
    assert await ledger.count(rule="r1") == 2


async def test_totals_per_rule_and_since(ledger: Ledger, clock: VirtualClock) -> None:
    await ledger.record_intent(intent(1, price=1_000, rule="knives"))
    await ledger.record_intent(intent(2, price=2_000, rule="gloves"))
    clock.advance(86_400)
    await ledger.record_intent(intent(3, price=4_000, rule="knives"))
    await ledger.transition("snp-test-0003", S.BOUGHT, charged_price=3_900)
    totals = await ledger.totals()
    assert totals.by_rule["knives"].spent == 3_900
    assert totals.by_rule["knives"].in_flight == 1_000
    assert totals.by_rule["gloves"].in_flight == 2_000
    assert totals.committed == 6_900
    today = await ledger.totals(since=clock.now() - 10)
    assert today.committed == 3_900
    assert set(today.by_rule) == {"knives"}
    assert await ledger.committed(rule="knives") == 4_900
    assert await ledger.count(rule="gloves") == 1
    assert [p.project_id for p in await ledger.purchases(rule="knives")] == [
        "snp-test-0001",
        "snp-test-0003",
    ]
    assert [p.project_id for p in await ledger.open_trades()] == ["snp-test-0003"]


async def test_many_concurrent_intents_never_pass_a_cap(ledger: Ledger) -> None:
    caps = [Cap(limit=10_000), Cap(limit=7, kind="count", rule="r1")]
    outcomes: list[str] = []

    async def buy(n: int) -> None:
        try:
            await ledger.record_intent(intent(n, price=1_000), caps=caps)
            outcomes.append("written")
        except IntentRefused as refused:
            outcomes.append(refused.reason.value)

    async with anyio.create_task_group() as tg:
        for n in range(60):
            tg.start_soon(buy, n)
    assert outcomes.count("written") == 7
    assert outcomes.count("cap") == 53
    assert await ledger.committed() == 7_000


async def test_two_connections_on_one_file_never_pass_a_cap(
    ledger_path: Path, clock: VirtualClock, driver: Driver
) -> None:
    cap = Cap(limit=5_000)
    written = 0

    async def buy(book: Ledger, n: int) -> None:
        nonlocal written
        try:
            await book.record_intent(intent(n), caps=[cap])
            written += 1
        except IntentRefused:
            pass

    a = await Ledger.open(ledger_path, clock=clock, driver=driver)
    b = await Ledger.open(ledger_path, clock=clock, driver=driver)
    async with a, b, anyio.create_task_group() as tg:
        for n in range(30):
            tg.start_soon(buy, a if n % 2 else b, n)
    assert written == 5
    async with await Ledger.open(ledger_path, clock=clock) as check:
        assert await check.committed() == 5_000


async def test_a_bulk_batch_is_all_or_nothing(ledger: Ledger) -> None:
    batch = [intent(n, price=2_000) for n in range(3)]
    with pytest.raises(IntentRefused):
        await ledger.record_intents(batch, caps=[Cap(limit=5_000)])
    assert await ledger.purchases() == []
    with pytest.raises(IntentRefused) as refused:
        await ledger.record_intents([intent(1), intent(2, item="item-1")])
    assert refused.value.reason is IntentRefusal.DUPLICATE_ITEM
    written = await ledger.record_intents(batch, caps=[Cap(limit=6_000)])
    assert [p.state for p in written] == [S.INTENT] * 3
    assert await ledger.record_intents([]) == []


async def test_a_cancelled_intent_leaves_the_ledger_usable(ledger: Ledger) -> None:
    with anyio.CancelScope() as scope:
        scope.cancel()
        await ledger.record_intent(intent(1))
    assert await ledger.get("snp-test-0001") is None
    await ledger.record_intent(intent(2))
    await ledger.transition("snp-test-0002", S.BOUGHT)
    assert (await ledger.get("snp-test-0002")).state is S.BOUGHT  # type: ignore[union-attr]


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_budget_buckets_agree_with_the_purchases(
    ledger: Ledger, clock: VirtualClock, seed: int
) -> None:
    """Caps read trigger-kept day buckets; they must equal a plain sum over purchases
    after any mix of intents, charges and moves across days."""
    rng = random.Random(seed)
    rules = ["a", "b", "c"]
    for n in range(60):
        clock.advance(rng.choice([1.0, 977.5, 3_600.0, 40_000.0]))
        await ledger.record_intent(intent(n, price=rng.randrange(1, 9_000), rule=rng.choice(rules)))
        everything = await ledger.purchases()
        for p in rng.sample(everything, k=min(3, len(everything))):
            targets = sorted(TRANSITIONS[p.state])
            if targets:
                charge = rng.choice([None, rng.randrange(1, 9_000)])
                await ledger.transition(
                    p.project_id, rng.choice(targets), reason="r", charged_price=charge
                )
    everything = await ledger.purchases()
    now = clock.now()
    for rule in [None, *rules]:
        for since in [None, utc_day_start(now), now - 50_000.5, now - 3 * 86_400, 0.0]:
            mine = [
                p
                for p in everything
                if p.state in BUDGET_STATES
                and (rule is None or p.rule == rule)
                and (since is None or p.created_at >= since)
            ]
            assert await ledger.committed(rule=rule, since=since) == sum(p.amount for p in mine)
            assert await ledger.count(rule=rule, since=since) == len(mine)
            if rule is None:
                expected = {
                    r: Committed(
                        sum(p.amount for p in mine if p.rule == r),
                        sum(1 for p in mine if p.rule == r),
                    )
                    for r in rules
                }
                expected = {r: c for r, c in expected.items() if c.count}
                assert await ledger.committed_by_rule(since=since) == expected


async def test_an_in_memory_ledger_works_the_same(clock: VirtualClock, driver: Driver) -> None:
    async with await Ledger.open(MEMORY, clock=clock, driver=driver) as book:
        await book.record_intent(intent(1), caps=[Cap(limit=1_000)])
        with pytest.raises(IntentRefused):
            await book.record_intent(intent(2), caps=[Cap(limit=1_000)])
        assert [p.project_id for p in await book.unresolved()] == ["snp-test-0001"]


async def test_events_are_append_only_in_the_file(ledger: Ledger, ledger_path: Path) -> None:
    await ledger.record_intent(intent(1))
    raw = sqlite3.connect(ledger_path)
    try:
        for sql in (
            "UPDATE events SET to_state = 'BOUGHT'",
            "DELETE FROM events",
            "DELETE FROM purchases",
        ):
            with pytest.raises(sqlite3.IntegrityError):
                raw.execute(sql)
    finally:
        raw.close()


async def test_a_closed_or_readonly_ledger_refuses_writes(
    ledger_path: Path, clock: VirtualClock
) -> None:
    book = await Ledger.open(ledger_path, clock=clock)
    await book.record_intent(intent(1))
    await book.close()
    await book.close()  # twice is fine
    with pytest.raises(LedgerError, match="closed"):
        await book.record_intent(intent(2))
    async with await Ledger.open(ledger_path, clock=clock, readonly=True) as reader:
        assert len(await reader.purchases()) == 1
        with pytest.raises(LedgerError, match="read-only"):
            await reader.record_intent(intent(2))
        with pytest.raises(LedgerError, match="read-only"):
            await reader.transition("snp-test-0001", S.FAILED, reason="x")


class _PausingConnection:
    """Delegates to the real connection, but holds the second purchase INSERT until
    released: a window in which to cancel the writer mid-transaction."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.inserts = 0
        self.paused = anyio.Event()
        self.release = anyio.Event()

    async def execute_fetchall(self, sql: str, parameters: Sequence[Any] = ()) -> list[Any]:
        if sql.startswith("INSERT INTO purchases"):
            self.inserts += 1
            if self.inserts == 2:
                self.paused.set()
                await self.release.wait()
        return list(await self.inner.execute_fetchall(sql, parameters))

    async def close(self) -> None:
        await self.inner.close()


async def test_a_writer_cancelled_mid_transaction_never_leaves_it_half_open(
    ledger: Ledger,
) -> None:
    pausing = _PausingConnection(ledger._connection)
    ledger._connection = pausing
    async with anyio.create_task_group() as tg:
        tg.start_soon(ledger.record_intents, [intent(1), intent(2)])
        await pausing.paused.wait()
        tg.cancel_scope.cancel()  # cancel the writer between its two inserts
        pausing.release.set()
    # The batch finished as one transaction (all or nothing), and the ledger takes writes.
    assert len(await ledger.purchases()) in (0, 2)
    await ledger.record_intent(intent(3))
    await ledger.transition("snp-test-0003", S.FAILED, reason="Item sold")
    assert (await ledger.get("snp-test-0003")).state is S.FAILED  # type: ignore[union-attr]
