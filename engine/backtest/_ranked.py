"""The replay market's small pieces of bookkeeping (engine/backtest/_market.py): a name's
listings kept sorted by ``(price, item_id)`` as they change, and a recorded time read as
epoch seconds.

A name's sorted ``(price, item_id)`` tuples (what a search shows, read by the market and
the transport) come with the same prices in a flat ``array('q')`` beside them, which is
where a place is looked for: a bisect of the tuples dereferences a tuple and its price
at each step, scattered over the heap (cache misses), a bisect of the array reads one
contiguous block; item_ids are compared only among listings of the same price.

A change to a name no answer has looked at since its last change needs no place (no
version depends on it): the market notes it in the name's :data:`Pending` and leaves the
sorted listings as they were until something reads them (:func:`settle`). In a feed's
hour ~400,000 changes meet ~300 reads of a changed name: the bisects and the moves of
hundreds of pointers per change were most of the market's sorting.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Mapping
from datetime import datetime
from itertools import compress
from operator import itemgetter, not_
from typing import TYPE_CHECKING, Any, TypeAlias

__all__ = [
    "Pending",
    "Prices",
    "Ranked",
    "epoch",
    "find",
    "place",
    "rank",
    "resort",
    "settle",
    "unsort",
]

Ranked = list[tuple[int, str]]
if TYPE_CHECKING:
    Prices: TypeAlias = array[int]  # array('q') of a Ranked's prices, in its order
else:
    Prices = array

Pending = dict[str, int | None]
"""The listings of a name changed (added, repriced, removed) since its sorted listings were
last brought up to date: item_id -> its price in them (None: not in them)."""

_PRICE = itemgetter(0)
_ITEM_ID = itemgetter(1)


def place(ranked: Ranked, prices: Prices, price: int, item_id: str) -> int:
    """Where ``(price, item_id)`` would go in ``ranked`` (``bisect_left``)."""
    at = bisect_left(prices, price)
    if at < len(prices) and prices[at] == price:  # ties on price: by item_id among them
        return bisect_left(ranked, (price, item_id), at, bisect_right(prices, price, at))
    return at


def find(ranked: Ranked, prices: Prices, price: int, item_id: str) -> int:
    """Where ``(price, item_id)``, which is in ``ranked``, is: :func:`place`, the item_ids
    compared only when another listing has the same price."""
    at = bisect_left(prices, price)
    if at + 1 < len(prices) and prices[at + 1] == price:
        return bisect_left(ranked, (price, item_id), at, bisect_right(prices, price, at))
    return at


def rank(
    by_name: dict[str, Ranked],
    prices_by_name: dict[str, Prices],
    name: str,
    price: int,
    item_id: str,
) -> int:
    """Put a new listing in its name's sorted listings; returns where."""
    ranked = by_name.get(name)
    if ranked is None:
        prices_by_name[name] = array("q", (price,))
        by_name[name] = [(price, item_id)]
        return 0
    return _put(ranked, prices_by_name[name], price, item_id)


def unsort(
    by_name: dict[str, Ranked],
    prices_by_name: dict[str, Prices],
    name: str,
    price: int,
    item_id: str,
) -> int:
    """Take a listing out of its name's sorted listings; returns where it was."""
    ranked = by_name[name]
    at = _take(ranked, prices_by_name[name], price, item_id)
    if not ranked:
        del by_name[name]
        del prices_by_name[name]
    return at


def resort(ranked: Ranked, prices: Prices, old: int, price: int, item_id: str) -> int:
    """Move a repriced listing to its place; returns the first position that changed."""
    was = _take(ranked, prices, old, item_id)
    at = _put(ranked, prices, price, item_id)
    return at if at < was else was  # (min without its call: once per repricing)


def _put(ranked: Ranked, prices: Prices, price: int, item_id: str) -> int:
    """Insert ``(price, item_id)`` at its place; returns where."""
    at = place(ranked, prices, price, item_id)
    prices.insert(at, price)
    ranked.insert(at, (price, item_id))
    return at


def _take(ranked: Ranked, prices: Prices, price: int, item_id: str) -> int:
    """Delete ``(price, item_id)``, which is in ``ranked``; returns where it was."""
    at = find(ranked, prices, price, item_id)
    del ranked[at]
    del prices[at]
    return at


def settle(
    by_name: dict[str, Ranked],
    prices_by_name: dict[str, Prices],
    pending: Pending,
    listings: Mapping[str, tuple[str, int, Any, Any]],
    name: str,
) -> Ranked | None:
    """``name``'s sorted listings with its ``pending`` changes applied: each moved by a
    bisect when they are few, else the untouched ones kept in order and the sort merging
    the others in (a sorted run and a short tail: ~n comparisons). A listing touched is
    given a new tuple, as :func:`rank` and :func:`resort` give it (the transport tells an
    unchanged listing by its tuple's identity)."""
    ranked = by_name[name]
    prices = prices_by_name[name]
    if len(pending) * 16 < len(ranked):
        for item_id, old in pending.items():
            if old is not None:
                _take(ranked, prices, old, item_id)
            row = listings.get(item_id)
            if row is not None and row[0] == name:
                _put(ranked, prices, row[1], item_id)
    else:
        untouched = map(not_, map(pending.__contains__, map(_ITEM_ID, ranked)))
        ranked = list(compress(ranked, untouched))
        for item_id in pending:
            row = listings.get(item_id)
            if row is not None and row[0] == name:
                ranked.append((row[1], item_id))
        ranked.sort()
        by_name[name] = ranked
        prices = prices_by_name[name] = array("q", map(_PRICE, ranked))
    if not ranked:
        del by_name[name]
        del prices_by_name[name]
        return None
    return ranked


def epoch(value: Any) -> int | None:
    """A recorded ``unlock_at`` or ``send_until`` (epoch seconds or ISO 8601) as epoch
    seconds; None for none."""
    if value is None or value == "":
        return None
    if isinstance(value, int | float):
        return int(value)
    return int(datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp())
