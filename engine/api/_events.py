"""What the API streams and remembers, fed by the engine's hooks.

:class:`EventBus` is a plugin on the engine's plugin host. Its hooks only append to
bounded memory (never I/O, never a wait), so the buying path pays one dict or deque
operation per call. It keeps:

- the latest :data:`EVENTS` events (purchases, refunds, HALT, control actions), numbered,
  for the server-sent event stream (a client resumes with ``Last-Event-ID``);
- for the latest :data:`NAMES` item names, the decisions of the last batch that looked
  at each, so ``/api/why/NAME`` can say why it was not bought (a decision works its
  reasons out when read, so keeping it costs nothing on the hot path).
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import anyio

from .._clock import Clock
from ..hookspecs import hookimpl
from ..ledger import Purchase
from ..rules import Decision, EvalContext

__all__ = ["EVENTS", "NAMES", "ApiEvent", "EventBus"]

EVENTS = 500
NAMES = 2_000
_PER_NAME = 10


@dataclass(frozen=True)
class ApiEvent:
    id: int
    at: float
    kind: str
    data: dict[str, Any]

    def sse(self) -> str:
        import json

        body = json.dumps({"at": self.at, **self.data}, separators=(",", ":"))
        return f"id: {self.id}\nevent: {self.kind}\ndata: {body}\n\n"


class EventBus:
    """Bounded recent events and per-name decisions; see the module docstring."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self.events: deque[ApiEvent] = deque(maxlen=EVENTS)
        self._next_id = 1
        self._changed = anyio.Event()
        self.closed = False
        self.decisions: OrderedDict[str, list[Decision]] = OrderedDict()

    def publish(self, kind: str, **data: Any) -> ApiEvent:
        event = ApiEvent(self._next_id, self._clock.now(), kind, data)
        self._next_id += 1
        self.events.append(event)
        self._changed.set()
        self._changed = anyio.Event()
        return event

    def after(self, last_id: int) -> list[ApiEvent]:
        """Events newer than ``last_id`` still held, oldest first."""
        return [e for e in self.events if e.id > last_id]

    async def wait(self, last_id: int) -> list[ApiEvent]:
        """Events newer than ``last_id``, waiting for one if there is none; an empty list
        once :meth:`close` was called and none is left."""
        while True:
            new = self.after(last_id)
            if new or self.closed:
                return new
            await self._changed.wait()

    def close(self) -> None:
        """The server is stopping: wake every waiter, so that event streams end (a stream
        left open would hold the server's shutdown for its whole grace)."""
        self.closed = True
        self._changed.set()

    # -- hooks -------------------------------------------------------------------------

    @hookimpl
    def snipe_decisions(self, decisions: Sequence[Decision], context: EvalContext) -> None:
        by_name: dict[str, list[Decision]] = {}
        for decision in decisions:
            kept = by_name.setdefault(decision.listing.name, [])
            if len(kept) < _PER_NAME:
                kept.append(decision)
        for name, kept in by_name.items():
            self.decisions.pop(name, None)
            self.decisions[name] = kept
        while len(self.decisions) > NAMES:
            self.decisions.popitem(last=False)

    @hookimpl
    def snipe_purchase(self, decision: Decision, outcome: str, detail: str | None) -> None:
        listing = decision.listing
        self.publish(
            "purchase",
            name=listing.name,
            item_id=str(listing.item_id),
            rule=decision.rule,
            price=decision.price,
            outcome=outcome,
            detail=detail,
        )

    @hookimpl
    def snipe_refund(self, purchase: Purchase, reason: str | None) -> None:
        self.publish(
            "refund",
            project_id=purchase.project_id,
            name=purchase.name,
            rule=purchase.rule,
            amount=purchase.amount,
            reason=reason,
        )

    @hookimpl
    def snipe_halted(self, reason: str) -> None:
        self.publish("halted", reason=reason)
