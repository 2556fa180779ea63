"""What searches showed, kept so the feed's later events need no search (``_known.py``),
and the priority lane's flags as the feed withdraws them (``SearchSchedule.unflag``):
pure, table-driven."""

from __future__ import annotations

from typing import Any

import pytest

from engine.models import Listing
from engine.sniper._known import BEYOND_FOR, RELIST_WINDOW, KnownListings
from engine.sniper._schedule import SearchSchedule
from engine.testing import make_listing

T0 = 1_000.0
FRESH = 300.0
TITAN = {"name": "Titan (Holo)", "price": 90_000, "wear": 0.2, "slot": 3, "image": "t.png"}
CROWN = {"name": "Crown (Foil)", "price": 900, "wear": None, "slot": 0, "image": "c.png"}


def searched(**fields: Any) -> Listing:
    """A search's listing of item 7: stickers with their details, a paint seed."""
    stickers = fields.pop("stickers", [TITAN, CROWN])
    return make_listing(
        item_id=fields.pop("item_id", "7"),
        stickers=stickers,
        sticker_names=[s["name"] for s in stickers],
        paintseed=661,
        **fields,
    )


def told(names: list[str], **fields: Any) -> Listing:
    """The feed's event of item 7: names only, its own (newer) price."""
    return make_listing(item_id="7", sticker_names=names, price=fields.pop("price", 8_000))


@pytest.mark.parametrize(
    ("events", "at", "names", "reused"),
    [
        ([], T0 + 10, ["Titan (Holo)", "Crown (Foil)"], True),
        ([], T0 + 10, ["Crown (Foil)", "Titan (Holo)"], True),  # another order
        ([], T0 + FRESH, ["Titan (Holo)", "Crown (Foil)"], True),
        ([], T0 + FRESH + 1, ["Titan (Holo)", "Crown (Foil)"], False),  # prices too old
        ([], T0 + 10, ["Crown (Foil)"], False),  # a sticker scraped: the item changed
        ([], T0 + 10, [], False),
        ([("removed", T0 + 5)], T0 + 5 + RELIST_WINDOW, ["Titan (Holo)", "Crown (Foil)"], True),
        ([("removed", T0 + 5)], T0 + 6 + RELIST_WINDOW, ["Titan (Holo)", "Crown (Foil)"], False),
    ],
    ids=[
        "update",
        "names-in-another-order",
        "at-the-freshness-limit",
        "stale",
        "names-changed",
        "stickers-gone",
        "relisted-in-time",
        "relisted-late",
    ],
)
def test_an_event_is_decided_on_what_a_search_showed_while_it_holds(
    events: list[tuple[str, float]], at: float, names: list[str], reused: bool
) -> None:
    known = KnownListings(fresh_for=FRESH)
    known.saw([searched()], T0)
    for kind, when in events:
        assert kind == "removed"
        known.removed("7", when)
    shown = known.enrich(told(names), at)
    assert (shown is not None) is reused
    if shown is not None:
        # the search's stickers and details, the event's own price
        assert [s.name for s in shown.stickers] == ["Titan (Holo)", "Crown (Foil)"]
        assert shown.stickers[0].wear == 0.2
        assert shown.stickers[0].slot == 3
        assert (shown.price, shown.paintseed) == (8_000, 661)
        assert known.reused == 1
    else:
        assert known.enrich(told(names), at) is None  # not kept once it failed


def test_an_item_never_searched_is_not_known() -> None:
    known = KnownListings(fresh_for=FRESH)
    known.saw([searched()], T0)
    assert known.enrich(make_listing(item_id="8", sticker_names=[]), T0) is None


@pytest.mark.parametrize(
    ("fresh_for", "at", "prices"),
    [
        (FRESH, T0, {"Titan (Holo)": 90_000, "Crown (Foil)": 900, "Hello": 0}),
        (FRESH, T0 + FRESH, {"Titan (Holo)": 90_000, "Crown (Foil)": 900, "Hello": 0}),
        (FRESH, T0 + FRESH + 1, {}),
        (0.0, T0, {}),  # off: nothing kept
    ],
)
def test_stickers_prices_are_known_as_long_as_they_are_fresh(
    fresh_for: float, at: float, prices: dict[str, int]
) -> None:
    known = KnownListings(fresh_for=fresh_for)
    hello = {"name": "Hello", "price": 0, "wear": None, "slot": 1}  # not on sale: 0
    known.saw([searched(), searched(item_id="9", stickers=[hello])], T0)
    assert dict(known.sticker_prices(at)) == prices


def test_a_later_search_refreshes_a_price() -> None:
    known = KnownListings(fresh_for=FRESH)
    known.saw([searched()], T0)
    dearer = {**CROWN, "price": 5_000}
    known.saw([searched(item_id="9", stickers=[dearer])], T0 + 200)
    prices = known.sticker_prices(T0 + 400)
    assert dict(prices) == {"Crown (Foil)": 5_000}  # Titan's is too old by then


def test_memory_is_bounded_oldest_first() -> None:
    known = KnownListings(fresh_for=FRESH, limit=3)
    for i in range(5):
        known.saw([searched(item_id=str(i))], T0 + i)
    assert len(known) == 3
    assert known.enrich(told(["Titan (Holo)", "Crown (Foil)"]), T0 + 5) is None  # id 7: never
    first = make_listing(item_id="0", sticker_names=["Titan (Holo)", "Crown (Foil)"])
    last = make_listing(item_id="4", sticker_names=["Titan (Holo)", "Crown (Foil)"])
    assert known.enrich(first, T0 + 5) is None
    assert known.enrich(last, T0 + 5) is not None


@pytest.mark.parametrize(
    ("flags", "withdrawn", "still_flagged"),
    [
        ([("a", "confirm")], [("a", "confirm")], set()),
        ([("a", "confirm"), ("a", "")], [("a", "confirm")], {"a"}),  # the snapshot's too
        ([("a", "")], [("a", "confirm")], {"a"}),
        ([("a", "confirm"), ("b", "confirm")], [("a", "confirm")], {"b"}),
        ([], [("a", "confirm")], set()),
    ],
    ids=["only-the-feed", "also-another-source", "another-source-only", "other-name", "none"],
)
def test_a_flag_is_withdrawn_only_when_nobody_else_put_it(
    flags: list[tuple[str, str]], withdrawn: list[tuple[str, str]], still_flagged: set[str]
) -> None:
    schedule = SearchSchedule(batch_size=50)
    schedule.watch({"a", "b", "c"})
    for name, source in flags:
        schedule.flag(name, promise=1, at=T0, source=source)
    for name, source in withdrawn:
        schedule.unflag(name, source=source)
    assert set(schedule.next_batch(flagged_only=True)) == (still_flagged or {"a", "b", "c"})
    assert schedule.hot_count == len(still_flagged)


@pytest.mark.parametrize(("flagged_only", "batch"), [(False, ("b", "a", "c")), (True, ("b",))])
def test_a_batch_for_flagged_names_can_leave_the_stale_ones_out(
    flagged_only: bool, batch: tuple[str, ...]
) -> None:
    schedule = SearchSchedule(batch_size=50)
    schedule.watch({"a", "b", "c"})
    schedule.flag("b", promise=1, at=T0)
    assert schedule.next_batch(flagged_only=flagged_only) == batch


def answer(count: int) -> dict[str, list[Listing]]:
    """A search's answer for name ``n``: ``count`` listings at $1.00, $1.01..."""
    return {"n": [make_listing(item_id=str(i), price=1_000 + 10 * i) for i in range(count)]}


@pytest.mark.parametrize(
    ("shown", "price", "at", "beyond"),
    [
        (50, 1_491, T0 + 1, True),  # dearer than the 50 cheapest shown a second ago
        (50, 1_490, T0 + 1, False),  # as dear as the dearest shown: it could be shown
        (50, 1_491, T0 + BEYOND_FOR, True),
        (50, 1_491, T0 + BEYOND_FOR + 1, False),  # the cheapest may have moved since
        (49, 5_000, T0 + 1, False),  # not full: every listing of the name was shown
    ],
    ids=["dearer", "as-dear", "at-the-limit", "too-old", "not-full"],
)
def test_a_listing_dearer_than_a_full_answer_just_seen_is_beyond_its_search(
    shown: int, price: int, at: float, beyond: bool
) -> None:
    known = KnownListings(fresh_for=FRESH)
    known.saw_answer(answer(shown), T0)
    assert known.beyond("n", price, at) is beyond
    assert known.beyond("other", price, at) is False
