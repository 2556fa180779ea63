"""The payloads of the public listing feed's events (wire-notes.md, "The public listing
feed"; docs/wire.md, "The listing feed").

``new`` and ``update`` carry a listing: :class:`FeedListing` is a :class:`Listing`, read
with the same lenient field types as a search's listings, so the rules see one kind of
listing whichever way it came. ``removed`` carries :class:`FeedRemoval`: the listing left
the market, which is *not* a sale (a fifth of them come back within a minute).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import StringConstraints

from ._market import Listing
from ._types import Lenient, Price, WireModel

__all__ = ["FeedListing", "FeedRemoval"]

ItemId = Annotated[str, StringConstraints(min_length=1)]
"""An id that can be bought by or forgotten by: an empty one sets the event aside."""


class FeedListing(Listing):
    """A listing as a ``new`` or ``update`` event carries it.

    On top of :class:`Listing`: ``game`` (``csgo``...), the item's ``classid`` and
    ``instance_id`` (sometimes ``null``) and the seller's ``platform_id``, all informative
    (an odd value becomes ``None``). The feed has no stickers' wear or price (only
    ``sticker_names``), no image, no paint seed, no inspect link: a rule that needs them
    confirms with a search. ``platform_price`` may come as a numeric string; trade-locked
    listings carry ``unlock_at`` and ``send_until`` as RFC 3339 (epoch seconds here).
    """

    item_id: ItemId
    game: Annotated[str | None, Lenient()] = None
    classid: Annotated[str | None, Lenient()] = None
    instance_id: Annotated[str | None, Lenient()] = None
    platform_id: Annotated[str | None, Lenient()] = None


class FeedRemoval(WireModel):
    """A ``removed`` event: listing ``item_id`` left the market (sold, withdrawn or about
    to be relisted: the feed does not say which). ``price`` is its last price."""

    item_id: ItemId
    game: Annotated[str | None, Lenient()] = None
    name: str | None = None
    price: Price | None = None
