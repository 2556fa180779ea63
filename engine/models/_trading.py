"""Purchases, buy orders, trades and history (interface.md 2.5 to 2.8, wire-notes.md)."""

from __future__ import annotations

from collections.abc import Iterable
from decimal import ROUND_CEILING
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, model_validator
from pydantic_core import PydanticCustomError

from ._per_item import INDEX, PerItem
from ._types import (
    Charged,
    Epoch,
    ImageURL,
    Lenient,
    OptionalText,
    Price,
    WireModel,
    WireMoney,
)

__all__ = [
    "BulkBuyItemResult",
    "BulkBuyResponse",
    "BuyOrder",
    "BuyOrderResult",
    "BuyOrdersResponse",
    "BuyResult",
    "ForceCheckResult",
    "HistoryPage",
    "HistoryTrade",
    "ProjectTrade",
    "ProjectTradesResponse",
    "RemoveAllResult",
    "RemoveBuyOrderResult",
    "Trade",
    "TradeItem",
    "TradeParty",
    "TradeStatus",
    "TradesResponse",
]


class TradeStatus:
    """Numeric trade-item status (interface.md 3.1). 3 is not defined."""

    WAITING = 0
    PROCESSING = 1
    AWAITING_SELLER = 2
    SENT = 4
    COMPLETED = 5
    REFUNDED = 6
    FINAL = frozenset({COMPLETED, REFUNDED})


_ROUNDED_UP = WireMoney(ROUND_CEILING)


def _asked_price(value: Any) -> int | None:
    """The price a refusal says is now asked: a number or a numeric string, possibly
    fractional (``"12.5"``), rounded up to whole units as any price snipe may pay;
    anything else is "not said" (it is information about a refusal, never money snipe
    holds, so an odd one must not turn a clear refusal into an unknown outcome)."""
    if value is None or isinstance(value, bool) or value == "":
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    try:
        return _ROUNDED_UP.read(value)
    except PydanticCustomError:
        return None


AskedPrice = Annotated[int | None, BeforeValidator(_asked_price)]
"""``new_price`` of a "Price changed" refusal (wire-notes.md: sometimes a fractional
string)."""


class BuyResult(WireModel):
    """``GET /v1/buy-one-p2p`` and ``/v1/buy-one-p2p-name`` (2.7). ``price`` is what was
    charged; a success may come without it (the documented example), then the charge is
    taken from the request's price or the trade. A refusal's reason is ``msg``, or
    ``error_msg`` when ``msg`` is empty. A trade-locked purchase has
    ``purchase_status == "reserved"`` and its times."""

    success: bool = False
    msg: str | None = None
    error_msg: str | None = None
    id: int | None = None
    price: int | None = None
    new_price: AskedPrice = None
    item_id: str | None = None
    purchase_status: OptionalText = None
    unlock_at: Epoch = None
    send_until: Epoch = None


class BulkBuyItemResult(WireModel):
    """One item of a bulk purchase (``POST /v1/buy``), per this project's working shape."""

    item_id: str
    success: bool = False
    id: int | None = None
    price: int | None = None
    new_price: AskedPrice = None
    project_id: str | None = None
    msg: str | None = None
    error_msg: str | None = None
    purchase_status: OptionalText = None
    unlock_at: Epoch = None
    send_until: Epoch = None


class BulkBuyResponse(WireModel):
    success: bool = False
    msg: str | None = None
    error_msg: str | None = None
    items: tuple[BulkBuyItemResult, ...] = ()


class ProjectTrade(WireModel):
    """A trade found by ``GET /v1/check-many-project-id``. ``id`` is the marketplace's
    numeric trade id; a trade id that is not a number (seen on the wire) is read as
    ``None`` rather than losing the trade's status, which is what settles money."""

    id: Annotated[int | None, Lenient()] = None
    project_id: str
    price: Charged | None = None
    name: str | None = None
    status: int
    done: bool | None = None
    trade_id: OptionalText = None
    reason: OptionalText = None
    for_platformid64: OptionalText = None
    send_until: Epoch = None
    last_updated: Epoch = None
    counter: int | None = None
    escrow_status: OptionalText = None
    is_released: bool | None = None
    release_date: Epoch = None
    unlock_at: Epoch = None

    @property
    def final(self) -> bool:
        return self.status in TradeStatus.FINAL


class ProjectTradesResponse(PerItem):
    """``GET /v1/check-many-project-id``. A trade that could not be read is in
    :attr:`set_aside` (with its ``project_id`` when that was readable): it settles
    nothing, and the ids it may belong to are *not learned* by this answer, never
    "absent" (:meth:`unsettled`)."""

    __item_paths__ = (("trades", INDEX),)

    success: bool = False
    msg: str | None = None
    trades: tuple[ProjectTrade, ...] = ()

    def unsettled(self, asked: Iterable[str]) -> frozenset[str]:
        """The ``asked`` project ids this answer says nothing certain about: those of the
        set-aside trades, and, when a set-aside trade's project id could not be read, every
        asked id missing from :attr:`trades` (any of them may be that trade's)."""
        if not self.set_aside:
            return frozenset()
        asked = frozenset(asked)
        named = {s.project_id for s in self.set_aside if s.project_id is not None}
        if any(s.project_id is None for s in self.set_aside):
            named |= asked - {t.project_id for t in self.trades}
        return frozenset(asked & named)


class BuyOrderResult(WireModel):
    """``POST /v1/create-buy-order`` (2.8)."""

    success: bool = False
    msg: str | None = None
    filled: int = 0
    id: int | None = None


class RemoveBuyOrderResult(WireModel):
    success: bool = False
    msg: str | None = None
    removed: int = 0


class BuyOrder(WireModel):
    """An active buy order from ``GET /v1/buy-orders``."""

    id: int
    name: str
    price: Price
    amount: int = 0
    filled: int = 0
    game: OptionalText = None


class BuyOrdersResponse(PerItem):
    """``GET /v1/buy-orders``; an order that could not be read is in :attr:`set_aside`."""

    __item_paths__ = (("offers", INDEX),)

    success: bool = False
    msg: str | None = None
    offers: tuple[BuyOrder, ...] = ()


class RemoveAllResult(WireModel):
    success: bool = False
    msg: str | None = None
    count: int = 0


class TradeParty(WireModel):
    id: str | None = None
    avatar: ImageURL = None


class TradeItem(WireModel):
    """An item of a trade (2.6). ``id`` is kept as text: trade ids are not always numbers."""

    id: str | None = None
    item_id: str | None = None
    give_amount: Charged | None = None
    merchant: OptionalText = None
    image: ImageURL = None
    price: Charged | None = None
    game: OptionalText = None
    name: str | None = None
    status: int | None = None


class Trade(WireModel):
    """A trade to send (2.5, deprecated polling). ``stage`` 11 means reserved, waiting for
    the trade lock to end. ``costum_id`` is spelled so on the wire. ``id`` is kept as
    text: public clients have seen non-numeric trade ids."""

    id: str
    costum_id: OptionalText = None
    trade_id: OptionalText = None
    tradelink: OptionalText = None
    trade_message: OptionalText = None
    done: bool = False
    stage: int | None = None
    creator: OptionalText = None
    send_until: Epoch = None
    last_updated: Epoch = None
    for_platformid64: OptionalText = None
    user: TradeParty | None = None
    seller: TradeParty | None = None
    items: tuple[TradeItem, ...] = ()
    unlock_at: Epoch = None
    escrow_status: OptionalText = None
    is_released: bool | None = None
    release_date: Epoch = None


class TradesResponse(PerItem):
    """``GET /v1/ready-to-transfer-p2p``: the documented example is one bare trade object,
    public clients declare ``{"success": true, "trades": [...]}``; both (and a bare array)
    read as this. A trade that could not be read is in :attr:`set_aside`."""

    __item_paths__ = (("trades", INDEX),)

    success: bool = False
    msg: str | None = None
    trades: tuple[Trade, ...] = ()

    @model_validator(mode="before")
    @classmethod
    def _bare_forms(cls, data: Any) -> Any:
        return cls.wire_shape(data)

    @classmethod
    def wire_shape(cls, data: Any) -> Any:
        if isinstance(data, list):
            return {"success": True, "trades": data}
        bare = isinstance(data, dict) and "success" not in data and "trades" not in data
        if bare and ("id" in data or "items" in data):
            return {"success": True, "trades": [data]}
        return data


class HistoryTrade(WireModel):
    """A row of ``POST /v2/my-history``. On buy rows ``price`` is the amount paid;
    ``date`` is when the trade was completed (``created`` when it was made)."""

    id: int
    item_id: str | None = None
    name: str | None = None
    price: Charged | None = None
    give_amount: Charged | None = None
    status: int | None = None
    created: Epoch = None
    date: Epoch = None
    action: OptionalText = None
    project_id: OptionalText = None


class HistoryData(WireModel):
    trades: tuple[HistoryTrade, ...] = ()
    transactions: tuple[dict[str, object], ...] = ()


class HistoryPage(PerItem):
    """``POST /v2/my-history``; a row that could not be read is in :attr:`set_aside` (with
    its ``project_id`` when readable): it is not known, which is not the same as absent."""

    __item_paths__ = (("data", "trades", INDEX),)

    success: bool = False
    msg: str | None = None
    data: HistoryData = Field(default_factory=HistoryData)


class ForceCheckResult(WireModel):
    success: bool = False
    msg: str | None = None
