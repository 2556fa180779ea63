"""The cheap audit's judgement (``AuditBook``): a watched name is a suspect when the
service's ``GET /v1/prices`` row shows a price or a count the feed's events cannot explain,
and never for what the timing of the two pictures explains. Pure, table-driven."""

from __future__ import annotations

import gc
from collections.abc import Sequence

import pytest

from engine.sniper._auditbook import AuditBook, NameCount

A = "AK-47 | Redline (Field-Tested)"
B = "AWP | Asiimov (Field-Tested)"

# The base answer: asked at t=0, arrived at t=1; the next asked at t=300, arrived at t=301.
BASE = {A: NameCount(5, 10_000), B: NameCount(2, 50_000)}

Told = tuple[str | None, str, int | None, str, float]


def judge(told: Sequence[Told], rows: dict[str, NameCount]) -> list[tuple[str, str]]:
    book = AuditBook(skew=30.0, count_slack=1)
    assert book.judge(BASE, 0.0, 1.0) is None  # the first answer is only learnt
    for name, item, price, kind, at in told:
        book.told(name, item, price, kind, at)  # type: ignore[arg-type]
    suspects = book.judge(rows, 300.0, 301.0)
    assert suspects is not None
    return [(s.name, s.why) for s in suspects]


@pytest.mark.parametrize(
    ("told", "rows", "suspects"),
    [
        # nothing happened, nothing told
        ([], BASE, []),
        # a new listing told, cheaper than the base: the service agrees
        ([(A, "1", 9_000, "new", 100.0)], {A: NameCount(6, 9_000), B: BASE[B]}, []),
        # a cheaper listing the feed never told
        ([], {A: NameCount(6, 9_000), B: BASE[B]}, [(A, "cheaper")]),
        # ... told at a higher price than the service has now: a drop never told
        ([(A, "1", 9_500, "new", 100.0)], {A: NameCount(6, 9_000), B: BASE[B]}, [(A, "cheaper")]),
        # a price drop told as an update
        ([(A, "7", 8_000, "update", 100.0)], {A: NameCount(5, 8_000), B: BASE[B]}, []),
        # removals told: the count falls, the lowest may rise
        (
            [(A, "7", None, "removed", 100.0), (A, "8", None, "removed", 120.0)],
            {A: NameCount(3, 11_000), B: BASE[B]},
            [],
        ),
        # a removal that leaves the name out, of a listing told before under its name
        (
            [(B, "9", 60_000, "new", 50.0), (None, "9", None, "removed", 100.0)],
            BASE,
            [],
        ),
        # three listings the feed never told, dearer than the lowest: the count says so
        ([], {A: NameCount(8, 10_000), B: BASE[B]}, [(A, "count")]),
        # one is within the slack (a listing told twice, a rounding of the service)
        ([], {A: NameCount(6, 10_000), B: BASE[B]}, []),
        # three removals never told
        ([], {A: NameCount(2, 10_000), B: BASE[B]}, [(A, "count")]),
        # a name gone from the answer (no listing left) with its removals told
        (
            [(B, "1", None, "removed", 100.0), (B, "2", None, "removed", 100.0)],
            {A: BASE[A]},
            [],
        ),
        # ... and without
        ([], {A: BASE[A]}, [(B, "count")]),
        # a watched name that had no listing, now listed, never told
        (
            [],
            {**BASE, "M4A4 | Howl (Minimal Wear)": NameCount(1, 900_000)},
            [("M4A4 | Howl (Minimal Wear)", "cheaper")],
        ),
        # a duplicated and a re-ordered event count once
        (
            [(A, "1", 12_000, "new", 100.0), (A, "1", 12_000, "new", 100.5)],
            {A: NameCount(6, 10_000), B: BASE[B]},
            [],
        ),
        # out of order, as the wire may deliver them: an update before its new, an
        # update after its removal
        (
            [
                (A, "1", 12_000, "update", 100.0),
                (A, "1", 12_000, "new", 100.2),
                (A, "2", None, "removed", 150.0),
                (A, "2", 9_800, "update", 150.1),
            ],
            {A: NameCount(5, 9_800), B: BASE[B]},
            [],
        ),
        # ... but events apart in time are taken in their order: removals never told
        (
            [(A, "1", 12_000, "update", 100.0), (A, "1", 12_000, "update", 200.0)],
            {A: NameCount(3, 10_000), B: BASE[B]},
            [(A, "count")],
        ),
        # relisted after its removal (a removal is not a sale): one listing
        (
            [(A, "3", None, "removed", 100.0), (A, "3", 11_000, "new", 150.0)],
            {A: NameCount(5, 10_000), B: BASE[B]},
            [],
        ),
    ],
)
def test_a_name_is_suspect_only_when_the_feed_cannot_explain_its_row(
    told: list[Told], rows: dict[str, NameCount], suspects: list[tuple[str, str]]
) -> None:
    assert judge(told, rows) == suspects


@pytest.mark.parametrize(
    ("told", "rows"),
    [
        # told just before the base's request: the base may have it or not
        ([(A, "1", 9_000, "new", -20.0)], {A: NameCount(6, 9_000), B: BASE[B]}),
        # three listings told while the answer was on its way: they may not be in it yet
        (
            [(A, str(i), 12_000, "new", 290.0 + i) for i in range(3)],
            {A: NameCount(5, 10_000), B: BASE[B]},
        ),
        # three removals told just after the base's answer was made
        (
            [(A, str(i), None, "removed", 0.5) for i in range(3)],
            {A: NameCount(5, 10_000), B: BASE[B]},
        ),
    ],
)
def test_events_near_either_answer_are_a_tolerance_not_a_suspect(
    told: list[Told], rows: dict[str, NameCount]
) -> None:
    assert judge(told, rows) == []


def test_each_answer_becomes_the_next_base_and_old_events_are_forgotten() -> None:
    book = AuditBook(skew=30.0, count_slack=0)
    book.judge(BASE, 0.0, 1.0)
    book.told(A, "1", 9_000, "new", 100.0)
    assert book.judge({A: NameCount(6, 9_000), B: BASE[B]}, 300.0, 301.0) == []
    # the next round: the base is the last answer; the event of t=100 is long gone
    assert book.judge({A: NameCount(6, 9_000), B: BASE[B]}, 600.0, 601.0) == []
    suspects = book.judge({A: NameCount(7, 8_000), B: BASE[B]}, 900.0, 901.0)
    assert suspects is not None
    assert [(s.name, s.why, s.known_low, s.low) for s in suspects] == [(A, "cheaper", 9_000, 8_000)]


def test_events_told_after_the_clock_stepped_back_are_forgotten_by_their_own_time() -> None:
    # events are kept from a cut by time; told out of time order (a wall clock stepped
    # back), each is kept or forgotten by its own time, not by its place in the book
    book = AuditBook(skew=30.0, count_slack=1)
    book.judge(BASE, 0.0, 1.0)
    book.told(A, "1", 9_000, "new", 500.0)
    book.told(A, "2", 9_500, "new", 200.0)  # the clock stepped back
    assert book.judge({A: NameCount(7, 9_500), B: BASE[B]}, 300.0, 301.0) == []
    # the cut at 270 forgets the event of t=200 only: the price told at t=500 is known
    assert book.judge({A: NameCount(7, 9_000), B: BASE[B]}, 600.0, 601.0) == []


def test_a_reset_forgets_the_base() -> None:
    book = AuditBook()
    book.judge(BASE, 0.0, 1.0)
    book.reset()
    assert not book.has_base
    assert book.judge({A: NameCount(50, 1)}, 300.0, 301.0) is None


def test_negative_tolerances_are_refused() -> None:
    with pytest.raises(ValueError, match="skew"):
        AuditBook(skew=-1.0)


def test_what_the_feed_told_costs_the_cyclic_collector_nothing() -> None:
    # an audit period of events is kept (tens of thousands): the collector's full pass,
    # which holds the event loop, must not walk one object per event
    book = AuditBook()
    ids = [str(i) for i in range(5_000)]
    gc.collect()
    before = len(gc.get_objects())
    for n, item in enumerate(ids):
        book.told(A if n % 2 else B, item, 9_000 + n, "new", float(n))
    gc.collect()
    assert len(gc.get_objects()) - before < 20
