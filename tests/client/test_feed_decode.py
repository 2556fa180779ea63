"""The feed client's hot path against its general one, frame by frame: the compact
Socket.IO framing against the general parser, the models' validators called straight
against ``decode_item``, on real-looking frames with the wire's variants (wire-notes.md,
"The public listing feed"); odd frames set aside and counted, never decoded. Synchronous:
``FeedClient._event`` does no I/O."""

from __future__ import annotations

import json
from datetime import datetime

import pytest

from engine import VirtualClock
from engine.client import FeedClient, FeedListingEvent, FeedRemovalEvent, _eio
from engine.models import FeedListing, FeedRemoval, SetAside, decode_item

KNIFE = "★ StatTrak™ Survival Knife | Doppler Phase 1 (Factory New)"


def frame(name: str, payload: dict[str, object]) -> str:
    return "42" + json.dumps([name, payload], ensure_ascii=False, separators=(",", ":"))


def epoch(text: str) -> int:
    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp())


RECORDED = {  # the recorded frame of wire-notes.md
    "auto": True,
    "float": 0.0041,
    "game": "csgo",
    "item_id": "53862560251",
    "name": KNIFE,
    "paint_index": 418,
    "phase": "Phase 1",
    "price": 222809,
    "platform_price": 249929,
    "sticker_names": None,
}

# frame -> fields the engine reads, as it must see them
LISTINGS: dict[str, tuple[str, dict[str, object]]] = {
    "recorded": (
        frame("new", RECORDED),
        {"price": 222809, "platform_price": 249929, "phase": "Phase 1", "sticker_names": ()},
    ),
    "numeric-string platform_price": (
        frame("update", {**RECORDED, "platform_price": "249929"}),
        {"platform_price": 249929},
    ),
    "numeric-string price": (
        frame("update", {**RECORDED, "price": "199000"}),
        {"price": 199000},
    ),
    "null classid and instance_id": (
        frame("new", {**RECORDED, "classid": None, "instance_id": None, "platform_id": "7656"}),
        {"classid": None, "instance_id": None, "platform_id": "7656"},
    ),
    "phase empty": (
        frame("new", {**RECORDED, "name": "AK-47 | Redline (Field-Tested)", "phase": ""}),
        {"phase": None, "name": "AK-47 | Redline (Field-Tested)"},
    ),
    "stickers named": (
        frame("new", {**RECORDED, "sticker_names": ["Sticker | ZywOo (Glitter) | Paris 2023"]}),
        {"sticker_names": ("Sticker | ZywOo (Glitter) | Paris 2023",)},
    ),
    "trade-locked": (
        frame(
            "new",
            {
                **RECORDED,
                "unlock_at": "2026-10-07T21:00:00Z",
                "send_until": "2026-10-08T21:00:00Z",
            },
        ),
        {
            "unlock_at": epoch("2026-10-07T21:00:00Z"),
            "send_until": epoch("2026-10-08T21:00:00Z"),
            "trade_locked": True,
        },
    ),
    "numbers as ids, an unknown field": (
        frame("new", {**RECORDED, "item_id": 53862560251, "classid": 77, "shiny": {"a": 1}}),
        {"item_id": "53862560251", "classid": "77"},
    ),
    "a float that is whole, no paint index": (
        frame("new", {**{k: v for k, v in RECORDED.items() if k != "paint_index"}, "float": 0}),
        {"float_value": 0.0, "paintindex": None},
    ),
}


def client() -> FeedClient:
    return FeedClient("http://127.0.0.1:9", games=["csgo"], clock=VirtualClock())


@pytest.mark.parametrize("name", list(LISTINGS))
def test_a_listing_frame_reads_the_same_both_ways(name: str) -> None:
    text, expected = LISTINGS[name]
    packet = _eio.parse(text)
    assert packet == _eio._parse_socketio(text)  # the compact path, the general one
    assert isinstance(packet, _eio.SioEvent)
    assert packet.payload is not None
    assert _eio.event_parts(text) == (packet.name, packet.payload)
    feed = client()
    event = feed._event(packet.name, packet.payload, 5.0, 3)
    assert isinstance(event, FeedListingEvent)
    assert (event.kind, event.received_at, event.generation) == (packet.name, 5.0, 3)
    slow = decode_item(FeedListing, packet.payload, path="feed.new")
    assert isinstance(slow, FeedListing)
    assert event.listing == slow
    assert event.listing.model_dump() == slow.model_dump()
    for field, value in expected.items():
        assert getattr(event.listing, field) == value, field
    assert isinstance(event.listing.price, int)
    assert feed.health().events[packet.name] == 1
    assert feed.health().set_aside == {}


def test_a_removal_reads_the_same_both_ways() -> None:
    text = frame("removed", {"game": "csgo", "item_id": "9", "name": KNIFE, "price": "1200"})
    packet = _eio.parse(text)
    assert packet == _eio._parse_socketio(text)
    assert isinstance(packet, _eio.SioEvent)
    assert packet.payload is not None
    event = client()._event(packet.name, packet.payload, 1.0, 1)
    assert isinstance(event, FeedRemovalEvent)
    assert event.removal == decode_item(FeedRemoval, packet.payload, path="feed.removed")
    assert (event.removal.item_id, event.removal.price) == ("9", 1200)


# frame -> the field the set-aside counter names
ODD = {
    "a price that is not money": (frame("new", {**RECORDED, "price": "12 USD"}), "price"),
    "no item_id": (frame("new", {"name": "x", "price": 1}), "item_id"),
    "an empty item_id": (frame("update", {**RECORDED, "item_id": ""}), "item_id"),
    "a time that is not one": (frame("new", {**RECORDED, "unlock_at": "soon"}), "unlock_at"),
    "a payload that is not JSON": ('42["new",{"item_id":]', "(json)"),
    "a payload that is not an object": ('42["new",[1,2]]', "(item)"),
    "a removal without its id": (frame("removed", {"name": "x", "price": 1}), "item_id"),
    "no payload": ('42["new"]', "(item)"),
    "an event the feed does not send": (frame("sold", {"item_id": "9"}), "(event name)"),
}


@pytest.mark.parametrize("name", list(ODD))
def test_an_odd_event_is_set_aside_counted_and_told(name: str) -> None:
    text, field = ODD[name]
    feed = client()
    told: list[tuple[str, SetAside]] = []
    feed.malformed_observer = lambda endpoint, item: told.append((endpoint, item))
    packet = _eio.parse(text)
    assert isinstance(packet, _eio.SioEvent)
    assert feed._event(packet.name, packet.payload, 1.0, 1) is None
    health = feed.health()
    assert health.set_aside == {field: 1}
    assert health.events_received == 0
    assert [(endpoint, item.field) for endpoint, item in told] == [("feed", field)]
    if packet.payload is not None and packet.name in ("new", "update"):
        # the reason is decode_item's, as for every other answer's item
        assert told[0][1] == decode_item(FeedListing, packet.payload, path=f"feed.{packet.name}")
    # the next good event is read as ever
    good = _eio.parse(LISTINGS["recorded"][0])
    assert isinstance(good, _eio.SioEvent)
    assert isinstance(feed._event(good.name, good.payload, 2.0, 1), FeedListingEvent)


@pytest.mark.parametrize(
    "text",
    [
        '42["new" ,{"item_id":"1"}]',  # a space: the general path
        '42["ne\\"w",{"item_id":"1"}]',  # an escape in the name
        '42["new",{"item_id":"1"} ]',
        '421["new",{"item_id":"1"}]',  # an acknowledgement id
        '42/feed,["new",{"item_id":"1"}]',  # another namespace
        '42["new"]',
        '42["",{}]',
        '42["new",{"a":1},{"b":2}]',  # two arguments
        '42["new",{"item_id":"1"}',  # cut short
    ],
)
def test_the_compact_framing_agrees_with_the_general_one(text: str) -> None:
    assert _eio.parse(text) == _eio._parse_socketio(text)
    parts = _eio.event_parts(text)
    if parts is not None:  # the compact path reads it: as the general one does
        assert _eio.SioEvent(*parts) == _eio._parse_socketio(text)
