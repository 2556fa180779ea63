"""The market's churn: feed traffic at the live rate (bench/bench_detection.py plays it).
Pure and synchronous."""

from __future__ import annotations

from collections import Counter

import pytest

from engine.sandbox import Market, MarketConfig

START = 1_767_225_600.0


def _changes(config: MarketConfig, seconds: int) -> tuple[Market, list[Counter[str]]]:
    market = Market(seed=5, start=START, config=config)
    cursor = market.changes.cursor
    per_second: list[Counter[str]] = []
    for second in range(1, seconds + 1):
        market.advance_to(START + second)
        changes, cursor, _ = market.changes.read(cursor)
        per_second.append(Counter[str](change.kind for change in changes))
    return market, per_second


def test_churn_plays_the_asked_rate_in_equal_thirds_with_bursts() -> None:
    config = MarketConfig(
        size=300, churn_per_second=200.0, burst_every=60.0, burst_seconds=2.0,
        burst_per_second=1500.0,
    )  # fmt: skip
    market, per_second = _changes(config, 120)
    total = sum((c for c in per_second), Counter())
    assert 200 * 120 * 0.9 < sum(total.values()) < 200 * 120 * 1.1
    assert max(total.values()) - min(total.values()) < 0.02 * sum(total.values())
    busiest = max(sum(c.values()) for c in per_second)
    assert busiest > 1000  # a burst second
    quiet = sorted(sum(c.values()) for c in per_second)[len(per_second) // 2]
    assert quiet < 250  # between bursts, below the mean
    # new and removed alternate: the pool keeps its size
    assert abs(len(market.listings) - (300 + round(200 / 3 * 20))) < 150


def test_churn_leaves_the_rest_of_the_market_as_it_was() -> None:
    plain = Market(seed=5, start=START, config=MarketConfig(size=300))
    churned = Market(seed=5, start=START, config=MarketConfig(size=300, churn_per_second=100))
    assert set(plain.listings) <= set(churned.listings)
    plain.advance_to(START + 600)
    churned.advance_to(START + 600)
    # every listing of the market without churn is there with the same price
    for item_id, listing in plain.listings.items():
        assert churned.listings[item_id].price == listing.price


def test_churn_listings_are_never_deals() -> None:
    market, _ = _changes(MarketConfig(size=1, churn_per_second=300), 20)
    cheap = [
        listing
        for listing in market.listings.values()
        if listing.price < 0.9 * listing.platform_price and listing.price > 10
    ]
    assert len(cheap) <= 1  # the one listing of the market proper may be a deal


@pytest.mark.parametrize(
    "fields",
    [
        {"churn_per_second": -1.0},
        {"churn_per_second": 10.0, "churn_lifetime": 0.0},
        {"churn_per_second": 100.0, "burst_every": 10.0, "burst_seconds": 10.0},
        {"churn_per_second": 100.0, "burst_every": 10.0, "burst_per_second": 2800.0},
    ],
)
def test_impossible_churn_settings_are_refused(fields: dict[str, float]) -> None:
    with pytest.raises(ValueError, match=r"churn|burst"):
        MarketConfig(**fields)  # type: ignore[arg-type]
