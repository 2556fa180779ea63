"""The sans-I/O core of the sandbox: catalogue, market schedule, limits, faults, snapshot.
Pure logic, tested synchronously."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from engine import ConfigError
from engine.sandbox import (
    Fault,
    FaultPlan,
    Market,
    MarketConfig,
    Snapshot,
    build_catalogue,
    doppler_phases,
    gzip_chunks,
    load_scenario,
)
from engine.sandbox._catalogue import EXTERIORS, exterior_of
from engine.sandbox._limits import LimitConfig, RateLimits, Window

START = 1_767_225_600.0


@pytest.mark.parametrize(
    ("name", "exterior"),
    [
        ("AK-47 | Redline (Field-Tested)", "FT"),
        ("★ Karambit | Doppler (Factory New)", "FN"),
        ("Glock-18 | Gamma Doppler (Battle-Scarred)", "BS"),
        ("Revolution Case", None),
        ("Sticker | Titan (Holo) | Katowice 2014", None),
    ],
)
def test_exterior_is_read_from_the_market_name(name: str, exterior: str | None) -> None:
    assert exterior_of(name) == exterior


def test_catalogue_has_real_doppler_phases_and_several_games() -> None:
    catalogue = build_catalogue()
    by_name = {item.name: item for item in catalogue}
    phases = doppler_phases()
    assert len(phases) == 117
    for name, real_phases in phases.items():
        assert by_name[name].phases == real_phases
    assert by_name["★ Bayonet | Doppler (Factory New)"].phases == (
        "Black Pearl", "Phase 1", "Phase 2", "Phase 3", "Phase 4", "Ruby", "Sapphire",
    )  # fmt: skip
    assert {item.game for item in catalogue} >= {"csgo", "dota2", "rust", "tf2"}
    assert all(isinstance(item.reference, int) and item.reference > 0 for item in catalogue)


def test_market_listings_are_realistic() -> None:
    market = Market(seed=3, start=START, config=MarketConfig(size=2000))
    listings = list(market.listings.values())
    for listing in listings:
        if listing.item.exterior is not None:
            _, low, high = EXTERIORS[listing.item.exterior]
            assert listing.float_value is not None
            assert low <= listing.float_value <= high
        assert listing.phase is None or listing.phase in listing.item.phases
        assert 0 <= len(listing.stickers) <= 5
        assert isinstance(listing.price, int)
        assert listing.price > 0
    assert any(li.phase for li in listings)
    assert any(li.stickers for li in listings)
    assert any(li.locked(START) for li in listings)
    deals = [li for li in listings if li.price < 0.85 * li.platform_price]
    assert 0 < len(deals) < len(listings) * 0.2


def _state(market: Market) -> list[tuple[int, int]]:
    return sorted((li.item_id, li.price) for li in market.listings.values())


def test_market_is_deterministic_for_a_seed_whatever_the_steps() -> None:
    one = Market(seed=5, start=START, config=MarketConfig(size=500))
    other = Market(seed=5, start=START, config=MarketConfig(size=500))
    one.advance_to(START + 7200)
    for minute in range(1, 121):
        other.advance_to(START + minute * 60)
    assert _state(one) == _state(other)
    different = Market(seed=6, start=START, config=MarketConfig(size=500))
    different.advance_to(START + 7200)
    assert _state(different) != _state(one)


def test_market_lives_listings_arrive_leave_and_get_repriced() -> None:
    market = Market(seed=5, start=START, config=MarketConfig(size=500))
    before = set(market.listings)
    market.advance_to(START + 3 * 3600)
    after = set(market.listings)
    assert before - after, "some listings left"
    assert after - before, "some listings arrived"
    assert market.departed > 0
    assert any(li.edits for li in market.listings.values()), "some prices were edited"
    assert 300 < len(market.listings) < 700, "the market keeps about its size"


@pytest.mark.parametrize(
    ("calls_at", "expected"),
    [
        ([0.0] * 20, [None] * 20),
        ([0.0] * 21, [None] * 20 + [60.0]),
        ([float(i) for i in range(20)] + [30.0], [None] * 20 + [30.0]),
        ([float(i) for i in range(20)] + [60.5], [None] * 21),
    ],
)
def test_search_window_is_20_per_60_seconds(calls_at: list[float], expected: list) -> None:
    limits = RateLimits(LimitConfig())
    got = [limits.try_acquire("acct", "search", START + t) for t in calls_at]
    assert [None if g is None else pytest.approx(g) for g in got] == expected


def test_a_refused_call_is_not_counted_and_windows_are_per_account() -> None:
    limits = RateLimits(LimitConfig(set_platform_api=Window(5, 60.0)))
    for _ in range(5):
        assert limits.try_acquire("a", "set_platform_api", START) is None
    for _ in range(10):
        assert limits.try_acquire("a", "set_platform_api", START + 1) is not None
    assert limits.try_acquire("b", "set_platform_api", START + 1) is None
    assert limits.try_acquire("a", "set_platform_api", START + 60.0) is None


def test_a_partner_account_has_no_search_limit() -> None:
    limits = RateLimits(LimitConfig(search=None))
    assert all(limits.try_acquire("p", "search", START) is None for _ in range(500))


def test_fault_plan_counts_and_after() -> None:
    plan = FaultPlan(
        [Fault(endpoint="GET /v1/buy-one-p2p", kind="http_error", count=2, after=1)], seed=1
    )
    fired = [plan.draw("GET", "/v1/buy-one-p2p") for _ in range(5)]
    assert [f is not None for f in fired] == [False, True, True, False, False]
    assert plan.draw("GET", "/v1/user") is None
    assert len(plan) == 0


def test_fault_probability_is_seeded() -> None:
    def run() -> list[bool]:
        plan = FaultPlan([Fault(endpoint="*", kind="latency", probability=0.3)], seed=9)
        return [plan.draw("GET", "/v1/user") is not None for _ in range(200)]

    assert run() == run()
    assert 30 < sum(run()) < 90


def test_scenario_file_loads(tmp_path: Path) -> None:
    path = tmp_path / "storm.yaml"
    path.write_text(
        "faults:\n"
        "  - endpoint: GET /v1/buy-one-p2p\n"
        "    kind: timeout_after_commit\n"
        "    count: 1\n"
        "  - endpoint: /v2/search-items-by-name\n"
        "    kind: rate_limit\n"
        "    probability: 0.1\n"
        "busy_probability: 0.05\n"
    )
    scenario = load_scenario(path)
    assert [f.kind for f in scenario.faults] == ["timeout_after_commit", "rate_limit"]
    assert scenario.busy_probability == 0.05


@pytest.mark.parametrize(
    ("text", "where", "field"),
    [
        (
            "faults:\n  - endpoint: /v1/user\n    kind: explode\n    count: 1\n",
            ":3:5",
            "faults.0.kind",
        ),
        ("faults:\n  - endpoint: /v1/user\n    kind: latency\n", ":2:5", "faults.0"),
        (
            "faults:\n  - endpoint: /v1/user\n    kind: latency\n    count: 0\n",
            ":4:5",
            "faults.0.count",
        ),
        ("faults: [\n", ":2:1", None),
        (
            '{"faults": [{"endpoint": "/x", "kind": "latency", "count": 1, "colour": 2}]}',
            ":1:",
            "faults.0.colour",
        ),
    ],
)
def test_bad_scenario_names_file_line_column_and_field(
    tmp_path: Path, text: str, where: str, field: str | None
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_scenario(path)
    assert info.value.location is not None
    assert info.value.location.startswith(f"{path}{where}")
    assert info.value.field == field


def test_snapshot_csv_and_json_from_listings() -> None:
    market = Market(seed=2, start=START, config=MarketConfig(size=300))
    snap = Snapshot.from_listings(market.listings.values(), timestamp=START)
    locked = {li.item_id for li in market.listings.values() if li.locked(START)}
    csv_all = gzip.decompress(b"".join(gzip_chunks(snap.csv_chunks(include_hold=True))))
    lines = csv_all.decode().splitlines()
    assert lines[0] == "item_id,name,price,auto,inspect,unlock_at,send_until"
    assert len(lines) - 1 == 300
    first = lines[1].split(",")
    assert len(first[2]) == 12
    assert first[2].isdigit()
    held = [line for line in lines[1:] if line.split(",")[5]]
    assert {int(line.split(",")[0]) for line in held} == locked
    plain = b"".join(snap.csv_chunks()).decode().splitlines()
    assert plain[0] == "item_id,name,price,auto,inspect"
    assert len(plain) - 1 == 300 - len(locked)
    data = json.loads(b"".join(snap.json_chunks()))
    assert data["success"] is True
    assert data["timestamp"] == int(START)
    assert all(isinstance(row["price"], str) for row in data["items"])
    assert len(data["items"]) == 300 - len(locked)


def test_generated_snapshot_is_columnar_and_phase_names_are_written_in() -> None:
    snap = Snapshot.generate(20_000, seed=1, timestamp=START)
    assert len(snap) == 20_000
    text = b"".join(snap.csv_chunks(include_hold=True)).decode()
    assert " Doppler Phase " in text or " Doppler Ruby " in text
    assert text.count("\n") == 20_001
