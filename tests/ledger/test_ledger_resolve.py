"""What an answer of check-many-project-id does to a purchase."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from conftest import intent

from engine import LedgerError, VirtualClock
from engine.ledger import Ledger, Purchase, PurchaseState, resolve
from engine.models import ProjectTrade

S = PurchaseState
T0 = 1_767_225_600.0


def _purchase(state: S, *, created: float = T0, updated: float = T0, **extra: Any) -> Purchase:
    base = Purchase(
        project_id="snp-1",
        item_id="1",
        name="AK-47",
        game="csgo",
        price=5_000,
        charged_price=None,
        rule="r1",
        state=state,
        batch_id=None,
        allow_trade_locked=False,
        created_at=created,
        updated_at=updated,
        unlock_at=None,
        send_until=None,
        marketplace_id=None,
        reason=None,
    )
    return replace(base, **extra)


def _trade(status: int, **extra: Any) -> ProjectTrade:
    return ProjectTrade.model_validate(
        {"id": 30717149, "project_id": "snp-1", "price": 4_900, "status": status, **extra}
    )


@pytest.mark.parametrize(
    ("state", "trade", "after", "expected", "reason"),
    [
        # absent: nothing yet within the grace period, FAILED after it
        (S.INTENT, None, 1.0, None, None),
        (S.UNKNOWN, None, 299.0, None, None),
        (S.INTENT, None, 301.0, S.FAILED, "absent from the service 301 s after the request"),
        (S.UNKNOWN, None, 400.0, S.FAILED, "absent from the service 400 s after the request"),
        (S.BOUGHT, None, 10_000.0, None, None),  # absent once is no evidence against a trade
        # found: the trade status decides
        (S.UNKNOWN, _trade(0), 5.0, S.BOUGHT, None),
        (S.INTENT, _trade(2), 5.0, S.BOUGHT, None),
        (S.UNKNOWN, _trade(4), 5.0, S.BOUGHT, None),
        (S.UNKNOWN, _trade(5), 5.0, S.COMPLETED, None),
        (S.BOUGHT, _trade(5), 5.0, S.COMPLETED, None),
        (
            S.BOUGHT,
            _trade(6, reason="Buyer failed to accept"),
            5.0,
            S.REFUNDED,
            "Buyer failed to accept",
        ),
        (S.UNKNOWN, _trade(6), 5.0, S.REFUNDED, "declined and refunded"),
        (S.UNKNOWN, _trade(2, unlock_at=int(T0) + 86_400), 5.0, S.RESERVED, None),
        (S.RESERVED, _trade(2, unlock_at=int(T0) + 86_400), 5.0, None, None),  # nothing new
        (S.RESERVED, _trade(4, unlock_at=int(T0) + 60), 120.0, S.BOUGHT, None),  # lock over
        (S.RESERVED, _trade(2, send_until=int(T0) + 60), 120.0, S.REFUNDED, "send_until passed"),
        (S.BOUGHT, _trade(4), 5.0, None, None),
        (S.COMPLETED, _trade(6), 5.0, None, None),  # final stays final
        (S.FAILED, _trade(4), 5.0, None, None),
    ],
)
def test_resolution_table(
    state: S, trade: ProjectTrade | None, after: float, expected: S | None, reason: str | None
) -> None:
    move = resolve(_purchase(state), trade, now=T0 + after, grace=300.0)
    if expected is None:
        assert move is None
        return
    assert move is not None
    assert move.state is expected
    assert move.reason == reason
    if trade is not None:
        assert move.charged_price == 4_900
        assert move.marketplace_id == 30717149
        assert move.details["trade_status"] == trade.status


async def test_ledger_resolve_applies_the_answer(ledger: Ledger, clock: VirtualClock) -> None:
    await ledger.record_intent(intent(1, price=5_000))
    await ledger.transition("snp-test-0001", S.UNKNOWN)
    assert await ledger.resolve("snp-test-0001", None) is None  # too early to say
    clock.advance(2)
    answer = ProjectTrade.model_validate(
        {"id": 7, "project_id": "snp-test-0001", "price": "4900", "status": 2, "trade_id": "T1"}
    )
    bought = await ledger.resolve("snp-test-0001", answer)
    assert bought is not None
    assert (bought.state, bought.charged_price, bought.marketplace_id) == (S.BOUGHT, 4_900, 7)
    assert await ledger.committed() == 4_900
    events = await ledger.events("snp-test-0001")
    assert events[-1].details == {
        "source": "check-many-project-id",
        "trade_id": "T1",
        "trade_status": 2,
    }
    with pytest.raises(LedgerError, match="no purchase"):
        await ledger.resolve("snp-ghost", None)


async def test_an_intent_absent_after_the_grace_is_failed_and_frees_its_budget(
    ledger: Ledger, clock: VirtualClock
) -> None:
    await ledger.record_intent(intent(1, price=5_000))
    clock.advance(301)
    failed = await ledger.resolve("snp-test-0001", None, grace=300)
    assert failed is not None
    assert failed.state is S.FAILED
    assert await ledger.committed() == 0
    assert await ledger.unresolved() == []
