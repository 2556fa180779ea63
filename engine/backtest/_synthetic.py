"""A recording of the sandbox's market with its live feed, made in-process at full speed
(no HTTP, no clock): for benches and tests that need a realistic format version 2
recording of any length.

The sandbox :class:`~engine.sandbox.Market` is stepped event by event; every change it
logs (what its feed server would send: ``new``, ``update``, ``removed``) is written as a
``feed`` record at its time, decoded by the client's own per-item decode from the payload
the sandbox's feed would send, and every ``every`` market seconds the snapshot's changes
are written (``RecordWriter.changes``), so snapshots and feed agree as they do live. The
market's churn (``MarketConfig.churn_per_second``, with bursts) is the feed's traffic at
the live rate (~430 events/s).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TypeVar

from ..client import FeedConnected, FeedListingEvent, FeedRemovalEvent
from ..models import FeedListing, FeedRemoval, SetAside, decode_item
from ..sandbox import Listing, Market, MarketConfig, listing_payload, removed_payload
from ._format import RecordWriter, Row

__all__ = ["record_sandbox_market"]

_M = TypeVar("_M", FeedListing, FeedRemoval)


def _row(listing: Listing) -> Row:
    unlock, send = listing.unlock_at, listing.send_until
    return (
        str(listing.item_id),
        listing.snapshot_name,
        listing.price,
        None if unlock is None else int(unlock),
        None if send is None else int(send),
    )


def record_sandbox_market(
    directory: Path,
    *,
    start: float,
    seconds: float,
    config: MarketConfig,
    seed: int = 5,
    every: float = 10.0,
) -> int:
    """Write ``seconds`` of the sandbox market ``config`` describes and its feed to
    ``directory``; returns the number of feed events written."""
    market = Market(seed=seed, start=start, config=config)
    log = market.changes
    cursor = log.cursor
    written = 0
    with RecordWriter(directory, include_hold=True, segment_bytes=64 << 20) as writer:
        writer.feed(start, FeedConnected(1, start, "sid", config.games, 25.0, 20.0))
        writer.changes(start, add=[_row(x) for x in market.listings.values()])
        t, end = start, start + seconds
        while t < end:
            t += every
            added: dict[str, Row] = {}
            gone: list[str] = []
            repriced: dict[str, int] = {}
            while (due := market.next_event_time()) is not None and due <= t:
                market.step()
                changes, cursor, lost = log.read(cursor)
                if lost:
                    raise RuntimeError("the market's change log overflowed")
                for change in changes:
                    listing, item_id = change.listing, str(change.listing.item_id)
                    if change.kind == "removed":
                        if added.pop(item_id, None) is None:
                            repriced.pop(item_id, None)
                            gone.append(item_id)
                        payload = json.dumps(removed_payload(listing, change.price))
                        removal = _decoded(FeedRemoval, payload)
                        writer.feed(change.at, FeedRemovalEvent(removal, change.at, 1))
                    else:
                        if change.kind == "new" or item_id in added:
                            added[item_id] = _row(listing)
                        else:
                            repriced[item_id] = change.price
                        payload = json.dumps(listing_payload(listing, change.price, change.at))
                        told = _decoded(FeedListing, payload)
                        writer.feed(change.at, FeedListingEvent(change.kind, told, change.at, 1))
                    written += 1
            writer.changes(t, add=list(added.values()), delete=gone, price=list(repriced.items()))
    return written


def _decoded(model: type[_M], payload: str) -> _M:
    decoded = decode_item(model, payload, path="feed")
    if isinstance(decoded, SetAside):  # the sandbox's own payload: a bug if refused
        raise RuntimeError(f"the sandbox's feed payload was refused: {decoded}")
    return decoded
