"""The queue of feed listings waiting for their confirming search: pure, table-driven."""

from __future__ import annotations

import gc
from types import SimpleNamespace
from typing import Any

import pytest

from engine.models import FeedListing, Listing
from engine.sniper._confirm import BEYOND, GONE, Candidate, ConfirmQueue

NAME = "AK-47 | Redline (Field-Tested)"


def listing(item_id: int, price: int, name: str = NAME) -> Listing:
    return Listing.model_validate({"item_id": str(item_id), "name": name, "price": price})


def candidate(item_id: int, price: int, name: str = NAME) -> Candidate:
    return Candidate(listing(item_id, price, name), 0.0, ())


SHOWN_FULL = [listing(i, 1_000 + i) for i in range(50)]  # the 50 cheapest: 1,000..1,049


@pytest.mark.parametrize(
    ("answer", "price", "item_id", "outcome"),
    [
        ({NAME: SHOWN_FULL}, 1_010, 10, "found"),  # shown, by item id
        ({NAME: SHOWN_FULL}, 5_000, 99, BEYOND),  # dearer than the 50 shown
        ({NAME: SHOWN_FULL}, 1_049, 99, BEYOND),  # as dear as the dearest shown: unknowable
        ({NAME: SHOWN_FULL}, 1_020, 99, GONE),  # cheaper than the dearest shown: gone
        ({NAME: SHOWN_FULL[:49]}, 5_000, 99, GONE),  # under 50 shown: all of them, gone
        ({}, 1_000, 99, GONE),  # nothing of the name
        ({"other": [listing(99, 1_000, "other")]}, 1_000, 99, "found"),  # under another key
    ],
)
def test_settle_finds_by_item_id_or_says_why_not(
    answer: dict[str, list[Listing]], price: int, item_id: int, outcome: str
) -> None:
    queue = ConfirmQueue()
    queue.add(NAME, candidate(item_id, price))
    settled = queue.settle(queue.take([NAME]), answer)
    if outcome == "found":
        assert ([c.listing.item_id for c in settled.found], settled.skipped) == ([str(item_id)], [])
    else:
        assert settled.found == []
        assert [(c.listing.item_id, why) for c, why in settled.skipped] == [(str(item_id), outcome)]


def test_one_name_many_events_one_entry_and_a_retold_item_counts_once() -> None:
    queue = ConfirmQueue()
    assert queue.add(NAME, candidate(1, 100)) is True  # a new flag
    assert queue.add(NAME, candidate(2, 100)) is False  # rides along
    assert queue.add(NAME, candidate(1, 90)) is False  # re-told: its latest price
    taken = queue.take([NAME, "other"])
    assert [(c.listing.item_id, c.listing.price) for c in taken[NAME]] == [("2", 100), ("1", 90)]
    assert (len(queue), queue.waiting(NAME)) == (0, False)


def test_a_failed_search_puts_its_candidates_back_and_a_removal_drops_one() -> None:
    queue = ConfirmQueue()
    queue.add(NAME, candidate(1, 100))
    taken = queue.take([NAME])
    queue.add(NAME, candidate(2, 100))  # told while the request was on its way
    queue.put_back(taken)
    assert [c.listing.item_id for c in queue.take([NAME])[NAME]] == ["1", "2"]
    queue.put_back({NAME: [candidate(1, 100)]})
    assert queue.removed("1") is not None
    assert queue.removed("1") is None
    assert (len(queue), dict(queue.skipped)) == (0, {"removed": 1})


def feed_listing(item_id: int, price: int) -> FeedListing:
    return FeedListing.model_validate(
        {
            "item_id": str(item_id),
            "name": NAME,
            "price": price,
            "float": 0.07,
            "sticker_names": ["Crown (Foil)"],
            "game": "csgo",
            "classid": 310776,
            "unlock_at": 1767225600,
        }
    )


def rule(max_price: int) -> Any:
    return SimpleNamespace(max_price=max_price)  # what the queue reads of a compiled rule


def test_a_candidate_leaves_the_queue_as_it_was_told() -> None:
    queue = ConfirmQueue()
    rules = (rule(2_000), rule(1_500))
    told = [Candidate(feed_listing(1, 1_000), 12.5, rules), Candidate(listing(2, 900), 13.0, ())]
    for c in told:
        queue.add(NAME, c)
    assert queue.promise(NAME) == 1_000  # the best rule's ceiling less the price
    (back,) = queue.take([NAME]).values()
    assert back == told
    assert [type(c.listing) for c in back] == [FeedListing, Listing]
    assert back[0].listing.model_fields_set == told[0].listing.model_fields_set
    assert back[0].rules[0] is rules[0]


def test_waiting_candidates_cost_the_cyclic_collector_nothing() -> None:
    # the collector's full pass walks every object it tracks, holding the event loop: a
    # burst of thousands of candidates must not add thousands of objects to walk
    queue = ConfirmQueue()
    rules = (rule(5_000),)
    listings = [feed_listing(i, 1_000 + i) for i in range(2_000)]
    gc.collect()
    before = len(gc.get_objects())
    for x in listings:
        queue.add(NAME, Candidate(x, 1.0, rules))
    gc.collect()
    gc.collect()  # a tuple is untracked once the tuples it holds are: on the next pass
    assert len(gc.get_objects()) - before < 20
    assert len(queue) == 2_000
    assert queue.promise(NAME) == 4_000
