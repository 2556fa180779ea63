"""The engine's observable state: running or HALTED, and the counters a status line shows."""

from __future__ import annotations

import enum
import logging
from collections import Counter, deque
from dataclasses import dataclass, field

__all__ = ["EngineMode", "EngineStatus", "Outcome", "PurchaseRecord"]

log = logging.getLogger("snipe.engine")


class EngineMode(enum.Enum):
    STARTING = "starting"
    RUNNING = "running"
    HALTED = "halted"
    """Buying has stopped for a reason a person must look at; reconciling goes on."""
    STOPPED = "stopped"


class Outcome(enum.Enum):
    """What happened to one accepted decision."""

    BOUGHT = "bought"
    RESERVED = "reserved"
    REFUSED = "refused"
    UNKNOWN = "unknown"
    NOT_SENT = "not_sent"
    VETOED = "vetoed"
    CAPPED = "capped"
    DUPLICATE = "duplicate"
    DRY_RUN = "dry_run"


@dataclass(frozen=True)
class PurchaseRecord:
    """One accepted decision and what came of it, for summaries."""

    at: float
    name: str
    item_id: str
    rule: str
    price: int
    outcome: Outcome
    detail: str | None
    reasons: tuple[str, ...]
    reference: int | None = None
    """The listing's reference (platform) price when it had one, USD x 1000."""
    float_value: float | None = None


@dataclass
class EngineStatus:
    """Counters and the HALTED switch. Only the engine's own tasks write it."""

    mode: EngineMode = EngineMode.STARTING
    halt_reason: str | None = None
    started_at: float | None = None
    searches: int = 0
    rate_limited: int = 0
    snapshots: int = 0
    snapshot_bytes: Counter[str] = field(default_factory=Counter)
    """Bytes of prices snapshot downloaded (as sent, gzip), by game (``all``: unfiltered)."""
    listings_seen: int = 0
    candidates: int = 0
    consecutive_failures: int = 0
    outcomes: Counter[Outcome] = field(default_factory=Counter)
    skip_reasons: Counter[str] = field(default_factory=Counter)
    purchases: list[PurchaseRecord] = field(default_factory=list)
    errors: deque[str] = field(default_factory=lambda: deque(maxlen=20))

    @property
    def halted(self) -> bool:
        return self.mode is EngineMode.HALTED

    @property
    def buying_allowed(self) -> bool:
        return self.mode is EngineMode.RUNNING

    def halt(self, reason: str) -> None:
        """Stop buying (reconciling goes on). The first reason is kept."""
        if self.mode is not EngineMode.HALTED:
            self.mode = EngineMode.HALTED
            self.halt_reason = reason
            log.error("HALTED: %s", reason)

    def error(self, text: str) -> None:
        self.errors.append(text)
        log.warning("%s", text)
