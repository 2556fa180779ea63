"""The migration that adds RELEASED keeps every purchase, event, budget and guard."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from engine import IntentRefused, LedgerError, VirtualClock
from engine.ledger import Absence, Ledger, PurchaseState
from engine.ledger import _ledger as ledger_module
from engine.ledger._schema import _RELEASED_MIGRATION, MIGRATIONS

from .support import intent

S = PurchaseState


async def test_a_ledger_from_before_released_is_migrated_with_every_row(
    ledger_path: Path, clock: VirtualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = MIGRATIONS.index(_RELEASED_MIGRATION)
    monkeypatch.setattr(ledger_module, "MIGRATIONS", MIGRATIONS[:before])
    monkeypatch.setattr(ledger_module, "SCHEMA_VERSION", before)
    async with await Ledger.open(ledger_path, clock=clock) as old:
        await old.record_intent(intent(1, price=5_000))
        await old.record_intent(intent(2, price=3_000))
        await old.transition("snp-test-0002", S.BOUGHT, charged_price=2_900)
        with pytest.raises(LedgerError):  # the old file does not know the state
            await old.release(
                "snp-test-0001", Absence(clock.now() + 400, clock.now() + 700, history_clear=True)
            )
    monkeypatch.undo()

    async with await Ledger.open(ledger_path, clock=clock) as ledger:
        assert [p.project_id for p in await ledger.purchases()] == [
            "snp-test-0001",
            "snp-test-0002",
        ]
        assert len(await ledger.events()) == 3
        assert await ledger.committed() == 5_000 + 2_900
        released = await ledger.release(
            "snp-test-0001", Absence(clock.now() + 400, clock.now() + 700, history_clear=True)
        )
        assert released is not None
        assert released.state is S.RELEASED
        assert await ledger.committed() == 2_900
        with pytest.raises(IntentRefused):  # the live-item guard came back with the index
            await ledger.record_intent(intent(3, item="item-2"))
    raw = sqlite3.connect(ledger_path)
    try:
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            raw.execute("DELETE FROM events")
        with pytest.raises(sqlite3.IntegrityError, match="never deleted"):
            raw.execute("DELETE FROM purchases")
        assert raw.execute("PRAGMA foreign_key_check").fetchall() == []
        assert raw.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
    finally:
        raw.close()
