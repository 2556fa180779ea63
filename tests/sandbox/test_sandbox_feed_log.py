"""The market's change log, the sans-I/O source of the live feed: pure and synchronous."""

from __future__ import annotations

import pytest

from engine.sandbox import Market, MarketConfig
from engine.sandbox._market import ChangeLog

START = 1_767_225_600.0


def _market(size: int = 300) -> Market:
    return Market(seed=9, start=START, config=MarketConfig(size=size))


def test_the_log_tells_every_change_the_market_plays_and_nothing_before() -> None:
    market = _market()
    before = {item_id: listing.price for item_id, listing in market.listings.items()}
    cursor = market.changes.cursor
    assert cursor == 0  # the starting listings are the present, not news
    market.advance_to(START + 6 * 3600)
    changes, cursor, lost = market.changes.read(cursor)
    assert lost == 0
    assert cursor == len(changes)
    # replaying the log over the starting state gives exactly the market's state now
    state = dict(before)
    for change in changes:
        item_id = change.listing.item_id
        if change.kind == "removed":
            assert state.pop(item_id) == change.price
        elif change.kind == "new":
            assert item_id not in state
            state[item_id] = change.price
        else:
            assert item_id in state
            state[item_id] = change.price
    assert state == {item_id: listing.price for item_id, listing in market.listings.items()}
    assert [c.at for c in changes] == sorted(c.at for c in changes)


def test_reading_the_log_does_not_change_what_the_market_does() -> None:
    read, unread = _market(), _market()
    cursor = read.changes.cursor
    for hour in range(1, 7):
        read.advance_to(START + hour * 3600)
        _, cursor, _ = read.changes.read(cursor)
    unread.advance_to(START + 6 * 3600)
    assert {i: li.price for i, li in read.listings.items()} == {
        i: li.price for i, li in unread.listings.items()
    }


def test_a_listing_a_buy_order_takes_on_arrival_is_never_told() -> None:
    market = _market()
    taken: list[int] = []

    def take_every_other(listing: object) -> bool:
        taken.append(getattr(listing, "item_id", 0))
        return len(taken) % 2 == 0

    market.on_arrival = take_every_other
    start = market.changes.cursor
    market.advance_to(START + 3 * 3600)
    changes, _, _ = market.changes.read(start)
    told = {c.listing.item_id for c in changes if c.kind == "new"}
    assert taken[1::2]
    assert told.isdisjoint(taken[1::2])
    assert set(taken[0::2]) <= told


def test_a_purchase_removal_is_told_at_the_price_it_left() -> None:
    market = _market()
    listing = next(iter(market.listings.values()))
    start = market.changes.cursor
    market.remove(listing.item_id)
    changes, _, _ = market.changes.read(start)
    assert [(c.kind, c.listing.item_id, c.price) for c in changes] == [
        ("removed", listing.item_id, listing.price)
    ]


@pytest.mark.parametrize(
    ("capacity", "written", "cursor", "told", "lost"),
    [
        (4, 3, 0, 3, 0),  # all kept
        (4, 6, 0, 4, 2),  # fell behind: the oldest two are gone and counted
        (4, 6, 3, 3, 0),  # reading from the middle
        (4, 6, 6, 0, 0),  # up to date
        (1, 5, 2, 1, 2),
    ],
)
def test_the_log_keeps_the_newest_and_counts_what_a_reader_lost(
    capacity: int, written: int, cursor: int, told: int, lost: int
) -> None:
    log = ChangeLog(capacity)
    listing = next(iter(_market(5).listings.values()))
    for n in range(written):
        log.record("update", START + n, listing, 100 + n)
    changes, after, missed = log.read(cursor)
    assert (len(changes), after, missed) == (told, written, lost)
    assert [c.seq for c in changes] == list(range(written - told, written))


def test_the_log_wakes_its_reader_on_every_change() -> None:
    log = ChangeLog()
    woken: list[int] = []
    log.on_record = lambda: woken.append(log.cursor)
    listing = next(iter(_market(5).listings.values()))
    log.record("new", START, listing, 10)
    log.record("removed", START + 1, listing, 10)
    assert woken == [1, 2]
