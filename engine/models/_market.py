"""Listings, searches, catalogue pages and snapshots (interface.md 2.1, 2.2, 2.4, 2.13)."""

from __future__ import annotations

from pydantic import AliasChoices, Field

from ._types import Epoch, ImageURL, OptionalText, Phase, WireModel

__all__ = [
    "CataloguePage",
    "Listing",
    "PlatformItem",
    "PlatformItemsResponse",
    "SearchResponse",
    "Snapshot",
    "SnapshotRow",
    "Sticker",
]


class Sticker(WireModel):
    """A sticker applied to a listed item. ``price`` is 0 when the sticker is not on sale;
    ``wear`` is ``None`` when the service sends ``null`` (an unworn sticker)."""

    name: str
    image: ImageURL = None
    wear: float | None = None
    slot: int | None = None
    price: int = 0


class Listing(WireModel):
    """One item for sale, from a search (2.1) or the catalogue (2.2).

    Every field but ``item_id``, ``name`` and ``price`` is optional because the two sources
    carry different subsets. A listing is trade-locked exactly when ``unlock_at`` is set.
    ``platform_price`` is the service's reference price (``platform_price_number`` on some
    v2 answers); ``float_value`` is the wire's ``float``.
    """

    item_id: str
    name: str
    price: int
    image: ImageURL = None
    phase: Phase = None
    float_value: float | None = Field(default=None, alias="float")
    platform_price: int | None = Field(
        default=None, validation_alias=AliasChoices("platform_price", "platform_price_number")
    )
    sticker_names: tuple[str, ...] = ()
    stickers: tuple[Sticker, ...] = ()
    unlock_at: Epoch = None
    send_until: Epoch = None
    # catalogue only
    best_deals: int | None = None
    discount: float | None = None
    brand: OptionalText = None
    type: OptionalText = None
    # extras the live service sends (wire-notes.md); kept for pattern criteria plugins
    paintseed: int | None = None
    paintindex: int | None = None

    @property
    def trade_locked(self) -> bool:
        return self.unlock_at is not None

    @property
    def sticker_value(self) -> int:
        """Sum of the stickers' prices, USD x 1000."""
        return sum(s.price for s in self.stickers)


class SearchResponse(WireModel):
    """``GET /v1|v2/search-items-by-name``: listings per requested name, cheapest first.
    A name with no listing maps to an empty tuple or is absent."""

    success: bool = False
    msg: str | None = None
    items: dict[str, tuple[Listing, ...]] = Field(default_factory=dict)


class CataloguePage(WireModel):
    """``GET /v1|v2/get-items-list``: one page. ``next_cursor`` (v2) is set only while
    ``has_more``."""

    success: bool = False
    msg: str | None = None
    items: tuple[Listing, ...] = ()
    count: int = 0
    has_more: bool = False
    next_cursor: OptionalText = None


class SnapshotRow(WireModel):
    """A row of the prices snapshot. CSV rows add ``unlock_at``/``send_until`` with
    ``include_hold``."""

    item_id: str
    name: str
    price: int
    unlock_at: Epoch = None
    send_until: Epoch = None


class Snapshot(WireModel):
    """``GET /v1/prices/snapshot`` as JSON (2.13)."""

    success: bool = False
    msg: str | None = None
    timestamp: Epoch = None
    items: tuple[SnapshotRow, ...] = ()


class PlatformItem(WireModel):
    """A recommended-price item (2.4); ``ru_name`` is the localised name."""

    name: str
    average: int | None = None
    game_id: int | None = None
    type: OptionalText = None
    collection: OptionalText = None
    ru_name: OptionalText = None


class PlatformItemsResponse(WireModel):
    success: bool = False
    msg: str | None = None
    items: tuple[PlatformItem, ...] = ()
