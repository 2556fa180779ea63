"""Listings, searches, catalogue pages and snapshots (interface.md 2.1, 2.2, 2.4, 2.13)."""

from __future__ import annotations

from typing import Self

from pydantic import AliasChoices, Field, ValidationInfo, model_validator

from ._types import Epoch, OptionalText, WireModel, image_base_url

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


def _with_prefix(image: str | None, prefix: str | None) -> str | None:
    """:func:`join_image_url` with the base already normalised to end in one ``/``."""
    if not image:
        return None
    if prefix is None or image.startswith("http"):
        return image
    return prefix + image.lstrip("/")


class Sticker(WireModel):
    """A sticker applied to a listed item. ``price`` is 0 when the sticker is not on sale;
    ``wear`` is ``None`` when the service sends ``null`` (an unworn sticker). A relative
    ``image`` is joined to the image base address by the :class:`Listing` carrying it."""

    name: str
    image: str | None = None
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
    image: str | None = None  # relative values joined in _normalise
    phase: str | None = None  # "" means no phase: None after _normalise
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

    @model_validator(mode="after")
    def _normalise(self, info: ValidationInfo) -> Self:
        # A search answer holds thousands of listings and stickers: one Python call per
        # listing here, rather than a validator per image and phase field, keeps parsing
        # within 2x of json.loads (bench/bench_parse.py). The instance is new and not yet
        # shared, so filling in its (frozen) fields directly is safe.
        fields = self.__dict__
        if fields["phase"] == "":
            fields["phase"] = None
        base = image_base_url(info)
        prefix = None if base is None else base.rstrip("/") + "/"
        fields["image"] = _with_prefix(fields["image"], prefix)
        for sticker in self.stickers:
            sticker_fields = sticker.__dict__
            image = sticker_fields["image"]
            if image and prefix is not None and not image.startswith("http"):
                sticker_fields["image"] = prefix + image.lstrip("/")
            elif not image:
                sticker_fields["image"] = None
        return self

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
