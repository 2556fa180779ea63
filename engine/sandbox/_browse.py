"""Catalogue pages (GET /v1 and /v2/get-items-list): filters, orderings, ``skip`` and the
v2 cursor. Sans-I/O.

The cursor is opaque to clients: base64 of the last item's sort value and ``item_id``, the
query it belongs to, and the market time the walk started (``t0``). Each listing is
ordered by its price at ``max(t0, listed_at)``, a value that never changes during the walk,
so a keyset walk returns every listing at most once even while prices are edited; the price
shown is always the current one.
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass

from ._catalogue import EXTERIORS
from ._http import BadRequest, Request
from ._market import Listing

__all__ = ["CatalogueQuery", "Cursor", "catalogue_page", "sort_value"]

MAX_SKIP = 5000
ORDER_BY = ("price", "profit", "discount")


@dataclass(frozen=True, slots=True)
class CatalogueQuery:
    search: str | None
    brand: str | None
    exterior: str | None
    min_price: int | None
    max_price: int | None
    game: str | None
    include_hold: bool
    order_by: str
    descending: bool

    @classmethod
    def from_request(cls, request: Request) -> CatalogueQuery:
        order = request.choice("order", ("asc", "desc", "ASC", "DESC"))
        sort = request.choice("sort", ("ASC", "DESC", "asc", "desc"), default="DESC")
        direction = (order or sort or "DESC").upper()
        return cls(
            search=request.arg("search"),
            brand=request.arg("brand"),
            exterior=request.choice("exterior", tuple(EXTERIORS)),
            min_price=request.int_arg("min_price", minimum=0),
            max_price=request.int_arg("max_price", minimum=0),
            game=request.choice("game", ("csgo", "tf2", "rust", "dota2")),
            include_hold=request.flag("include_hold"),
            order_by=request.choice("order_by", ORDER_BY, default="price") or "price",
            descending=direction == "DESC",
        )

    def fingerprint(self) -> str:
        parts = (
            self.search,
            self.brand,
            self.exterior,
            self.min_price,
            self.max_price,
            self.game,
            self.include_hold,
            self.order_by,
            self.descending,
        )
        return hashlib.sha256(repr(parts).encode()).hexdigest()[:12]

    def matches(self, listing: Listing, now: float) -> bool:
        item = listing.item
        if not self.include_hold and listing.locked(now):
            return False
        if self.game is not None and item.game != self.game:
            return False
        if self.search and self.search.lower() not in item.name.lower():
            return False
        if self.brand is not None and item.brand != self.brand:
            return False
        if self.exterior is not None and item.exterior != self.exterior:
            return False
        if self.min_price is not None and listing.price < self.min_price:
            return False
        return self.max_price is None or listing.price <= self.max_price


def sort_value(listing: Listing, order_by: str, price: int) -> float:
    """The value the catalogue orders by, as the wire shows it (``best_deals`` for
    ``profit``, ``discount`` in percent)."""
    if order_by == "price":
        return price
    reference = listing.platform_price
    if order_by == "profit":
        return reference - price
    return round((reference - price) * 100.0 / reference, 2) if reference else 0.0


@dataclass(frozen=True, slots=True)
class Cursor:
    value: float
    item_id: int
    started: float
    query: str

    def encode(self) -> str:
        raw = json.dumps([self.value, self.item_id, self.started, self.query]).encode()
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    @classmethod
    def decode(cls, text: str, query: CatalogueQuery) -> Cursor:
        try:
            raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
            value, item_id, started, fingerprint = json.loads(raw)
            cursor = cls(float(value), int(item_id), float(started), str(fingerprint))
        except (ValueError, TypeError) as exc:
            raise BadRequest(f"cursor: not a cursor this service issued ({exc})") from None
        if cursor.query != query.fingerprint():
            raise BadRequest("cursor: it belongs to a query with other filters or order")
        return cursor


@dataclass(frozen=True, slots=True)
class Page:
    listings: list[Listing]
    has_more: bool
    next_cursor: str | None


def catalogue_page(
    listings: list[Listing],
    query: CatalogueQuery,
    *,
    now: float,
    limit: int,
    skip: int,
    cursor: Cursor | None,
    row_cap: int | None = None,
) -> Page:
    """One page of the catalogue. With a cursor, ``skip`` is ignored."""
    started = cursor.started if cursor is not None else now

    def key(listing: Listing) -> tuple[float, int]:
        price = listing.price_at(max(started, listing.listed_at))
        return sort_value(listing, query.order_by, price), listing.item_id

    keyed = sorted(
        ((key(li), li) for li in listings if query.matches(li, now)),
        key=lambda pair: pair[0],
        reverse=query.descending,
    )
    if cursor is not None:
        mark = (cursor.value, cursor.item_id)
        if query.descending:
            keyed = [pair for pair in keyed if pair[0] < mark]
        else:
            keyed = [pair for pair in keyed if pair[0] > mark]
        skip = 0
    if row_cap is not None:
        keyed = keyed[:row_cap]
    chosen = keyed[skip : skip + limit]
    has_more = len(keyed) > skip + limit
    next_cursor = None
    if has_more and chosen:
        (value, item_id), _ = chosen[-1]
        next_cursor = Cursor(value, item_id, started, query.fingerprint()).encode()
    return Page([listing for _, listing in chosen], has_more, next_cursor)
