"""Account, merchant and payment resources (interface.md 2.3, 2.9 to 2.12, 2.14)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Annotated, Any

from pydantic import AliasChoices, Field

from ._types import Epoch, ImageURL, Lenient, OptionalText, WireModel

__all__ = [
    "DepositRecord",
    "DepositsPage",
    "InventoryItem",
    "InventoryPrice",
    "InventoryResponse",
    "OwnListing",
    "OwnListingsResponse",
    "PlatformTokenResult",
    "SimpleResult",
    "StatusResult",
    "TradeLinkCheck",
    "TronRentResult",
    "User",
    "UserCreated",
    "UserResponse",
    "WebhookAttempt",
    "WebhookPage",
    "WebhookRecord",
    "WebhookResponse",
]


class SimpleResult(WireModel):
    """``success`` and ``msg`` only (set-my-platformapi, update-account)."""

    success: bool = False
    msg: str | None = None


class StatusResult(WireModel):
    """Merchant answers use ``status`` instead of ``success``."""

    status: str | None = None
    msg: str | None = None


class User(WireModel):
    """``GET /v1/user``'s ``user``: ``wallet`` is the balance in USD x 1000;
    ``platform_id`` is the account's 64-bit platform id (the wire's ``id64``)."""

    wallet: int = 0
    can_p2p: bool | None = None
    tradelink: OptionalText = None
    id: str | None = None
    name: str | None = None
    sell_fees: float | None = None
    platform_id: OptionalText = Field(
        default=None, validation_alias=AliasChoices("id64", "platform_id", "platformid64")
    )
    sell_status: Annotated[str | None, Lenient()] = None
    login: Annotated[str | None, Lenient()] = None


class UserResponse(WireModel):
    success: bool = False
    msg: str | None = None
    user: User | None = None


class UserCreatedData(WireModel):
    api: str
    isNew: bool | None = None

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        # The created key is a secret: masked here, it stays out of repr() and str() alike
        # (a __repr__ override alone left str() showing it).
        for name, value in super().__repr_args__():
            yield name, "***" if name == "api" else value


class UserCreated(WireModel):
    """``POST /v1/user`` (2.14). ``data.api`` is the account's key: never log it."""

    success: bool = False
    msg: str | None = None
    data: UserCreatedData | None = None
    exp: Epoch = None


class PlatformTokenResult(WireModel):
    success: bool = False
    msg: str | None = None
    exp: Epoch = None


_TRADE_BLOCKERS = re.compile(
    r"privat|\bban|cannot|can't|can not|unable|not (?:allowed|available|possible|valid)"
    r"|invalid|restrict|disabled|locked|limited",
    re.IGNORECASE,
)


class TradeLinkCheck(WireModel):
    """``POST /v1/check-tradelink`` (2.12). The platform ids arrive as numbers or strings.

    ``success: true`` does not always mean trades will go through: the service has
    answered ``success: true, info: "Inventory is private"``. :attr:`problem` says what
    stands in the way, if anything.
    """

    success: bool = False
    link: OptionalText = None
    info: OptionalText = None
    msg: OptionalText = None
    token: OptionalText = None
    platformid32: Annotated[int | None, Lenient()] = None
    platformid64: Annotated[int | None, Lenient()] = None

    @property
    def problem(self) -> str | None:
        """Why trades to this link would fail, in the service's words (``msg`` and
        ``info`` both: ``info`` is often the part a person can act on, such as a trade
        ban), or ``None`` when the link can be used."""
        if not self.success:
            said = [text for text in (self.msg, self.info) if text]
            return ": ".join(dict.fromkeys(said)) or "refused, no reason given"
        if self.info and _TRADE_BLOCKERS.search(self.info):
            return self.info
        return None


class InventoryPrice(WireModel):
    name: str | None = None
    average: int | None = None
    current: int | None = None
    img: ImageURL = None
    lowest_price: int | None = None
    rarity_color: OptionalText = None
    rarity: OptionalText = None


class OwnListing(WireModel):
    """One of the account's own listings (2.3)."""

    item_id: str
    price: int
    date: Epoch = None
    position: int | None = None
    name: str | None = None
    market_name: str | None = None
    platform_price: InventoryPrice | None = None


class OwnListingsResponse(WireModel):
    success: bool = False
    msg: str | None = None
    items: tuple[OwnListing, ...] = ()


class InventoryItem(WireModel):
    """An inventory item a merchant could accept (2.9); relative images are joined to the
    image base address."""

    item_id: str
    icon_url: ImageURL = None
    name: str | None = None
    type: OptionalText = None
    platform_price: InventoryPrice | None = None
    limit: int = 0
    instant_price: int = 0

    @property
    def depositable(self) -> bool:
        return self.limit > 0 and self.instant_price > 0


class InventoryResponse(WireModel):
    status: str | None = None
    msg: str | None = None
    items: tuple[InventoryItem, ...] = ()


class DepositTradeUser(WireModel):
    name: str | None = None
    avatar: ImageURL = None
    platform_id: str | None = None


class DepositTradeItem(WireModel):
    item_id: str
    name: str | None = None
    price: int | None = None
    give_amount: int | None = None
    status: int | None = None


class DepositTradeData(WireModel):
    trade_id: OptionalText = None
    done: bool | None = None
    reason: OptionalText = None
    created: Epoch = None
    proccessed_time: Epoch = None  # spelled so on the wire
    user: DepositTradeUser | None = None
    items: tuple[DepositTradeItem, ...] = ()


class DepositRecord(WireModel):
    """A merchant deposit (2.10)."""

    transaction_id: int
    deposit_id: OptionalText = None
    merchant: str | None = None
    platform_id: OptionalText = None
    trade_url_token: OptionalText = None
    currency: OptionalText = None
    min_amount: int | None = None
    max_amount: int | None = None
    result_url: OptionalText = None
    fail_url: OptionalText = None
    success_url: OptionalText = None
    game: OptionalText = None
    priority_game: OptionalText = None
    hash: OptionalText = None
    widget: bool | None = None
    platform_trade: int | None = None
    created: Epoch = None
    items: tuple[str, ...] = ()
    platform_trade_data: DepositTradeData | None = None


class DepositsPage(WireModel):
    status: str | None = None
    msg: str | None = None
    deposits: tuple[DepositRecord, ...] = ()
    start_from: int | None = None


class WebhookAttempt(WireModel):
    attempt: int
    status_code: int | None = None
    created_at: Epoch = None


class WebhookRecord(WireModel):
    """A merchant webhook delivery record (2.11); ``transaction_id`` arrives as a number or
    a numeric string."""

    transaction_id: int | None = None
    deposit_id: OptionalText = None
    platform_trade: int | None = None
    status: OptionalText = None
    status_code: int | None = None
    created_at: Epoch = None
    updated_at: Epoch = None
    attempts: tuple[WebhookAttempt, ...] = ()


class WebhookPage(WireModel):
    status: str | None = None
    msg: str | None = None
    data: tuple[WebhookRecord, ...] = ()
    start_from: int | None = None


class WebhookResponse(WireModel):
    status: str | None = None
    msg: str | None = None
    data: WebhookRecord | None = None


class TronRentResult(WireModel):
    """``POST /v1/payment/tron-energy/rent``. ``total_cost``'s unit is not the usual USD x
    1000 (the interface calls it cents and leaves the scale open), so it is kept as sent."""

    success: bool = False
    address: str | None = None
    total_cost: float | None = None
    msg: str | None = None
