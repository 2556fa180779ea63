"""What an answer of check-many-project-id does to a purchase."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from engine import IntentRefused, LedgerError, VirtualClock
from engine.ledger import (
    Absence,
    Ledger,
    Purchase,
    PurchaseState,
    history_match,
    is_overdue,
    release,
    resolve,
    resolve_history,
)
from engine.models import HistoryTrade, ProjectTrade

from .support import intent

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
        # absent: an absence alone proves nothing, however long after the request
        (S.INTENT, None, 1.0, None, None),
        (S.UNKNOWN, None, 299.0, None, None),
        (S.INTENT, None, 301.0, None, None),
        (S.UNKNOWN, None, 86_400.0, None, None),
        (S.BOUGHT, None, 10_000.0, None, None),  # absent once is no evidence against a trade
        # a released purchase: watched a day, then FAILED if still absent
        (S.RELEASED, None, 3_600.0, None, None),
        (S.RELEASED, None, 86_401.0, S.FAILED, "not seen in the 24 h after it was released"),
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
        # past send_until and still open: overdue, not refunded; a late acceptance counts
        (S.RESERVED, _trade(2, send_until=int(T0) + 60), 120.0, S.BOUGHT, None),
        (S.BOUGHT, _trade(4, send_until=int(T0) + 60), 3_600.0, None, None),
        (S.BOUGHT, _trade(5, send_until=int(T0) + 60), 3_600.0, S.COMPLETED, None),
        # escrow failed is the service saying "refunded"
        (S.RESERVED, _trade(2, escrow_status="failed"), 5.0, S.REFUNDED, "declined and refunded"),
        # late moves: a released purchase the service shows after all
        (S.RELEASED, _trade(2), 1_200.0, S.BOUGHT, None),
        (S.RELEASED, _trade(5), 1_200.0, S.COMPLETED, None),
        (S.RELEASED, _trade(6, reason="Invalid tradelink"), 9.0, S.REFUNDED, "Invalid tradelink"),
        (S.BOUGHT, _trade(4), 5.0, None, None),
        (S.COMPLETED, _trade(6), 5.0, None, None),  # final stays final
        (S.FAILED, _trade(4), 5.0, None, None),
    ],
)
def test_resolution_table(
    state: S, trade: ProjectTrade | None, after: float, expected: S | None, reason: str | None
) -> None:
    move = resolve(_purchase(state), trade, now=T0 + after)
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
        "charged_from": "trade",
        "source": "check-many-project-id",
        "trade_id": "T1",
        "trade_status": 2,
    }
    with pytest.raises(LedgerError, match="no purchase"):
        await ledger.resolve("snp-ghost", None)


# With the ledger's defaults, which must be the documented rule (docs/architecture.md): both
# absences 300 s or more after the request, at least 180 s apart. The numbers are written
# here, not taken from the code, so a wrong default cannot pass.
@pytest.mark.parametrize(
    ("state", "first", "last", "history_clear", "expected"),
    [
        (S.UNKNOWN, 301.0, 481.0, True, S.RELEASED),  # 180 s apart
        (S.INTENT, 600.0, 900.0, True, S.RELEASED),
        (S.UNKNOWN, 301.0, 400.0, True, None),  # two absences, too close together
        (S.UNKNOWN, 301.0, 480.0, True, None),  # 179 s apart
        (S.UNKNOWN, 301.0, 301.0, True, None),  # one absence
        (S.UNKNOWN, 200.0, 600.0, True, None),  # the first came before the grace was over
        (S.UNKNOWN, 299.0, 600.0, True, None),  # by a second
        (S.UNKNOWN, 301.0, 481.0, False, None),  # my-history not read, or not clear
        (S.BOUGHT, 301.0, 481.0, True, None),  # a known trade is never released
        (S.FAILED, 301.0, 481.0, True, None),
    ],
)
def test_release_needs_two_absences_minutes_apart_and_a_clear_history(
    state: S, first: float, last: float, history_clear: bool, expected: S | None
) -> None:
    absence = Absence(T0 + first, T0 + last, history_clear=history_clear)
    move = release(_purchase(state), absence)
    if expected is None:
        assert move is None
    else:
        assert move is not None
        assert move.state is expected
        assert move.reason is not None
        assert "not in my-history" in move.reason


def _row(**fields: Any) -> HistoryTrade:
    return HistoryTrade.model_validate({"id": 99, "price": 4_800, "status": 2, **fields})


@pytest.mark.parametrize(
    ("row", "matches"),
    [
        (_row(project_id="snp-1"), True),
        (_row(project_id="snp-2", item_id="1", created=int(T0)), False),  # someone else's
        (_row(item_id="1", created=int(T0) + 30), True),  # no project_id: item and time
        # the service's clock may be up to 120 s behind ours: still this purchase
        (_row(item_id="1", created=int(T0) - 120), True),
        (_row(item_id="1", created=int(T0) - 121), False),
        (_row(item_id="1", created=int(T0) - 3_600), False),  # an earlier sale of the item
        (_row(item_id="2", created=int(T0) + 30), False),
        (_row(item_id="1", created=int(T0) + 30, action="sell"), False),
    ],
)
def test_history_match_by_project_id_or_item_and_time(row: HistoryTrade, matches: bool) -> None:
    assert (history_match(_purchase(S.UNKNOWN), [row]) is row) is matches


@pytest.mark.parametrize(
    ("status", "expected"), [(2, S.BOUGHT), (4, S.BOUGHT), (5, S.COMPLETED), (6, S.REFUNDED)]
)
def test_a_history_row_says_it_happened(status: int, expected: S) -> None:
    move = resolve_history(_purchase(S.UNKNOWN), _row(project_id="snp-1", status=status))
    assert move is not None
    assert (move.state, move.charged_price, move.marketplace_id) == (expected, 4_800, 99)
    assert move.details["source"] == "my-history"


def test_overdue_is_shown_from_the_clock_but_moves_nothing() -> None:
    bought = _purchase(S.BOUGHT, send_until=int(T0) + 900)
    assert not is_overdue(bought, T0 + 899)
    assert is_overdue(bought, T0 + 901)
    assert not is_overdue(_purchase(S.COMPLETED, send_until=int(T0) + 900), T0 + 901)
    assert resolve(bought, _trade(4), now=T0 + 5_000) is None


async def test_a_released_purchase_frees_its_budget_and_item_and_takes_them_back_late(
    ledger: Ledger, clock: VirtualClock
) -> None:
    await ledger.record_intent(intent(1, price=5_000))
    await ledger.transition("snp-test-0001", S.UNKNOWN)
    clock.advance(301)
    assert await ledger.resolve("snp-test-0001", None) is None  # absence alone: nothing
    assert await ledger.committed() == 5_000
    now = clock.now()
    released = await ledger.release("snp-test-0001", Absence(now, now + 200, history_clear=True))
    assert released is not None
    assert released.state is S.RELEASED
    assert await ledger.committed() == 0
    assert [p.project_id for p in await ledger.released(since=clock.now() - 86_400)] == [
        "snp-test-0001"
    ]
    await ledger.record_intent(intent(2, item="item-1"))  # its item is free: a new decision
    clock.advance(1_200)
    late = ProjectTrade.model_validate(
        {"id": 8, "project_id": "snp-test-0001", "price": 4_700, "status": 4}
    )
    with pytest.raises(LedgerError):  # both live on one listing: the ledger refuses
        await ledger.resolve("snp-test-0001", late)
    await ledger.transition("snp-test-0002", S.FAILED, reason="refused: Item sold")
    bought = await ledger.resolve("snp-test-0001", late)
    assert bought is not None
    assert bought.state is S.BOUGHT
    assert await ledger.committed() == 4_700
    with pytest.raises(IntentRefused, match="already has a live purchase"):
        await ledger.record_intent(intent(3, item="item-1"))
    assert (await ledger.events("snp-test-0001"))[-1].details["late"] is True


async def test_a_release_never_seen_in_its_watch_day_fails(
    ledger: Ledger, clock: VirtualClock
) -> None:
    await ledger.record_intent(intent(1, price=5_000))
    now = clock.now()
    await ledger.release("snp-test-0001", Absence(now + 400, now + 700, history_clear=True))
    clock.advance(86_399)
    assert await ledger.resolve("snp-test-0001", None) is None
    assert await ledger.released_before(clock.now() - 86_400) == []
    clock.advance(2)
    failed = await ledger.resolve("snp-test-0001", None)
    assert failed is not None
    assert failed.state is S.FAILED
    assert "not seen" in (failed.reason or "")
