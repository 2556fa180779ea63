"""The replay market's snapshot records (engine/backtest/_market.py): a key frame's rows and a
diff's removals, rows and repricings applied to :class:`~._market.ReplayMarket`'s listings.

Hot: a feed hour's diffs carry ~750,000 rows, ~550,000 removals and ~210,000 repricings,
most of them of names no rule watches or of listings the feed already removed: the
removals and repricings of listings not held are passed over in C-level passes (a filter
by ``listings.__contains__``); the rows are checked one by one, each refused at the row
(a loop's turn per row costs less than the passes that would check a column at once).
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import compress
from typing import TYPE_CHECKING, Any

from ._ranked import rank, resort

if TYPE_CHECKING:
    from ._market import ReplayMarket

__all__ = ["apply_diff", "apply_key"]


def apply_key(market: ReplayMarket, rows: Mapping[str, list[Any]]) -> None:
    """A key frame: every listing not in ``rows`` removed (not a sale), ``rows`` added."""
    ids = rows["id"]
    fresh = set(ids)
    for item_id in [i for i in market.listings if i not in fresh]:
        market._remove(item_id, gone=False)
    market._gone &= fresh
    add_rows(market, rows)
    market.counters.events += len(ids)


def apply_diff(market: ReplayMarket, body: Mapping[str, Any]) -> None:
    """A snapshot diff: its removals (``del``), rows (``add``) and repricings (``px``)."""
    removed, added, repriced = body["del"], body["add"], body["px"]
    delete_ids(market, removed)
    add_rows(market, added)
    listings = market.listings
    ids, prices = repriced["id"], repriced["price"]
    if len(ids) != len(prices):
        raise ValueError("px: id and price columns differ in length")
    journal, changed, by_name = market.journal, market._changed, market.by_name
    ranks, reach, defer = market._prices, market._reach, market._defer
    maybe_candidate = market._maybe_candidate
    # (only the listings held: most repricings are of names no rule watches)
    held = map(listings.__contains__, ids)
    for item_id, price in compress(zip(ids, prices, strict=True), held):
        row = listings[item_id]
        if type(price) is not int:
            raise ValueError(f"price {price!r} is not an integer")
        if price != row[1]:
            name = row[0]
            listings[item_id] = (name, price, row[2], row[3])
            if name in reach:
                changed(name, resort(by_name[name], ranks[name], row[1], price, item_id))
            else:
                defer(name, item_id, row[1], price)
            if journal is not None:
                journal.setdefault(item_id, None)
        maybe_candidate(item_id, row[0], price)
    market.counters.events += len(removed) + len(added["id"]) + len(ids)


def delete_ids(market: ReplayMarket, removed: list[str]) -> None:
    """The listings a diff removes (not sales): the feed has removed most of them already,
    so only the ones held are looked at."""
    held = [*filter(market.listings.__contains__, removed)]
    if market._gone:  # (a listing gone is never held: the others' discard, as one pass)
        market._gone.difference_update(removed)
    remove = market._remove
    for item_id in held:
        remove(item_id, gone=False)


def add_rows(market: ReplayMarket, rows: Mapping[str, list[Any]]) -> None:
    """A key frame's or a diff's rows: each listing of a kept name learned, or repriced."""
    listings, by_name, gone, prices = market.listings, market.by_name, market._gone, market._prices
    names, about = market._names, market._about
    journal, changed, order = market.journal, market._changed, market._order
    reach, defer = market._reach, market._defer
    candidates, unsnapshotted = market._candidates, market._unsnapshotted
    marks, epoch = market.candidate_marks, market.search_epoch
    columns = (rows["id"], rows["name"], rows["price"], rows["unlock"], rows["send"])
    if len({len(c) for c in columns}) != 1:
        raise ValueError("rows: the columns differ in length")
    for item_id, name, price, unlock_at, send_until in zip(*columns, strict=True):
        if type(price) is not int or type(name) is not str or type(item_id) is not str:
            raise ValueError(f"listing {item_id!r}: bad id, name or price")
        known = names.get(name)
        if known is None:
            known = about(name)
        if not known[0] or item_id in gone:
            continue
        row = listings.get(item_id)
        if row is None:
            if name in reach or name not in by_name:
                changed(name, rank(by_name, prices, name, price, item_id))
            else:
                defer(name, item_id, None, price)
            listings[item_id] = (name, price, unlock_at, send_until)
            if journal is not None:
                journal.setdefault(item_id, True)  # (new since the last drain)
                order[item_id] = market._serial
                market._serial += 1
        else:
            name = row[0]  # (its name as listed: the part that shows it)
            if price != row[1]:  # (else the row is kept: the transport keeps its lines)
                listings[item_id] = (name, price, row[2], row[3])
                if name in reach:
                    changed(name, resort(by_name[name], prices[name], row[1], price, item_id))
                else:
                    defer(name, item_id, row[1], price)
                if journal is not None:
                    journal.setdefault(item_id, None)
        limit = known[1]
        if limit is not None and price <= limit:
            candidates.add(item_id)
            unsnapshotted[item_id] = None
            marks[name] = epoch
