"""The life of a purchase, as a state machine checked before anything is written.

::

    INTENT ──► UNKNOWN ──► BOUGHT ──► COMPLETED
      │           │          │  ▲
      │           │          ▼  │
      │           ├──────► RESERVED ──► REFUNDED
      │           ├──────► FAILED
      │           └──────► RELEASED ──► BOUGHT / RESERVED / COMPLETED / REFUNDED (late)
      └─► (any state but INTENT)                └──► FAILED (not seen for the watch day)

``INTENT`` is written before the request is sent, so after a crash it may or may not have
been sent. ``UNKNOWN`` means it was sent and the answer was lost. Both are *unresolved*:
only the service's word (check-many-project-id, my-history) may move them on, never a
second purchase and never the local clock alone.

``RELEASED`` is "not bought" as far as the service can tell (absent from
check-many-project-id twice, minutes apart, and no matching row in my-history): its budget
and its item are released, and it is watched for a day. If it turns up it
moves on like any found purchase and takes its budget back; the late moves out of
``RELEASED`` are the only moves out of a "not bought" verdict. ``FAILED`` (a refusal the
service stated, a request that never left, or a release never seen in its watch day),
``COMPLETED`` and ``REFUNDED`` are final; nothing leaves them.
"""

from __future__ import annotations

import enum

from .._errors import LedgerError

__all__ = [
    "BUDGET_STATES",
    "FINAL_STATES",
    "IN_FLIGHT_STATES",
    "LATE_STATES",
    "REASON_REQUIRED",
    "SPENT_STATES",
    "TRANSITIONS",
    "PurchaseState",
    "check_transition",
]


class PurchaseState(enum.StrEnum):
    """Where a purchase stands. The value is what the ledger stores."""

    INTENT = "INTENT"
    """Written, about to be sent. After a crash it may or may not have been sent."""
    UNKNOWN = "UNKNOWN"
    """Sent; the answer was lost (timeout, broken connection, 5xx, unreadable body)."""
    FAILED = "FAILED"
    """Certainly not bought: refused by the service, never sent, or released and not seen
    for the whole watch period. Final; releases its budget and its item."""
    RELEASED = "RELEASED"
    """Not bought as far as the service can tell: absent from check-many-project-id at
    least twice, minutes apart, and no matching row in my-history. Releases its budget and
    its item, and is watched (batched) for a day: if the service shows it
    after all, it moves to BOUGHT (or further) and its budget counts again."""
    BOUGHT = "BOUGHT"
    """Accepted and charged; the trade is in progress."""
    RESERVED = "RESERVED"
    """Accepted and charged; a trade-locked item waiting for its lock to end."""
    COMPLETED = "COMPLETED"
    """The trade completed (trade status 5). Final."""
    REFUNDED = "REFUNDED"
    """The service says the trade failed and the money came back (status 6, escrow
    ``failed``, or a refunded row in my-history); never decided from the local clock.
    Final; releases its budget; carries the reason."""


_S = PurchaseState

FINAL_STATES: frozenset[PurchaseState] = frozenset({_S.FAILED, _S.COMPLETED, _S.REFUNDED})
"""States nothing leaves."""

IN_FLIGHT_STATES: frozenset[PurchaseState] = frozenset({_S.INTENT, _S.UNKNOWN})
"""Unresolved: the money may or may not have left. Resolved by ``project_id`` only."""

SPENT_STATES: frozenset[PurchaseState] = frozenset({_S.BOUGHT, _S.RESERVED, _S.COMPLETED})
"""The money certainly left and has not come back."""

LATE_STATES: frozenset[PurchaseState] = frozenset({_S.RELEASED})
"""Released as not bought, and still watched: the service may show them after all."""

BUDGET_STATES: frozenset[PurchaseState] = IN_FLIGHT_STATES | SPENT_STATES
"""States whose amount counts against a budget: a cap must hold even if every in-flight
purchase turns out to have happened."""

TRANSITIONS: dict[PurchaseState, frozenset[PurchaseState]] = {
    # A restart may resolve an intent straight to whatever the service says happened.
    _S.INTENT: frozenset(set(_S) - {_S.INTENT}),
    _S.UNKNOWN: frozenset(
        {_S.BOUGHT, _S.RESERVED, _S.COMPLETED, _S.REFUNDED, _S.FAILED, _S.RELEASED}
    ),
    _S.BOUGHT: frozenset({_S.COMPLETED, _S.REFUNDED}),
    # The lock ended and delivery started, or the trade ended while reserved.
    _S.RESERVED: frozenset({_S.BOUGHT, _S.COMPLETED, _S.REFUNDED}),
    # The late moves: a released purchase the service shows after all, or never did.
    _S.RELEASED: frozenset({_S.BOUGHT, _S.RESERVED, _S.COMPLETED, _S.REFUNDED, _S.FAILED}),
    _S.FAILED: frozenset(),
    _S.COMPLETED: frozenset(),
    _S.REFUNDED: frozenset(),
}
"""Every allowed move; anything else is refused before it is written."""

REASON_REQUIRED: frozenset[PurchaseState] = frozenset({_S.FAILED, _S.REFUNDED, _S.RELEASED})
"""A move into these states must say why (a refusal text, "absent after grace", ...)."""


def check_transition(
    project_id: str, current: PurchaseState, target: PurchaseState, reason: str | None
) -> None:
    """Raise :class:`LedgerError` unless ``current -> target`` is allowed (with a reason
    where one is required)."""
    if target not in TRANSITIONS[current]:
        raise LedgerError(
            f"purchase {project_id}: illegal transition {current.value} -> {target.value}"
        )
    if target in REASON_REQUIRED and not reason:
        raise LedgerError(
            f"purchase {project_id}: a move to {target.value} needs a reason, none was given"
        )
