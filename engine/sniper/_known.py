"""What the service's searches told of listings and stickers, kept so a feed event need
not wait for a confirming search to be told it again (issue 17: the feed's bytes).

A feed event carries a listing's stickers' names only; a rule that reads their wear,
slot or price waits for a v2 search of the name (``_confirm.py``), ~550 KB of JSON for
50 names. Two things a search shows outlive its answer:

- **A listing's stickers** (names, wear, slot) do not change while its item id is
  listed, so an ``update`` (a new price) or a relist of an item a search showed is
  decided on that listing (:meth:`KnownListings.enrich`): the event's own fields, with
  the search's stickers, image, paint seed, inspect link and delivery. The feed's
  ``sticker_names`` must still be the stickers' names, else the item changed (scraped,
  re-applied under the same id) and it is searched again.
- **A sticker's price** is the service's price of that sticker (interface.md 2.1: 0 when
  not on sale), the same on every listing that carries it; kept by sticker name
  (:meth:`KnownListings.sticker_prices`), a criterion's
  :attr:`~engine.rules.Compiled.feed_test` can tell that a listing's stickers cannot add
  up to the value its rule asks, whatever a search would show, so it costs no search.

Prices, unlike stickers, move: both are trusted ``fresh_for`` seconds after the search
that showed them (``account.sticker_prices_for``, 300 s by default), then a search asks
again. Why 5 minutes: the engine already buys on the service's reference prices held
for 10 (``prices.service``), and a sticker's price moves no faster than the items'; what
a stale price can cost is bounded the same way (a purchase whose stickers were worth
``min_value`` up to 5 minutes ago), while a listing's updates and relists come within
seconds to minutes of the search that showed it (the feed's churn: ~20 s), so a longer
window would save few more searches. 0 turns both off: every candidate is confirmed
by its own search, as before. A price never stands in for stickers a search did not
show on that very listing: the sticker book only rejects (an upper bound), never buys. Bounded: at
most ``limit`` listings, the oldest forgotten first; a listing the feed told removed is
kept :data:`RELIST_WINDOW` seconds more (a fifth of removed listings come back within a
minute, wire-notes.md), never longer than it would have been.

Pure: no I/O, no clock (times are given).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence

from .._money import Money
from ..models import Listing
from ._schedule import MAX_LISTINGS_PER_NAME

__all__ = ["BEYOND_FOR", "RELIST_WINDOW", "KnownListings"]

RELIST_WINDOW = 60.0
"""Seconds a removed listing's stickers stay known, for its relist."""

BEYOND_FOR = 10.0
"""Seconds a search that showed the :data:`MAX_LISTINGS_PER_NAME` cheapest listings of a
name tells that a dearer one would not be shown either (its confirming search could not
confirm it): a popular name's cheapest listings move within seconds, so not longer."""

SEARCH_ONLY = ("stickers", "image", "paintseed", "inspect", "delivery")
"""The fields of a search's listing that a feed event lacks (wire-notes.md): taken from
the search when an event is decided on what it showed. The event's own fields (price,
trade lock, reference price, float, phase) are the newer and stay."""


class _FreshPrices(Mapping[str, Money]):
    """Sticker name -> price, for the prices seen at or after ``since``."""

    __slots__ = ("_prices", "_since")

    def __init__(self, prices: dict[str, tuple[Money, float]], since: float) -> None:
        self._prices = prices
        self._since = since

    def __getitem__(self, name: str) -> Money:
        price, seen = self._prices[name]
        if seen < self._since:
            raise KeyError(name)
        return price

    def __iter__(self) -> Iterator[str]:
        return (n for n, (_, seen) in self._prices.items() if seen >= self._since)

    def __len__(self) -> int:
        return sum(1 for _ in self)


class KnownListings:
    """Listings and sticker prices as searches showed them. See the module docstring."""

    def __init__(self, fresh_for: float = 300.0, limit: int = 50_000) -> None:
        if fresh_for < 0 or limit < 1:
            raise ValueError("fresh_for must be >= 0 and limit >= 1")
        self.fresh_for = fresh_for
        self.limit = limit
        self._listings: dict[str, tuple[Listing, float, float]] = {}
        """item id -> (the search's listing, when seen, until when trusted), oldest
        seen first."""
        self._prices: dict[str, tuple[Money, float]] = {}
        self._dearest: dict[str, tuple[Money, float]] = {}
        """Searched name -> the dearest of the cheapest listings its last search showed,
        and when, for names it showed as many of as a search shows."""
        self.reused = 0
        """Feed events decided on a listing a search showed (no search)."""
        self.stale = 0
        """Events of a listing known, but seen too long ago: searched again."""
        self.changed = 0
        """Events whose sticker names differ from the stickers a search showed."""

    def __len__(self) -> int:
        return len(self._listings)

    def saw(self, listings: Iterable[Listing], now: float) -> None:
        """A search answered ``listings`` at ``now``."""
        if not self.fresh_for:
            return
        until = now + self.fresh_for
        known, prices = self._listings, self._prices
        for listing in listings:
            item_id = listing.item_id
            known.pop(item_id, None)  # to the end: the newest
            known[item_id] = (listing, now, until)
            for sticker in listing.stickers:  # 0 too: not on sale, the service's word
                prices[sticker.name] = (sticker.price, now)
        self._forget(now)

    def saw_answer(self, items: Mapping[str, Sequence[Listing]], now: float) -> None:
        """A search answered ``items`` (searched name -> its listings) at ``now``."""
        self.saw((x for found in items.values() for x in found), now)
        for name, found in items.items():
            if len(found) >= MAX_LISTINGS_PER_NAME:
                self._dearest[name] = (max(x.price for x in found), now)
            else:
                self._dearest.pop(name, None)

    def beyond(self, name: str, price: Money, now: float) -> bool:
        """Whether a listing of searched name ``name`` at ``price`` is dearer than every
        listing of the full answer a search of ``name`` gave within :data:`BEYOND_FOR`
        (so its own confirming search would not show it either)."""
        seen = self._dearest.get(name)
        return seen is not None and now - seen[1] <= BEYOND_FOR and price > seen[0]

    def removed(self, item_id: str, now: float) -> None:
        """The feed told ``item_id`` removed: kept for a relist, briefly."""
        entry = self._listings.get(item_id)
        if entry is not None and entry[2] > now + RELIST_WINDOW:
            self._listings[item_id] = (entry[0], entry[1], now + RELIST_WINDOW)

    def enrich(self, listing: Listing, now: float) -> Listing | None:
        """``listing`` (a feed event's) with what a search showed of its item while it is
        trusted, its sticker names the same; else ``None`` (a search must tell)."""
        entry = self._listings.get(listing.item_id)
        if entry is None:
            return None
        known, _, until = entry
        if now > until:
            self.stale += 1
            del self._listings[listing.item_id]
            return None
        if sorted(s.name for s in known.stickers) != sorted(listing.sticker_names):
            self.changed += 1
            del self._listings[listing.item_id]
            return None
        self.reused += 1
        return listing.model_copy(update={f: getattr(known, f) for f in SEARCH_ONLY})

    def sticker_prices(self, now: float) -> Mapping[str, Money]:
        """Stickers' prices a search showed within ``fresh_for`` of ``now``."""
        if not self._prices:
            return {}
        return _FreshPrices(self._prices, now - self.fresh_for)

    def _forget(self, now: float) -> None:
        known = self._listings
        horizon = now - self.fresh_for
        while known:
            item_id = next(iter(known))
            _, seen, _ = known[item_id]
            if seen >= horizon and len(known) <= self.limit:
                break
            del known[item_id]
        if len(self._prices) > self.limit:  # sticker kinds are a few thousand: never, live
            self._prices = {n: v for n, v in self._prices.items() if v[1] >= horizon}
