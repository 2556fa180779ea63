"""The ``market`` reference's statistics: quantiles against a brute-force sort, bait
resistance, the window, Doppler phase separation, expiry and storage round trips."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import VirtualClock
from engine.reference import MarketBook, ReferenceHub
from engine.reference._sketch import MAX_BINS, bin_of, quantile, value_of
from engine.snapshot import SnapshotTracker

DAY = 86400.0


def _nearest_rank(prices: list[int], q: float) -> int:
    ordered = sorted(prices)
    return ordered[max(1, math.ceil(q * len(ordered) - 1e-9)) - 1]


@pytest.mark.parametrize(
    ("price", "expected_bin"),
    [(1, 0), (1000, 694), (1010, 695), (12_345, 946), (10**9, 2082)],
)
def test_bins_are_one_percent_wide_and_hold_their_value(price: int, expected_bin: int) -> None:
    assert bin_of(price) == expected_bin
    assert bin_of(value_of(expected_bin)) == expected_bin


@given(st.lists(st.integers(min_value=1, max_value=10**9), min_size=1, max_size=300))
@settings(max_examples=200, deadline=None)
def test_quantiles_fall_in_the_bin_of_the_exact_quantile(prices: list[int]) -> None:
    hist: dict[int, int] = {}
    for price in prices:
        hist[bin_of(price)] = hist.get(bin_of(price), 0) + 1
    for q, got in zip((0.1, 0.25, 0.5), quantile(hist, (0.1, 0.25, 0.5)), strict=True):
        exact = _nearest_rank(prices, q)
        assert got is not None
        assert bin_of(got) == bin_of(exact)
        assert abs(got - exact) <= exact * 0.0101


history = st.lists(
    st.tuples(
        st.floats(min_value=0, max_value=20 * DAY, allow_nan=False),  # listed at
        st.integers(min_value=500, max_value=1_200),  # price: a narrow market
    ),
    min_size=1,
    max_size=200,
)


@given(history, st.floats(min_value=0, max_value=21 * DAY, allow_nan=False))
@settings(max_examples=150, deadline=None)
def test_book_statistics_match_brute_force_over_the_window(
    events: list[tuple[float, int]], now: float
) -> None:
    book = MarketBook(window=7 * DAY, hold=0)
    for at, price in events:
        book.record(("AK-47 | Redline (Field-Tested)", None), price, at)
    first = book.first_bucket(now)
    last = math.floor(now / book.bucket_seconds)
    inside = [(at, p) for at, p in events if first <= math.floor(at / book.bucket_seconds) <= last]
    stats = book.stats("AK-47 | Redline (Field-Tested)", None, now)
    if not inside:
        assert stats is None
        return
    assert stats is not None
    prices = [p for _, p in inside]
    assert stats.observations == len(prices)
    assert stats.floor == min(prices)  # exact
    assert stats.as_of == math.floor(max(at for at, _ in inside))
    for got, q in ((stats.p10, 0.1), (stats.p25, 0.25), (stats.median, 0.5)):
        assert bin_of(got) == bin_of(_nearest_rank(prices, q))


def test_a_wide_range_keeps_at_most_max_bins_and_the_low_quantiles_exact() -> None:
    book = MarketBook(hold=0)
    # 300 prices within 92 bins, then 100 far above: more than 96 bins in all
    prices = [1000 + 5 * i for i in range(300)] + [20_000 + 1000 * i for i in range(100)]
    for price in prices:
        book.record(("Case", None), price, 10.0)
    (_, bins) = book.size()
    assert bins <= MAX_BINS
    stats = book.stats("Case", None, 10.0)
    assert stats is not None
    assert bin_of(stats.p10) == bin_of(_nearest_rank(prices, 0.1))
    assert bin_of(stats.p25) == bin_of(_nearest_rank(prices, 0.25))
    assert bin_of(stats.median) == bin_of(_nearest_rank(prices, 0.5))
    assert stats.observations == 400


def _market(rows: list[tuple[int, str, int]]) -> bytes:
    lines = ["item_id,name,price", *(f"{i},{n},{p}" for i, n, p in rows)]
    return ("\n".join(lines) + "\n").encode()


class _Feed:
    """A tracker and a book fed snapshot after snapshot, as the engine does."""

    def __init__(self, book: MarketBook) -> None:
        self.book = book
        self.tracker = SnapshotTracker()

    def poll(self, rows: list[tuple[int, str, int]], at: float) -> None:
        diff = self.tracker.update_csv([_market(rows)])
        if not diff.first:
            self.book.observe(*diff.columns(), at=at)
        self.book.mature(at, self.tracker.current_prices)


NAME = "AK-47 | Redline (Field-Tested)"


def test_bait_listings_never_move_p25_or_the_floor() -> None:
    honest = [(i, NAME, 10_000 + 10 * i) for i in range(1, 41)]
    plain = _Feed(MarketBook(hold=600))
    baited = _Feed(MarketBook(hold=600))
    for feed in (plain, baited):
        feed.poll([], 0)
    # 40 honest listings arrive and stay; in the baited market, 30 listings at $1 come
    # and go every minute (each pulled within a few minutes, before it has held).
    t = 60.0
    for minute in range(1, 60):
        bait = [(100_000 + minute * 100 + k, NAME, 1_000) for k in range(30)]
        plain.poll(honest, t)
        baited.poll(honest + (bait if minute % 5 else []), t)
        t += 60
    a = plain.book.stats(NAME, None, t)
    b = baited.book.stats(NAME, None, t)
    assert a is not None
    assert b is not None
    assert b == a
    assert b.floor == 10_010
    assert b.observations == 40


def _default_book() -> MarketBook:
    """The book snipe runs with when the rules leave ``prices.market`` alone."""
    return ReferenceHub(clock=VirtualClock()).book


# The 10 minutes are the documented default of prices.market.hold (README), written here
# rather than read from the settings, so a wrong default cannot pass.
@pytest.mark.parametrize(
    "make_book", [lambda: MarketBook(hold=600), _default_book], ids=["hold-600", "default"]
)
def test_a_listing_counts_only_once_it_has_held_at_its_price(
    make_book: Callable[[], MarketBook],
) -> None:
    feed = _Feed(make_book())
    feed.poll([], 0)
    feed.poll([(1, NAME, 5_000), (2, NAME, 6_000)], 10)
    feed.poll([(1, NAME, 5_000), (2, NAME, 5_500)], 300)  # 2 dropped: a new observation
    feed.poll([(1, NAME, 5_000), (2, NAME, 5_500)], 609)
    assert feed.book.stats(NAME, None, 609) is None  # not yet held 10 minutes
    feed.poll([(1, NAME, 5_000), (2, NAME, 5_500)], 610)
    stats = feed.book.stats(NAME, None, 610)
    assert stats is not None
    assert stats.observations == 1
    assert stats.floor == 5_000
    feed.poll([(1, NAME, 5_000), (2, NAME, 5_500)], 900)  # 5,500 held since 300
    stats = feed.book.stats(NAME, None, 900)
    assert stats is not None
    assert (stats.observations, stats.floor) == (2, 5_000)


DOPPLER = "★ Karambit | Doppler (Factory New)"


def test_doppler_phases_are_kept_apart_from_the_name_or_from_search() -> None:
    feed = _Feed(MarketBook(hold=60))
    feed.poll([], 0)
    rows = [
        (1, "★ Karambit | Doppler Ruby (Factory New)", 900_000),  # phase in the name
        (2, DOPPLER, 300_000),  # phase learnt from a search answer
        (3, DOPPLER, 310_000),  # phase never learnt
    ]
    feed.poll(rows, 10)
    feed.book.learn_phases([("2", "Phase 2"), ("99", "")])
    feed.poll(rows, 100)
    ruby = feed.book.stats(DOPPLER, "Ruby", 100)
    phase2 = feed.book.stats(DOPPLER, "Phase 2", 100)
    whole = feed.book.stats(DOPPLER, None, 100)
    assert ruby is not None
    assert (ruby.floor, ruby.observations) == (900_000, 1)
    assert phase2 is not None
    assert (phase2.floor, phase2.observations) == (300_000, 1)
    assert whole is not None
    assert whole.observations == 3
    assert feed.book.stats(DOPPLER, "Phase 4", 100) is None


def test_buckets_leave_the_window_and_are_reported_for_deletion() -> None:
    book = MarketBook(window=DAY, hold=0)
    book.record(("X", None), 1_000, 0)
    book.record(("X", None), 2_000, DAY * 0.9)
    assert book.expire(DAY * 0.95) == []
    gone = book.expire(DAY * 1.1)
    assert gone == [(("X", None), 0)]
    stats = book.stats("X", None, DAY * 1.1)
    assert stats is not None
    assert stats.observations == 1
    assert stats.floor == 2_000
    assert book.expire(DAY * 3)
    assert len(book) == 0


def test_dirty_buckets_restore_to_the_same_statistics() -> None:
    book = MarketBook(window=DAY, hold=0)
    for i in range(50):
        book.record(("X", None), 1_000 + i * 13, i * 600.0)
        book.record(("X", "Ruby"), 9_000 + i, i * 600.0)
    stored = book.take_dirty()
    assert book.take_dirty() == []
    again = MarketBook(window=DAY, hold=0)
    assert again.restore(stored) == len(stored)
    for key in (("X", None), ("X", "Ruby")):
        assert again.stats(*key, 30_000) == book.stats(*key, 30_000)


def test_the_queue_is_bounded_and_counts_what_it_drops(monkeypatch: pytest.MonkeyPatch) -> None:
    import engine.reference._book as book_module

    monkeypatch.setattr(book_module, "_PENDING_LIMIT", 5)
    book = MarketBook(hold=60)
    book.observe([1, 2, 3], [10, 10, 10], ["A", "A", "A"], at=0)
    book.observe([4, 5, 6], [10, 10, 10], ["A", "A", "A"], at=1)
    assert book.pending == 3
    assert book.dropped == 3
