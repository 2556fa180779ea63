"""The replay market's purchases: how they fill (:class:`FillModel`), what each became
(:class:`ReplayTrade`, its trade's status over time) and the answer to one
(:class:`BuyAnswer`). Kept apart from ``_market.py`` (which re-exports them) to keep that
file's size in bounds."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SETTLE_SECONDS", "BuyAnswer", "FillModel", "ReplayTrade"]

SETTLE_SECONDS = 60.0
"""How long after an instant purchase its trade reports completed."""


@dataclass(frozen=True)
class FillModel:
    """How purchases fill. ``latency`` is in seconds."""

    seed: int = 0
    latency: float = 0.25
    race_factor: float = 1.5
    race_max: float = 0.9


@dataclass
class ReplayTrade:
    """A purchase the replay market accepted."""

    id: int
    project_id: str | None
    item_id: str
    name: str
    price: int
    created: float
    unlock_at: int | None
    send_until: int | None
    reference: int | None
    later_price: int | None = None
    """The cheapest listing of the name ``value_after`` seconds after the purchase."""
    later_past_end: bool = False
    """The recording ended first: ``later_price`` is from its end."""

    def status(self, now: float) -> tuple[int, str | None, str | None]:
        """``(numeric status, escrow_status, refund reason)`` at ``now``."""
        if self.unlock_at is None:
            return (5 if now >= self.created + SETTLE_SECONDS else 2), None, None
        if self.send_until is not None and self.send_until < self.unlock_at:
            if now >= self.send_until:
                return 6, "failed", "not delivered by send_until"
            return 0, "awaiting_unlock", None
        if now < self.unlock_at:
            return 0, "awaiting_unlock", None
        return 5, "completed", None


@dataclass(frozen=True)
class BuyAnswer:
    """The answer to one purchase: a trade, or a refusal ``msg`` (with ``new_price``)."""

    trade: ReplayTrade | None = None
    msg: str | None = None
    new_price: int | None = None
    why: str = ""
    """``gone``, ``lost race``, ``price changed``, ``trade-locked`` or ``balance``."""
