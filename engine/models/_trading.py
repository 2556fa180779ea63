"""Purchases, buy orders, trades and history (interface.md 2.5 to 2.8, wire-notes.md)."""

from __future__ import annotations

import math
from decimal import Decimal, InvalidOperation
from typing import Annotated, Any

from pydantic import BeforeValidator, Field

from ._types import Epoch, ImageURL, OptionalText, WireModel

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


def _asked_price(value: Any) -> int | None:
    """The price a refusal says is now asked: a number or a numeric string, possibly
    fractional (``"12.5"``), rounded up to whole units; anything else is "not said" (it is
    information about a refusal, never money snipe holds)."""
    if value is None or isinstance(value, bool) or value == "":
        return None
    try:
        number = Decimal(str(value).strip())
    except InvalidOperation:
        return None
    if not number.is_finite() or number < 0:
        return None
    return math.ceil(number)


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
    """A trade found by ``GET /v1/check-many-project-id``."""

    id: int | None = None
    project_id: str
    price: int | None = None
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


class ProjectTradesResponse(WireModel):
    success: bool = False
    msg: str | None = None
    trades: tuple[ProjectTrade, ...] = ()


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
    price: int
    amount: int = 0
    filled: int = 0
    game: OptionalText = None


class BuyOrdersResponse(WireModel):
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
    """An item of a trade (2.6)."""

    id: int | None = None
    item_id: str | None = None
    give_amount: int | None = None
    merchant: OptionalText = None
    image: ImageURL = None
    price: int | None = None
    game: OptionalText = None
    name: str | None = None
    status: int | None = None


class Trade(WireModel):
    """A trade to send (2.5, deprecated polling). ``stage`` 11 means reserved, waiting for
    the trade lock to end. ``costum_id`` is spelled so on the wire."""

    id: int
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


class TradesResponse(WireModel):
    success: bool = False
    msg: str | None = None
    trades: tuple[Trade, ...] = ()


class HistoryTrade(WireModel):
    """A row of ``POST /v2/my-history``. On buy rows ``price`` is the amount paid."""

    id: int
    item_id: str | None = None
    name: str | None = None
    price: int | None = None
    give_amount: int | None = None
    status: int | None = None
    created: Epoch = None
    action: OptionalText = None
    project_id: OptionalText = None


class HistoryData(WireModel):
    trades: tuple[HistoryTrade, ...] = ()
    transactions: tuple[dict[str, object], ...] = ()


class HistoryPage(WireModel):
    success: bool = False
    msg: str | None = None
    data: HistoryData = Field(default_factory=HistoryData)


class ForceCheckResult(WireModel):
    success: bool = False
    msg: str | None = None
