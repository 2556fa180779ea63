"""Feed events in a recording (format version 2, docs/recording-format.md): the ``feed``
record's body written from a :class:`~engine.client.FeedEvent`, and read back into one.

A listing or removal is stored as the client decoded it, back in its wire form (the same
model dump as a search's listings), so reading it back is the client's own decode: what
a replay hands the engine is what the live feed handed it. Connection markers keep what
the engine reads of them (generation, reason); a replay numbers generations itself, so
a restarted recorder's (which counts from 1 again) never looks like the same connection.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal, TypeVar

from pydantic import ValidationError

from .._slots import slots_maker
from ..client import (
    FeedConnected,
    FeedDisconnected,
    FeedEvent,
    FeedListingEvent,
    FeedRemovalEvent,
)
from ..models import FeedListing, FeedRemoval, SetAside, decode_item

__all__ = [
    "FEED_KINDS",
    "decode_feed",
    "encode_feed",
    "event_time",
    "feed_fields",
    "feed_state",
    "listing_event",
    "removal_event",
]

_M = TypeVar("_M", FeedListing, FeedRemoval)

FEED_KINDS = ("new", "update", "removed", "up", "down")
"""The ``ev`` field of a ``feed`` record."""


def event_time(event: FeedEvent) -> float:
    """When ``event`` arrived (a listing or removal) or happened (a connection marker), on
    the feed client's clock."""
    if isinstance(event, FeedListingEvent | FeedRemovalEvent):
        return event.received_at
    return event.at


def _wire(model: FeedListing | FeedRemoval) -> dict[str, Any]:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True, exclude_defaults=True)


def feed_state(event: FeedConnected) -> dict[str, Any]:
    """A connection's fields as the ``up`` record and a segment's ``head`` carry them."""
    return {
        "gen": event.generation,
        "sid": event.sid,
        "games": list(event.games),
        "ping": [event.ping_interval, event.ping_timeout],
    }


def encode_feed(event: FeedEvent) -> dict[str, Any]:
    """The body of a ``feed`` record (without ``t`` and ``k``)."""
    if isinstance(event, FeedListingEvent):
        return {"ev": event.kind, "gen": event.generation, "item": _wire(event.listing)}
    if isinstance(event, FeedRemovalEvent):
        return {"ev": "removed", "gen": event.generation, "item": _wire(event.removal)}
    if isinstance(event, FeedConnected):
        return {"ev": "up", **feed_state(event)}
    if isinstance(event, FeedDisconnected):
        return {
            "ev": "down",
            "gen": event.generation,
            "reason": event.reason,
            "detail": event.detail,
        }
    raise TypeError(f"not a feed event: {event!r}")


def feed_fields(event: FeedEvent) -> str:
    """:func:`encode_feed`'s body as JSON members (``"ev":"new","gen":1,"item":{...}``),
    the same bytes ``json.dumps`` would give, with a listing serialised by pydantic-core
    (several times faster: the recorder's hot path in the feed's bursts)."""
    if isinstance(event, FeedListingEvent | FeedRemovalEvent):
        model = event.listing if isinstance(event, FeedListingEvent) else event.removal
        kind = event.kind if isinstance(event, FeedListingEvent) else "removed"
        item = model.model_dump_json(by_alias=True, exclude_none=True, exclude_defaults=True)
        return f'"ev":"{kind}","gen":{int(event.generation)},"item":{item}'
    return json.dumps(encode_feed(event), ensure_ascii=False, separators=(",", ":"))[1:-1]


class FeedRecordError(ValueError):
    """A ``feed`` record whose fields are not as documented (the caller adds file:line)."""


def decode_feed(body: Mapping[str, Any], t: float, *, generation: int) -> FeedEvent:
    """The event a ``feed`` record stores, arrived at ``t`` on connection ``generation``
    (the replay's own count). Raises :class:`FeedRecordError` naming the field at fault."""
    kind = body.get("ev")
    if kind == "new" or kind == "update":
        return listing_event(kind, body.get("item"), t, generation)
    if kind == "removed":
        return removal_event(body.get("item"), t, generation)
    if kind == "up":
        return connected_from(body, t, generation=generation)
    if kind == "down":
        reason, detail = body.get("reason"), body.get("detail", "")
        if not isinstance(reason, str) or not isinstance(detail, str):
            raise FeedRecordError("field reason: a 'down' record needs a reason text")
        return FeedDisconnected(generation, t, reason, detail)
    raise FeedRecordError(f"field ev: {kind!r} is not one of {', '.join(FEED_KINDS)}")


# A watched feed event's objects, made by their slots' setters (engine/_slots.py: 0.17 us
# an event against the frozen __init__'s 0.32 us)
_make_listing_event = slots_maker(
    FeedListingEvent, ("kind", "listing", "received_at", "generation")
)
_make_removal_event = slots_maker(FeedRemovalEvent, ("removal", "received_at", "generation"))
_VALIDATE_LISTING = FeedListing.__pydantic_validator__.validate_python
_VALIDATE_REMOVAL = FeedRemoval.__pydantic_validator__.validate_python


def listing_event(
    kind: Literal["new", "update"], item: Any, t: float, generation: int
) -> FeedListingEvent:
    """:func:`decode_feed` of a ``new`` or ``update`` record whose ``item`` is given (a
    watched feed event's hot path in the replay market)."""
    try:
        # The validator of the client's own per-item decode (decode_item), given the
        # values the record's line was read into rather than the same values written
        # back to JSON text and read again (that round trip was a third of a watched
        # event's cost in the replay market). A record is what the live decode made of
        # the wire (its model dumped), so both read it alike. Not an object, or refused:
        # the full way says why.
        listing = _VALIDATE_LISTING(item) if type(item) is dict else _item(FeedListing, item, kind)
    except ValidationError:
        listing = _item(FeedListing, item, kind)
    return _make_listing_event(kind, listing, t, generation)


def removal_event(item: Any, t: float, generation: int) -> FeedRemovalEvent:
    """:func:`decode_feed` of a ``removed`` record whose ``item`` is given."""
    try:
        removal = (
            _VALIDATE_REMOVAL(item) if type(item) is dict else _item(FeedRemoval, item, "removed")
        )
    except ValidationError:
        removal = _item(FeedRemoval, item, "removed")
    return _make_removal_event(removal, t, generation)


def connected_from(state: Mapping[str, Any], t: float, *, generation: int) -> FeedConnected:
    """A :class:`FeedConnected` from an ``up`` record or a ``head``'s ``feed`` state."""
    sid, games, ping = state.get("sid", ""), state.get("games", []), state.get("ping")
    if not isinstance(sid, str):
        raise FeedRecordError("field sid: not a text")
    if not isinstance(games, list) or not all(isinstance(g, str) for g in games):
        raise FeedRecordError("field games: not a list of game names")
    if (
        not isinstance(ping, list)
        or len(ping) != 2
        or not all(isinstance(p, int | float) and not isinstance(p, bool) for p in ping)
    ):
        raise FeedRecordError("field ping: not [pingInterval, pingTimeout] in seconds")
    return FeedConnected(generation, t, sid, tuple(games), float(ping[0]), float(ping[1]))


def _item(model: type[_M], item: Any, kind: str) -> _M:
    """``item`` as ``model`` the slow way: the client's own decode, as the live feed reads
    an event, naming the field it refuses."""
    if not isinstance(item, dict):
        raise FeedRecordError(f"field item: a {kind!r} record needs the listing as an object")
    try:
        return model.__pydantic_validator__.validate_python(item)  # type: ignore[no-any-return]
    except ValidationError:
        pass
    decoded = decode_item(model, json.dumps(item), path=f"feed.{kind}")
    if isinstance(decoded, SetAside):
        raise FeedRecordError(f"field item.{decoded.field}: {decoded.reason}")
    return decoded
