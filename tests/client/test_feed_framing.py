"""The feed's framing (Engine.IO 4 / Socket.IO 5) and its payload models, without I/O:
every frame the feed sends is read, every odd one is named rather than raised."""

from __future__ import annotations

import random

import pytest

from engine.client import Backoff
from engine.client._eio import (
    EioClose,
    EioIgnored,
    EioOpen,
    EioPing,
    Odd,
    Packet,
    SioConnect,
    SioConnectError,
    SioDisconnect,
    SioEvent,
    encode_event,
    parse,
    pong,
)
from engine.client._feed_events import EventRate
from engine.models import FeedListing, FeedRemoval, SetAside, decode_item

OPEN = '0{"sid":"abc","upgrades":[],"pingInterval":25000,"pingTimeout":20000,"maxPayload":1}'

READ: list[tuple[str, Packet]] = [
    (OPEN, EioOpen("abc", 25.0, 20.0)),
    ("2", EioPing()),
    ("2probe", EioPing("probe")),
    ("1", EioClose()),
    ("3", EioIgnored("pong")),
    ("6", EioIgnored("noop")),
    ("40", SioConnect("/", None)),
    ('40{"sid":"s1"}', SioConnect("/", "s1")),
    ("41", SioDisconnect("/")),
    ('44{"message":"not allowed"}', SioConnectError("/", "not allowed")),
    ('42["new",{"item_id":"1"}]', SioEvent("new", '{"item_id":"1"}')),
    ('42["handshake"]', SioEvent("handshake", None)),
    ('42[ "removed" , {"a":1} ]', SioEvent("removed", '{"a": 1}')),
    ('42/feed,["new",{"b":2}]', SioEvent("new", '{"b":2}', "/feed")),
    ('4217["update",{"c":3}]', SioEvent("update", '{"c":3}')),
    # a name with an escape goes the slow way, and still comes out right
    ('42["ne\\u0077",{"d":4}]', SioEvent("new", '{"d": 4}')),
]


@pytest.mark.parametrize(("frame", "packet"), READ, ids=[f for f, _ in READ])
def test_frames_the_feed_sends_are_read(frame: str, packet: Packet) -> None:
    assert parse(frame) == packet


ODD: list[tuple[str, str]] = [
    ("", "(frame)"),
    ("9", "(packet)"),
    ("4", "(packet)"),
    ("47", "(packet)"),
    ("0not json", "(open)"),
    ('0{"pingInterval":25000,"pingTimeout":20000}', "(open)"),
    ('0{"sid":"a","pingInterval":"soon","pingTimeout":20000}', "(open)"),
    ('0{"sid":"a","pingInterval":-5,"pingTimeout":20000}', "(open)"),
    ("0[]", "(open)"),
    ("40{oops", "(connect)"),
    ('42{"new":1}', "(event)"),
    ('42["new",{"x":1}', "(event)"),
    ("42[1,2]", "(event)"),
    ("42[]", "(event)"),
]


@pytest.mark.parametrize(("frame", "field"), ODD, ids=[f or "empty" for f, _ in ODD])
def test_an_odd_frame_is_named_not_raised(frame: str, field: str) -> None:
    packet = parse(frame)
    assert isinstance(packet, Odd)
    assert packet.field == field
    assert packet.excerpt == frame[:80]


def test_what_the_client_sends() -> None:
    assert encode_event("sub", {"name": "csgo"}) == '42["sub",{"name":"csgo"}]'
    assert pong(EioPing()) == "3"
    assert pong(EioPing("probe")) == "3probe"


LISTING = (
    '{"auto":true,"float":0.0041,"game":"csgo","item_id":"53862560251",'
    '"name":"★ StatTrak™ Survival Knife | Doppler Phase 1 (Factory New)","paint_index":418,'
    '"phase":"Phase 1","price":222809,"platform_price":"249929","sticker_names":null,'
    '"classid":null,"instance_id":"0","platform_id":76561198000000000,'
    '"unlock_at":"2026-10-07T21:00:00Z","send_until":"2026-10-08T21:00:00Z"}'
)


def test_a_feed_listing_reads_every_documented_field() -> None:
    listing = decode_item(FeedListing, LISTING, path="feed.new")
    assert isinstance(listing, FeedListing)
    assert (listing.item_id, listing.price, listing.platform_price) == (
        "53862560251",
        222809,
        249929,
    )
    assert (listing.game, listing.phase, listing.float_value) == ("csgo", "Phase 1", 0.0041)
    assert (listing.auto, listing.paintindex, listing.sticker_names) == (True, 418, ())
    assert (listing.classid, listing.instance_id, listing.platform_id) == (
        None,
        "0",
        "76561198000000000",
    )
    assert listing.trade_locked
    assert listing.unlock_at == 1791406800
    assert listing.send_until == 1791406800 + 86400


def test_no_phase_and_stickers_read_as_the_search_listings_do() -> None:
    text = (
        '{"item_id":"7","name":"AK-47 | Redline","price":"5000","phase":"","sticker_names":["a"]}'
    )
    listing = decode_item(FeedListing, text, path="feed.update")
    assert isinstance(listing, FeedListing)
    assert (listing.phase, listing.sticker_names, listing.price) == (None, ("a",), 5000)
    assert not listing.trade_locked


SET_ASIDE: list[tuple[type[FeedListing] | type[FeedRemoval], str, str, str | None]] = [
    (FeedListing, '{"name":"x","price":1}', "item_id", "name=x"),
    (FeedListing, '{"item_id":"","name":"x","price":1}', "item_id", "name=x"),
    (FeedListing, '{"item_id":"5","name":"x","price":"12 USD"}', "price", "item_id=5"),
    (
        FeedListing,
        '{"item_id":"5","name":"x","price":1,"unlock_at":"soon"}',
        "unlock_at",
        "item_id=5",
    ),
    (FeedListing, '{"item_id":"5","name":["x"],"price":1}', "name", "item_id=5"),
    (FeedListing, '{"item_id":"5"', "(json)", None),
    (FeedListing, '"just text"', "(item)", None),
    (FeedRemoval, '{"game":"csgo","name":"x","price":1}', "item_id", "name=x"),
    (FeedRemoval, '{"item_id":"9","price":"free"}', "price", "item_id=9"),
]


@pytest.mark.parametrize(("model", "text", "field", "key"), SET_ASIDE)
def test_an_unreadable_payload_is_set_aside_naming_its_field(
    model: type[FeedListing] | type[FeedRemoval], text: str, field: str, key: str | None
) -> None:
    result = decode_item(model, text, path="feed.x")
    assert isinstance(result, SetAside)
    assert (result.path, result.field, result.key) == ("feed.x", field, key)


def test_an_odd_informative_field_does_not_set_the_listing_aside() -> None:
    text = '{"item_id":"5","name":"x","price":1,"auto":"maybe","game":[1],"classid":{}}'
    listing = decode_item(FeedListing, text, path="feed.new")
    assert isinstance(listing, FeedListing)
    assert (listing.auto, listing.game, listing.classid) == (None, None, None)


def test_a_removal_reads_its_four_fields() -> None:
    removal = decode_item(
        FeedRemoval, '{"game":"csgo","item_id":123,"name":"x","price":"27867.5"}', path="f"
    )
    assert removal == FeedRemoval(item_id="123", game="csgo", name="x", price=27868)


BACKOFF: list[tuple[int, float, float]] = [
    (0, 0.25, 0.5),
    (1, 0.5, 1.0),
    (3, 2.0, 4.0),
    (6, 15.0, 30.0),  # capped
    (10_000, 15.0, 30.0),  # no overflow after a long outage
]


@pytest.mark.parametrize(("attempt", "low", "high"), BACKOFF)
def test_backoff_grows_to_its_cap_with_jitter(attempt: int, low: float, high: float) -> None:
    backoff = Backoff(initial=0.5, factor=2.0, cap=30.0)
    delays = [backoff.delay(attempt, random.Random(seed)) for seed in range(50)]
    assert all(low <= d <= high for d in delays)
    assert len(set(delays)) > 40  # jittered: clients do not come back in step


@pytest.mark.parametrize(
    "kwargs", [{"initial": 0}, {"initial": 5, "cap": 1}, {"factor": 0.5}, {"stable_after": -1}]
)
def test_a_backoff_that_cannot_work_is_refused(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="backoff"):
        Backoff(**kwargs)


def test_event_rate_counts_the_last_window() -> None:
    rate = EventRate(window=10)
    for i in range(100):
        rate.add(1000.0 + i * 0.1)  # 10 events a second for 10 s
    assert rate.per_second(1009.95) == pytest.approx(10.0)
    assert rate.per_second(1015.0) == pytest.approx(4.0)  # seconds 1006..1009 left in it
    assert rate.per_second(1030.0) == 0.0
