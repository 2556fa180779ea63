"""The budget a decision sees: read from the ledger again after every write this engine
makes (and at each UTC midnight), and not before, so a feed event of a watched name is
decided without a trip to the ledger's thread (both backends)."""

from __future__ import annotations

import uuid

import pytest

from engine import VirtualClock
from engine.ledger import Intent, Ledger

from .harness import pick_item, plant, quiet_sandbox, rig, rules_text


async def test_a_decision_sees_each_purchase_written_and_reads_the_ledger_only_then(
    clock: VirtualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    reads: list[float | None] = []
    committed = Ledger.committed_by_rule

    async def counted(self: Ledger, *, since: float | None = None) -> object:
        reads.append(since)
        return await committed(self, since=since)

    monkeypatch.setattr(Ledger, "committed_by_rule", counted)
    async with rig(clock, sandbox, rules_text(item.name)) as r:
        deal = plant(sandbox, item, price=item.reference // 2)
        answer = await r.engine.client.search_items_by_name([item.name])
        (listing,) = [li for li in answer.items[item.name] if li.item_id == str(deal.item_id)]
        first, _ = await r.engine.decide([listing], clock.now())
        before = len(reads)
        assert before > 0
        again, context = await r.engine.decide([listing], clock.now())
        assert len(reads) == before  # nothing written: the same budget, no ledger read
        assert [d.accepted for d in again] == [d.accepted for d in first] == [True]
        assert context.budget.spent_total == 0
        # a purchase written (in flight: it counts at once)
        intent = Intent(
            project_id=f"t-{uuid.uuid4().hex[:12]}",
            item_id="elsewhere-1",
            name=item.name,
            price=123_000,
            rule="deals",
        )
        await r.ledger.record_intent(intent)
        _, context = await r.engine.decide([listing], clock.now())
        assert len(reads) > before
        assert context.budget.spent_total == 123_000
        # a new UTC day: today's spend is read again
        after = len(reads)
        clock.advance(86_400.0)
        _, context = await r.engine.decide([listing], clock.now())
        assert len(reads) > after
        assert context.budget.spent_today == 0
        assert context.budget.spent_total == 123_000
