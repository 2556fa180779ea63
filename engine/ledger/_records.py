"""What the ledger stores and answers: purchases, events, caps, totals, project ids.

Plain frozen dataclasses: no I/O here, so everything is testable without a database.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from .._errors import LedgerError
from .._money import Money
from ._states import BUDGET_STATES, IN_FLIGHT_STATES, SPENT_STATES, PurchaseState

__all__ = [
    "DETAIL_FIELDS",
    "PROJECT_ID_MAX",
    "Cap",
    "Committed",
    "ControlEvent",
    "Event",
    "Intent",
    "Purchase",
    "RuleTotals",
    "Totals",
    "encode_details",
    "new_project_id",
    "summarize",
    "utc_day_start",
]

PROJECT_ID_MAX = 50
"""The service's limit on a ``project_id`` (interface.md section 8)."""

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def new_project_id(now: float, entropy: bytes | None = None) -> str:
    """A fresh ``project_id``: ``snp-`` + 10 base32 digits of milliseconds + 16 of
    randomness (30 characters, ULID-like).

    Ids sort by the time they were made, so a ledger listing or the service's history
    reads in order; 80 random bits make a collision between two ids of the same
    millisecond negligible. ``now`` comes from the injected clock; ``entropy`` (10 bytes)
    can be given for reproducible backtests.
    """
    if entropy is None:
        entropy = os.urandom(10)
    if len(entropy) != 10:
        raise ValueError(f"entropy must be 10 bytes, got {len(entropy)}")
    millis = round(now * 1000)  # round: 0.003 s must not become 2 ms
    if not 0 <= millis < 32**10:
        raise ValueError(f"time {now!r} is out of range for a project id")
    value = (millis << 80) | int.from_bytes(entropy, "big")
    digits = []
    for _ in range(26):
        value, digit = divmod(value, 32)
        digits.append(_CROCKFORD[digit])
    return "snp-" + "".join(reversed(digits))


def utc_day_start(now: float) -> float:
    """The start (epoch seconds) of the UTC day that contains ``now``: the ``since`` of a
    daily cap."""
    return float(int(now // 86_400) * 86_400)


# Only these keys may appear in an event's details, with scalar values: whatever a caller
# passes, nothing else (a request URL, a header, the API key) can reach the file.
DETAIL_FIELDS: frozenset[str] = frozenset(
    {
        "attempt",
        "charged_from",
        "charged_price",
        "endpoint",
        "http_status",
        "item_id",
        "late",
        "marketplace_id",
        "msg",
        "new_price",
        "price",
        "purchase_status",
        "reason",
        "send_until",
        "source",
        "trade_done",
        "trade_id",
        "trade_status",
        "unlock_at",
    }
)
_DETAIL_TEXT_MAX = 500


def encode_details(details: Mapping[str, Any] | None) -> str | None:
    """``details`` as compact JSON, after checking it against :data:`DETAIL_FIELDS`.

    Raises :class:`LedgerError` (and so nothing is written) for an unknown key, a value
    that is not a scalar, an over-long text, or a text that looks like it carries the key.
    """
    if not details:
        return None
    clean: dict[str, Any] = {}
    for key, value in sorted(details.items()):
        if key not in DETAIL_FIELDS:
            raise LedgerError(f"event detail {key!r} is not one the ledger stores")
        if value is not None and not isinstance(value, str | int | float | bool):
            raise LedgerError(f"event detail {key!r} must be a scalar, got {type(value).__name__}")
        if isinstance(value, str):
            if len(value) > _DETAIL_TEXT_MAX:
                value = value[:_DETAIL_TEXT_MAX]
            if "api=" in value.lower():
                raise LedgerError(f"event detail {key!r} looks like a URL with an API key")
        clean[key] = value
    return json.dumps(clean, separators=(",", ":"), allow_nan=False)


@dataclass(frozen=True, slots=True)
class Intent:
    """A purchase about to be sent. ``price`` is the ceiling sent with the request."""

    project_id: str
    item_id: str
    name: str
    price: Money
    rule: str
    game: str | None = None
    batch_id: str | None = None
    allow_trade_locked: bool = False
    unlock_at: int | None = None
    send_until: int | None = None

    def __post_init__(self) -> None:
        if not 0 < len(self.project_id) <= PROJECT_ID_MAX:
            raise LedgerError(
                f"project_id {self.project_id!r} must be 1 to {PROJECT_ID_MAX} characters"
            )
        if not self.item_id:
            raise LedgerError(f"purchase {self.project_id}: item_id is empty")
        if isinstance(self.price, bool) or not isinstance(self.price, int) or self.price < 0:
            raise LedgerError(
                f"purchase {self.project_id}: price must be a non-negative int (USD x 1000),"
                f" got {self.price!r}"
            )


@dataclass(frozen=True, slots=True)
class Purchase:
    """One purchase as the ledger knows it now."""

    project_id: str
    item_id: str
    name: str
    game: str | None
    price: Money
    """The ceiling sent with the request."""
    charged_price: Money | None
    """What the service charged, once known."""
    rule: str
    state: PurchaseState
    batch_id: str | None
    allow_trade_locked: bool
    created_at: float
    updated_at: float
    unlock_at: int | None
    send_until: int | None
    marketplace_id: int | None
    """The service's id of the purchase (the ``id`` of the buy answer)."""
    reason: str | None

    @property
    def amount(self) -> Money:
        """What counts against a budget: the charge once known, the ceiling until then."""
        return self.charged_price if self.charged_price is not None else self.price

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict; money stays int USD x 1000."""
        return {
            "project_id": self.project_id,
            "item_id": self.item_id,
            "name": self.name,
            "game": self.game,
            "price": self.price,
            "charged_price": self.charged_price,
            "amount": self.amount,
            "rule": self.rule,
            "state": self.state.value,
            "batch_id": self.batch_id,
            "allow_trade_locked": self.allow_trade_locked,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "unlock_at": self.unlock_at,
            "send_until": self.send_until,
            "marketplace_id": self.marketplace_id,
            "reason": self.reason,
        }


@dataclass(frozen=True, slots=True)
class Event:
    """One line of a purchase's append-only history."""

    id: int
    project_id: str
    at: float
    from_state: PurchaseState | None
    to_state: PurchaseState
    details: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ControlEvent:
    """One control action an operator took (through the API), append-only."""

    id: int
    at: float
    action: str
    actor: str
    """The name of the token that did it, never the token."""
    outcome: str
    details: Mapping[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "at": self.at,
            "action": self.action,
            "actor": self.actor,
            "outcome": self.outcome,
            "details": dict(self.details),
        }


@dataclass(frozen=True, slots=True)
class Cap:
    """A limit an intent must not break, counting every purchase still in a budget state
    (in flight included) at its :attr:`Purchase.amount`.

    ``kind="spend"`` limits money, ``kind="count"`` the number of purchases. ``rule``
    narrows it to one rule's purchases (``None``: all). ``since`` counts only purchases
    created at or after that instant (a daily cap: ``since=utc_day_start(now)``).
    """

    limit: int
    kind: Literal["spend", "count"] = "spend"
    rule: str | None = None
    since: float | None = None
    name: str = ""

    def describe(self) -> str:
        if self.name:
            return self.name
        scope = f"rule {self.rule!r}" if self.rule is not None else "all rules"
        window = " since the day start" if self.since is not None else ""
        return f"{self.kind} cap of {scope}{window}"


@dataclass(frozen=True, slots=True)
class Committed:
    """What a budget counts: the amount (spent and in flight) and the number of purchases."""

    amount: Money = 0
    count: int = 0


@dataclass(frozen=True, slots=True)
class RuleTotals:
    """A rule's share of :class:`Totals`."""

    spent: Money = 0
    in_flight: Money = 0
    refunded: Money = 0
    count: int = 0
    """Purchases in a budget state (what a count cap counts)."""


@dataclass(frozen=True, slots=True)
class Totals:
    """Money by state. ``spent`` is money that certainly left (BOUGHT, RESERVED,
    COMPLETED); ``in_flight`` may have left (INTENT, UNKNOWN, at their ceiling);
    ``committed`` is what budgets count: both."""

    spent: Money = 0
    in_flight: Money = 0
    refunded: Money = 0
    by_state: Mapping[str, int] = field(default_factory=dict)
    """Number of purchases in each state (every state present, zeros included)."""
    by_rule: Mapping[str, RuleTotals] = field(default_factory=dict)

    @property
    def committed(self) -> Money:
        return self.spent + self.in_flight

    def to_json(self) -> dict[str, Any]:
        return {
            "spent": self.spent,
            "in_flight": self.in_flight,
            "committed": self.committed,
            "refunded": self.refunded,
            "by_state": dict(self.by_state),
            "by_rule": {
                rule: {
                    "spent": t.spent,
                    "in_flight": t.in_flight,
                    "refunded": t.refunded,
                    "count": t.count,
                }
                for rule, t in self.by_rule.items()
            },
        }


def summarize(purchases: Iterable[Purchase]) -> Totals:
    """The :class:`Totals` of ``purchases``."""
    spent = in_flight = refunded = 0
    by_state = {state.value: 0 for state in PurchaseState}
    rules: dict[str, dict[str, int]] = {}
    for purchase in purchases:
        amount = purchase.amount
        by_state[purchase.state.value] += 1
        acc = rules.setdefault(
            purchase.rule, {"spent": 0, "in_flight": 0, "refunded": 0, "count": 0}
        )
        if purchase.state in SPENT_STATES:
            spent += amount
            acc["spent"] += amount
        elif purchase.state in IN_FLIGHT_STATES:
            in_flight += amount
            acc["in_flight"] += amount
        elif purchase.state is PurchaseState.REFUNDED:
            refunded += amount
            acc["refunded"] += amount
        if purchase.state in BUDGET_STATES:
            acc["count"] += 1
    return Totals(
        spent=spent,
        in_flight=in_flight,
        refunded=refunded,
        by_state=by_state,
        by_rule={rule: RuleTotals(**acc) for rule, acc in sorted(rules.items())},
    )
