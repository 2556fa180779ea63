"""Listings, searches, catalogue pages and snapshots (interface.md 2.1, 2.2, 2.4, 2.13)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import ROUND_FLOOR
from typing import Annotated, Self

from pydantic import AliasChoices, Field, PrivateAttr, ValidationInfo, model_validator

from ._per_item import ANY_KEY, INDEX, PerItem, SetAside
from ._raw import RawListing
from ._types import (
    Difference,
    Epoch,
    Lenient,
    Nullable,
    OptionalText,
    Price,
    Reference,
    WireModel,
    WireMoney,
    image_base_url,
)

__all__ = [
    "CataloguePage",
    "Listing",
    "PlatformItem",
    "PlatformItemsResponse",
    "SearchResponse",
    "SearchResponseV1",
    "Snapshot",
    "SnapshotRow",
    "Sticker",
]

StickerValue = Annotated[int, WireMoney(ROUND_FLOOR, null_as=0)]
"""A sticker's price: ``null`` (seen on the live feed) counts as 0, like a sticker not on
sale, so a sticker of unknown price never adds value."""


class Sticker(WireModel):
    """A sticker applied to a listed item. ``price`` is 0 when the sticker is not on sale
    or its price is ``null`` (unknown: never counted as value); ``wear`` is ``None`` when
    the service sends ``null`` (an unworn sticker). A relative ``image`` is joined to the
    image base address by the :class:`Listing` carrying it."""

    name: str
    image: str | None = None
    wear: float | None = None
    slot: int | None = None
    price: StickerValue = 0


class Listing(WireModel):
    """One item for sale, from a search (2.1) or the catalogue (2.2).

    Every field but ``item_id``, ``name`` and ``price`` is optional because the two sources
    carry different subsets. A listing is trade-locked exactly when ``unlock_at`` is set.
    ``platform_price`` is the service's reference price: the first of the wire's
    ``platform_price`` and ``platform_price_number`` that holds a number (a ``null`` or an
    object in one does not hide the other); ``float_value`` is the wire's ``float``.
    A fraction of a thousandth is rounded against the buyer (docs/wire.md).
    ``delivery`` is how the item is delivered (``p2p`` or ``bot``, as sent), ``inspect``
    the in-game inspect link, ``auto`` whether the seller's side is automated.
    """

    item_id: str
    name: str
    price: Price
    image: str | None = None  # relative values joined in _normalise
    phase: str | None = None  # "" means no phase: None after _normalise
    float_value: float | None = Field(default=None, alias="float")
    platform_price: Reference | None = None  # the first number of the two, in _normalise
    platform_price_number: Reference | None = Field(default=None, exclude=True, repr=False)
    sticker_names: Annotated[tuple[str, ...], Nullable()] = ()  # null: () in _normalise
    stickers: Annotated[tuple[Sticker, ...], Nullable()] = ()  # null: () in _normalise
    unlock_at: Epoch = None
    send_until: Epoch = None
    # catalogue only
    best_deals: Difference | None = None
    discount: float | None = None
    brand: OptionalText = None
    type: OptionalText = None
    # extras the live service sends (wire-notes.md): informative, so an odd value is
    # dropped (None) rather than setting the listing aside
    delivery: Annotated[str | None, Lenient()] = None
    inspect: Annotated[str | None, Lenient()] = None
    auto: Annotated[bool | None, Lenient()] = None
    paintseed: Annotated[int | None, Lenient()] = None
    # one field, not two merged in _normalise: every declared field costs a key lookup in
    # each of a search's 2,500 listings (bench/bench_parse.py), and this one is informative
    paintindex: Annotated[int | None, Lenient()] = Field(
        default=None, validation_alias=AliasChoices("paintindex", "paint_index")
    )

    @model_validator(mode="after")
    def _normalise(self, info: ValidationInfo) -> Self:
        # A search answer holds thousands of listings and stickers: one Python call per
        # listing here, rather than a validator per image and phase field, keeps parsing
        # within 2x of json.loads (bench/bench_parse.py). This body is a sixth of that
        # parse's instructions, hence inlined, without helper calls, and ``lstrip`` only
        # called on the rare image that needs it. The instance is new and not yet shared,
        # so filling in its (frozen) fields directly is safe.
        fields = self.__dict__
        if fields["phase"] == "":
            fields["phase"] = None
        if fields["platform_price"] is None:
            fields["platform_price"] = fields["platform_price_number"]
        if fields["sticker_names"] is None:
            fields["sticker_names"] = ()
        stickers = fields["stickers"]
        if stickers is None:
            fields["stickers"] = stickers = ()
        delivery = fields["delivery"]
        if delivery is not None:
            fields["delivery"] = delivery.strip().lower() or None
        base = image_base_url(info)
        if base is None:
            if not fields["image"]:
                fields["image"] = None
            for sticker in stickers:
                if not sticker.__dict__["image"]:
                    sticker.__dict__["image"] = None
            return self
        prefix = base.rstrip("/") + "/"
        image = fields["image"]
        if not image:
            fields["image"] = None
        elif not image.startswith("http"):
            fields["image"] = prefix + (image.lstrip("/") if image[0] == "/" else image)
        for sticker in stickers:
            sticker_fields = sticker.__dict__
            image = sticker_fields["image"]
            if not image:
                sticker_fields["image"] = None
            elif not image.startswith("http"):
                sticker_fields["image"] = prefix + (image.lstrip("/") if image[0] == "/" else image)
        return self

    @property
    def trade_locked(self) -> bool:
        return self.unlock_at is not None

    @property
    def sticker_value(self) -> int:
        """Sum of the stickers' prices, USD x 1000."""
        return sum(s.price for s in self.stickers)


class SearchResponse(PerItem):
    """``GET /v2/search-items-by-name`` (and v1, regrouped by :meth:`from_v1`): listings
    per requested name, cheapest first. A name with no listing maps to an empty tuple or
    is absent. Listings that could not be read are in :attr:`set_aside`."""

    __item_paths__ = (("items", ANY_KEY, INDEX),)

    success: bool = False
    msg: str | None = None
    items: dict[str, tuple[Listing, ...]] = Field(default_factory=dict)
    _passed_over: int = PrivateAttr(default=0)
    _passed_over_phases: tuple[tuple[str, str], ...] = PrivateAttr(default=())
    _judged: dict[str, tuple[Listing | RawListing, ...]] | None = PrivateAttr(default=None)

    @property
    def judged_items(self) -> Mapping[str, tuple[Listing | RawListing, ...]]:
        """:attr:`items` with the listings a screen passed over (see
        :func:`~engine.models.decode_search`) in their places, as :class:`RawListing`
        stand-ins: every listing the full decode would have built, in the answer's
        order, for a caller that judges or counts every one (the rules turn each stand-in
        down, for the reasons they would give its model). :attr:`items` when none was
        passed over that way."""
        return self.items if self._judged is None else self._judged

    @property
    def passed_over(self) -> int:
        """How many listings a prefilter passed over without building them (see
        :func:`~engine.models.decode_search`); 0 for an answer decoded in full."""
        return self._passed_over

    @property
    def passed_over_phases(self) -> tuple[tuple[str, str], ...]:
        """(item id, phase) of the passed-over listings that carry a phase."""
        return self._passed_over_phases

    @classmethod
    def from_v1(cls, answer: SearchResponseV1) -> SearchResponse:
        """The v1 answer (a flat array) grouped by name, cheapest first within a name, with
        the same :attr:`set_aside`."""
        return cls._grouped(answer.success, answer.msg, answer.items, answer.set_aside)

    @classmethod
    def _grouped(
        cls,
        success: bool,
        msg: str | None,
        listings: Iterable[Listing],
        set_aside: tuple[SetAside, ...],
    ) -> SearchResponse:
        by_name: dict[str, list[Listing]] = {}
        for listing in listings:
            by_name.setdefault(listing.name, []).append(listing)
        items = {
            name: tuple(sorted(found, key=lambda x: x.price)) for name, found in by_name.items()
        }
        grouped = cls.model_construct(success=success, msg=msg, items=items)
        grouped._set_aside = set_aside
        return grouped


class SearchResponseV1(PerItem):
    """``GET /v1/search-items-by-name`` as sent: ``items`` is one array of listings for
    every requested name (v2 keys them by name). :meth:`SearchResponse.from_v1` groups it."""

    __item_paths__ = (("items", INDEX),)

    success: bool = False
    msg: str | None = None
    items: tuple[Listing, ...] = ()


class CataloguePage(PerItem):
    """``GET /v1|v2/get-items-list``: one page. ``next_cursor`` (v2) is set only while
    ``has_more``. Listings that could not be read are in :attr:`set_aside`."""

    __item_paths__ = (("items", INDEX),)

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


class Snapshot(PerItem):
    """``GET /v1/prices/snapshot`` as JSON (2.13)."""

    __item_paths__ = (("items", INDEX),)

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


class PlatformItemsResponse(PerItem):
    __item_paths__ = (("items", INDEX),)

    success: bool = False
    msg: str | None = None
    items: tuple[PlatformItem, ...] = ()
