"""The purchase state machine, table-driven."""

from __future__ import annotations

import itertools

import pytest

from engine import LedgerError
from engine.ledger import BUDGET_STATES, FINAL_STATES, PurchaseState
from engine.ledger._states import check_transition

S = PurchaseState

# Written out independently of engine.ledger.TRANSITIONS, so an accidental edit of the
# table shows up here.
ALLOWED = {
    (S.INTENT, S.UNKNOWN),
    (S.INTENT, S.FAILED),
    (S.INTENT, S.BOUGHT),
    (S.INTENT, S.RESERVED),
    (S.INTENT, S.COMPLETED),
    (S.INTENT, S.REFUNDED),
    (S.INTENT, S.RELEASED),
    (S.UNKNOWN, S.BOUGHT),
    (S.UNKNOWN, S.RESERVED),
    (S.UNKNOWN, S.COMPLETED),
    (S.UNKNOWN, S.REFUNDED),
    (S.UNKNOWN, S.FAILED),
    (S.UNKNOWN, S.RELEASED),
    (S.BOUGHT, S.COMPLETED),
    (S.BOUGHT, S.REFUNDED),
    (S.RESERVED, S.BOUGHT),
    (S.RESERVED, S.COMPLETED),
    (S.RESERVED, S.REFUNDED),
    # the late moves: a purchase released as not bought that the service shows after all,
    # or never shows in its watch period
    (S.RELEASED, S.BOUGHT),
    (S.RELEASED, S.RESERVED),
    (S.RELEASED, S.COMPLETED),
    (S.RELEASED, S.REFUNDED),
    (S.RELEASED, S.FAILED),
}


@pytest.mark.parametrize(("current", "target"), list(itertools.product(S, S)))
def test_transition_is_allowed_exactly_when_listed(current: S, target: S) -> None:
    if (current, target) in ALLOWED:
        check_transition("snp-x", current, target, reason="because")
    else:
        with pytest.raises(LedgerError, match=f"illegal transition {current} -> {target}"):
            check_transition("snp-x", current, target, reason="because")


@pytest.mark.parametrize("final", sorted(FINAL_STATES))
def test_nothing_leaves_a_final_state(final: S) -> None:
    for target in S:
        with pytest.raises(LedgerError):
            check_transition("snp-x", final, target, reason="because")


@pytest.mark.parametrize(
    ("current", "target"),
    [
        (S.INTENT, S.FAILED),
        (S.UNKNOWN, S.FAILED),
        (S.BOUGHT, S.REFUNDED),
        (S.UNKNOWN, S.RELEASED),
        (S.RELEASED, S.FAILED),
    ],
)
def test_failed_and_refunded_need_a_reason(current: S, target: S) -> None:
    with pytest.raises(LedgerError, match="needs a reason"):
        check_transition("snp-x", current, target, reason=None)
    with pytest.raises(LedgerError, match="needs a reason"):
        check_transition("snp-x", current, target, reason="")


@pytest.mark.parametrize(
    ("state", "counts"),
    [
        (S.INTENT, True),
        (S.UNKNOWN, True),
        (S.BOUGHT, True),
        (S.RESERVED, True),
        (S.COMPLETED, True),
        (S.FAILED, False),
        (S.RELEASED, False),
        (S.REFUNDED, False),
    ],
)
def test_budget_counts_in_flight_and_spent_states_only(state: S, counts: bool) -> None:
    assert (state in BUDGET_STATES) is counts
