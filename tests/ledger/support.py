"""Helpers of the ledger tests."""

from __future__ import annotations

from engine.ledger import Intent


def intent(n: int, *, price: int = 1_000, rule: str = "r1", item: str | None = None) -> Intent:
    """The ``n``-th test intent: its own project id and item unless told otherwise."""
    return Intent(
        project_id=f"snp-test-{n:04d}",
        item_id=item if item is not None else f"item-{n}",
        name=f"AK-47 | Redline (Field-Tested) #{n}",
        price=price,
        rule=rule,
        game="csgo",
    )
