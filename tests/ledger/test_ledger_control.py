"""Control actions (through the API) in the ledger: kept in order with the engine clock's
time and the token's name, append-only, paged by id."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from engine import VirtualClock
from engine.ledger import Ledger


async def test_control_actions_are_kept_in_order_and_never_changed(
    ledger: Ledger, ledger_path: Path, clock: VirtualClock
) -> None:
    first = await ledger.record_control("pause", actor="phone", outcome="paused")
    clock.advance(5)
    await ledger.record_control(
        "reload", actor="laptop", outcome="refused", details={"error": "r.yaml:3:1: bad"}
    )
    events = await ledger.control_events()
    assert [(e.action, e.actor, e.outcome) for e in events] == [
        ("pause", "phone", "paused"),
        ("reload", "laptop", "refused"),
    ]
    assert events[1].at == first.at + 5
    assert events[1].details == {"error": "r.yaml:3:1: bad"}
    assert [e.action for e in await ledger.control_events(after=first.id)] == ["reload"]
    assert len(await ledger.control_events(limit=1)) == 1
    raw = sqlite3.connect(ledger_path)
    try:
        for statement in ("UPDATE control_events SET actor = 'x'", "DELETE FROM control_events"):
            with pytest.raises(sqlite3.DatabaseError, match="append-only"):
                raw.execute(statement)
    finally:
        raw.close()
