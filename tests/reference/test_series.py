"""The packed bucket store against a plain-dict model: any order of buckets, any spread of
prices (bins merged beyond MAX_BINS), restores and expiry."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.reference._series import Series, unpack
from engine.reference._sketch import MAX_BINS, add, bin_of

observations = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=6),  # bucket, in any order
        st.integers(min_value=1, max_value=10**7),  # price: far more than MAX_BINS bins
        st.integers(min_value=0, max_value=10**6),  # listed at
    ),
    max_size=400,
)


def _model(items: list[tuple[int, int, int]]) -> dict[int, tuple[dict[int, int], int, int]]:
    model: dict[int, tuple[dict[int, int], int, int]] = {}
    for bucket, price, at in items:
        bins, low, last = model.get(bucket, ({}, price, at))
        add(bins, bin_of(price))
        model[bucket] = (bins, min(low, price), max(last, at))
    return model


@given(observations)
@settings(max_examples=200, deadline=None)
def test_the_packed_store_matches_a_dict_model(items: list[tuple[int, int, int]]) -> None:
    series = Series()
    for bucket, price, at in items:
        series.add(bucket, bin_of(price), price, at)
    got = {b: (unpack(packed), low, last) for b, low, last, packed in series.records()}
    assert got == _model(items)
    assert [r[0] for r in series.records()] == sorted(got)
    assert all(len(bins) <= MAX_BINS for bins, _, _ in got.values())


@given(observations, st.integers(min_value=0, max_value=7))
@settings(max_examples=100, deadline=None)
def test_restore_and_expiry_keep_the_rest(items: list[tuple[int, int, int]], first: int) -> None:
    model = _model(items)
    restored = Series()
    for bucket, (bins, low, last) in sorted(model.items(), reverse=True):
        restored.put(bucket, bins, low, last)
    assert sorted(restored.drop_before(first)) == sorted(b for b in model if b < first)
    got = {b: (unpack(packed), low, last) for b, low, last, packed in restored.records()}
    assert got == {b: v for b, v in model.items() if b >= first}
    for bucket, price, at in items:  # and it keeps counting after a restore
        if bucket >= first:
            restored.add(bucket, bin_of(price), price, at)
    assert len(restored) == len(got)
