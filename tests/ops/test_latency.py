"""What the detection-latency histogram measures: from first sight (the snapshot flag of
the listing's name, else the search answer that showed it) to the purchase request."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, Histogram

from engine import VirtualClock
from engine.metrics import DETECTION_BUCKETS, LatencyTracker
from engine.models import Listing
from engine.rules import Decision, EvalContext


@dataclass
class _Schedule:
    flagged_at: dict[str, float] = field(default_factory=dict)


@dataclass
class _Engine:
    clock: VirtualClock
    schedule: _Schedule


def _decision(item_id: str, name: str = "AWP | Asiimov (FT)", accepted: bool = True) -> Any:
    listing = Listing.model_validate({"item_id": item_id, "name": name, "price": 1_000})
    return Decision(listing, "deals", accepted, (), 1_000, "buy", 0, False)


def _observations(histogram: Histogram) -> tuple[float, float]:
    samples = {s.name: s.value for s in next(iter(histogram.collect())).samples if not s.labels}
    return samples["h_count"], samples["h_sum"]


@pytest.mark.parametrize(
    ("flagged", "seen_in_search", "requested", "outcome", "expected"),
    [
        (None, 100.0, 100.5, "bought", (1, 0.5)),  # found by a routine search
        (93.0, 100.0, 100.5, "bought", (1, 7.5)),  # flagged by the snapshot 7 s earlier
        (93.0, 100.0, 100.5, "refused", (0, 0.0)),  # someone else got it: not a purchase
        (93.0, 100.0, 100.5, "vetoed", (0, 0.0)),
    ],
)
def test_latency_runs_from_first_sight_to_the_request(
    flagged: float | None,
    seen_in_search: float,
    requested: float,
    outcome: str,
    expected: tuple[float, float],
) -> None:
    clock = VirtualClock(start=0.0)
    schedule = _Schedule({"AWP | Asiimov (FT)": flagged} if flagged is not None else {})
    histogram = Histogram("h", "h", buckets=DETECTION_BUCKETS, registry=CollectorRegistry())
    tracker = LatencyTracker(_Engine(clock, schedule), histogram)  # type: ignore[arg-type]
    decision = _decision("7")
    clock.jump_to(seen_in_search)
    tracker.snipe_decisions(
        [decision, _decision("8", accepted=False)], EvalContext(now=clock.now())
    )
    clock.jump_to(requested)
    tracker.snipe_veto_purchase(decision, EvalContext(now=clock.now()))
    clock.advance(3.0)  # the answer's round trip is not counted
    tracker.snipe_purchase(decision, outcome, None)
    assert _observations(histogram) == pytest.approx(expected)


def test_a_listing_seen_again_keeps_its_first_sighting() -> None:
    clock = VirtualClock(start=0.0)
    histogram = Histogram("h", "h", buckets=DETECTION_BUCKETS, registry=CollectorRegistry())
    tracker = LatencyTracker(_Engine(clock, _Schedule()), histogram)  # type: ignore[arg-type]
    decision = _decision("7")
    for at in (10.0, 40.0):  # not bought the first time (balance, caps...), seen again
        clock.jump_to(at)
        tracker.snipe_decisions([decision], EvalContext(now=clock.now()))
    tracker.snipe_veto_purchase(decision, EvalContext(now=clock.now()))
    tracker.snipe_purchase(decision, "bought", None)
    assert _observations(histogram) == (1, 30.0)
