"""The change detector: new listings and price drops as events; the rest counted."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from snapshot_support import parse

from engine.snapshot import (
    NameSummary,
    NewListing,
    PriceDrop,
    Snapshot,
    SnapshotTracker,
    diff_snapshots,
)

AK = "AK-47 | Redline (Field-Tested)"
DOPPLER = "★ Karambit | Doppler Phase 2 (Factory New)"
Rows = list[tuple[str, str, int | None]]


def snap(rows: Rows, *, hold: dict[str, tuple[int, int]] | None = None) -> Snapshot:
    hold = hold or {}
    lines = ["item_id,name,price,unlock_at,send_until\n"]
    for item_id, name, price in rows:
        unlock, send = hold.get(item_id, ("", ""))
        lines.append(
            f"{item_id},{name},{'' if price is None else f'{price:012d}'},{unlock},{send}\n"
        )
    return parse("".join(lines))


Counts = tuple[int, int, int, int, int, int]  # new, dropped, raised, removed, unchanged, unpriced


@pytest.mark.parametrize(
    ("previous", "current", "events", "counts"),
    [
        pytest.param(
            [("1", AK, 100)],
            [("1", AK, 100)],
            [],
            (0, 0, 0, 0, 1, 0),
            id="unchanged",
        ),
        pytest.param(
            [("1", AK, 100)],
            [("1", AK, 100), ("2", DOPPLER, 5000)],
            [NewListing("2", DOPPLER, 5000)],
            (1, 0, 0, 0, 1, 0),
            id="new",
        ),
        pytest.param(
            [("1", AK, 100)],
            [("1", AK, 90)],
            [PriceDrop("1", AK, 100, 90)],
            (0, 1, 0, 0, 0, 0),
            id="drop",
        ),
        pytest.param(
            [("1", AK, 100)],
            [("1", AK, 110)],
            [],
            (0, 0, 1, 0, 0, 0),
            id="raise",
        ),
        pytest.param(
            [("1", AK, 100), ("2", AK, 100)],
            [("2", AK, 100)],
            [],
            (0, 0, 0, 1, 1, 0),
            id="removed",
        ),
        pytest.param(
            [("1", AK, None)],
            [("1", AK, 80)],
            [NewListing("1", AK, 80)],
            (1, 0, 0, 0, 0, 0),
            id="price-becomes-known",
        ),
        pytest.param(
            [("1", AK, 80)],
            [("1", AK, None), ("2", AK, None)],
            [],
            (0, 0, 0, 0, 0, 2),
            id="price-becomes-unknown",
        ),
        pytest.param(
            [("1", AK, None)],
            [("1", AK, None)],
            [],
            (0, 0, 0, 0, 0, 1),
            id="unknown-stays-unknown",
        ),
        pytest.param(
            [("5", AK, 100), ("6", AK, 100), ("7", AK, 100), ("8", AK, 100)],
            [("9", AK, 1), ("8", AK, 100), ("6", AK, 99), ("5", AK, 101)],
            [NewListing("9", AK, 1), PriceDrop("6", AK, 100, 99)],
            (1, 1, 1, 1, 1, 0),
            id="all-at-once-in-another-order",
        ),
        pytest.param(
            [("1", AK, 100), ("1", AK, 50)],
            [("1", AK, 60)],
            [],
            (0, 0, 1, 0, 0, 0),
            id="duplicate-id-before-last-row-counts",
        ),
        pytest.param(
            [("1", AK, 100)],
            [("1", AK, 90), ("1", AK, 95)],
            [PriceDrop("1", AK, 100, 90), PriceDrop("1", AK, 100, 95)],
            (0, 2, 0, 0, 0, 0),
            id="duplicate-id-now-each-row-judged",
        ),
        pytest.param(
            [("10", AK, 100), ("11", AK, 100)],
            [("10", AK, 90), ("x-1", AK, 5)],
            [PriceDrop("10", AK, 100, 90), NewListing("x-1", AK, 5)],
            (1, 1, 0, 1, 0, 0),
            id="ids-turn-to-text",
        ),
        pytest.param(
            [("x-1", AK, 100), ("10", AK, 100)],
            [("10", AK, 90), ("11", AK, 5)],
            [PriceDrop("10", AK, 100, 90), NewListing("11", AK, 5)],
            (1, 1, 0, 1, 0, 0),
            id="ids-turn-to-numbers",
        ),
    ],
)
def test_events_and_counts(previous: Rows, current: Rows, events: list, counts: Counts) -> None:
    changes = diff_snapshots(snap(previous), snap(current))
    assert list(changes) == events
    assert len(changes) == len(events)
    got = (
        changes.new,
        changes.dropped,
        changes.raised,
        changes.removed,
        changes.unchanged,
        changes.unpriced,
    )
    assert got == counts
    assert not changes.first


def test_events_carry_trade_lock_times() -> None:
    previous = snap([("1", AK, 100)])
    current = snap(
        [("1", AK, 90), ("2", AK, 5)],
        hold={"1": ("1796000000", "1796600000"), "2": ("1796000001", "1796600001")},
    )
    assert list(diff_snapshots(previous, current)) == [
        PriceDrop("1", AK, 100, 90, 1796000000, 1796600000),
        NewListing("2", AK, 5, 1796000001, 1796600001),
    ]


@pytest.mark.parametrize(
    ("report_all", "events"),
    [
        (False, []),
        (True, [NewListing("1", AK, 100), NewListing("3", DOPPLER, 7)]),
    ],
)
def test_first_snapshot_reports_everything_only_when_asked(report_all: bool, events: list) -> None:
    current = snap([("1", AK, 100), ("2", AK, None), ("3", DOPPLER, 7)])
    changes = diff_snapshots(None, current, report_all=report_all)
    assert changes.first
    assert list(changes) == events
    assert (changes.new, changes.unpriced, changes.removed) == (2, 1, 0)


def test_summary_per_name_cheapest_first() -> None:
    previous = snap([("1", AK, 100), ("2", DOPPLER, 9000), ("3", "M4", 50)])
    current = snap(
        [("1", AK, 95), ("4", AK, 120), ("2", DOPPLER, 8000), ("5", DOPPLER, 8500), ("3", "M4", 60)]
    )
    changes = diff_snapshots(previous, current)
    assert changes.by_name == {
        AK: NameSummary(AK, new=1, drops=1, cheapest=95),
        DOPPLER: NameSummary(DOPPLER, new=1, drops=1, cheapest=8000),
    }
    assert [s.name for s in changes.names_cheapest_first()] == [AK, DOPPLER]


def test_tracker_follows_the_market_poll_after_poll() -> None:
    tracker = SnapshotTracker()
    assert list(tracker.update(snap([("1", AK, 100), ("2", AK, 200)]))) == []
    second = tracker.update(snap([("1", AK, 90), ("3", AK, 300)]))
    assert list(second) == [PriceDrop("1", AK, 100, 90), NewListing("3", AK, 300)]
    assert second.removed == 1
    # Compared with the second snapshot now, not the first: 1 at 90 is no news.
    third = tracker.update(snap([("1", AK, 90), ("2", AK, 200), ("3", AK, 250)]))
    assert list(third) == [NewListing("2", AK, 200), PriceDrop("3", AK, 300, 250)]
    assert (third.unchanged, third.removed) == (1, 0)
    assert len(tracker) == 3


def test_tracker_stays_right_after_most_ids_go() -> None:
    tracker = SnapshotTracker()
    tracker.update(snap([(str(n), AK, 100) for n in range(100)]))
    few = tracker.update(snap([(str(n), AK, 100) for n in range(10)]))  # starts afresh inside
    assert few.removed == 90
    back = tracker.update(snap([(str(n), AK, 100 if n < 10 else 1) for n in range(20)]))
    assert [e.item_id for e in back] == [str(n) for n in range(10, 20)]
    assert back.unchanged == 10


def _model(previous: Rows, current: Rows) -> tuple[list, Counts]:
    """The same rules written the obvious way, one Python object per row."""
    before = {item_id: price for item_id, _, price in previous}
    now_ids = {item_id for item_id, _, _ in current}
    events: list = []
    new = dropped = raised = unchanged = unpriced = 0
    for item_id, name, price in current:
        old = before.get(item_id)
        if price is None:
            unpriced += 1
        elif old is None:
            new += 1
            events.append(NewListing(item_id, name, price))
        elif price < old:
            dropped += 1
            events.append(PriceDrop(item_id, name, old, price))
        elif price > old:
            raised += 1
        else:
            unchanged += 1
    removed = len(set(before) - now_ids)
    return events, (new, dropped, raised, removed, unchanged, unpriced)


_ids = st.sampled_from([str(n) for n in range(12)] + ["x1", "x2"])
_rows = st.lists(
    st.tuples(_ids, st.sampled_from([AK, DOPPLER]), st.none() | st.integers(0, 5)),
    max_size=12,
    unique_by=lambda row: row[0],
)


@settings(max_examples=200, deadline=None)
@given(polls=st.lists(_rows, min_size=2, max_size=5))
def test_tracker_agrees_with_the_obvious_model(polls: list[Rows]) -> None:
    tracker = SnapshotTracker()
    tracker.update(snap(polls[0]))
    for previous, current in itertools.pairwise(polls):
        changes = tracker.update(snap(current))
        events, counts = _model(previous, current)
        assert list(changes) == events
        got = (
            changes.new,
            changes.dropped,
            changes.raised,
            changes.removed,
            changes.unchanged,
            changes.unpriced,
        )
        assert got == counts
