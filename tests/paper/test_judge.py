"""The paper judgement, pure and table-driven: a would-be purchase counts only if the
listing was still there, at most at the price offered, when the request would have
arrived; otherwise it is missed, with the reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.models import Listing
from engine.paper import Judged, Pending, Sighting, judge, paper_path_for, proves_gone

# decided at 100.0; the request would have arrived at 100.3; offered $50.000
PENDING = Pending(
    project_id="snp-1",
    item_id="42",
    name="AK-47 | Redline (Field-Tested)",
    game="csgo",
    price=50_000,
    decided_at=100.0,
    arrival=100.3,
)

CASES = [
    # (what was seen, verdict or None: still pending)
    # -- a look (search, catalogue, snapshot): the market as it was then
    ("search after arrival, same price", Sighting("42", 101.0, 50_000, "search"), Judged.BOUGHT),
    ("search after arrival, cheaper", Sighting("42", 101.0, 45_000, "search"), Judged.BOUGHT),
    ("search at the arrival", Sighting("42", 100.3, 50_000, "search"), Judged.BOUGHT),
    ("search before arrival, listed", Sighting("42", 100.1, 50_000, "search"), None),
    ("search after arrival, gone", Sighting("42", 101.0, None, "search"), Judged.GONE),
    ("search before arrival, gone", Sighting("42", 100.1, None, "search"), Judged.GONE),
    (
        "search after arrival, dearer",
        Sighting("42", 101.0, 50_001, "search"),
        Judged.PRICE_CHANGED,
    ),
    (
        "snapshot before arrival, dearer",
        Sighting("42", 100.2, 60_000, "snapshot"),
        Judged.PRICE_CHANGED,
    ),
    # -- the feed: the change happened when it was told
    ("feed removal before arrival", Sighting("42", 100.2, None, "feed", exact=True), Judged.GONE),
    ("feed removal at arrival", Sighting("42", 100.3, None, "feed", exact=True), Judged.GONE),
    ("feed removal after arrival", Sighting("42", 100.5, None, "feed", exact=True), Judged.BOUGHT),
    (
        "feed price rise before arrival",
        Sighting("42", 100.2, 55_000, "feed", exact=True),
        Judged.PRICE_CHANGED,
    ),
    (
        "feed price rise after arrival",
        Sighting("42", 100.4, 55_000, "feed", exact=True),
        Judged.BOUGHT,
    ),
    ("feed price cut before arrival", Sighting("42", 100.2, 40_000, "feed", exact=True), None),
    ("feed update after arrival", Sighting("42", 100.4, 40_000, "feed", exact=True), Judged.BOUGHT),
    # -- nothing from before the decision (the answer it came from) or of another item
    ("the deciding answer itself", Sighting("42", 100.0, None, "search"), None),
    ("an older look", Sighting("42", 99.0, 60_000, "snapshot"), None),
    ("an older feed removal", Sighting("42", 99.5, None, "feed", exact=True), None),
    ("another item", Sighting("43", 101.0, None, "search"), None),
]


@pytest.mark.parametrize(("seen", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_judgement(seen: Sighting, expected: Judged | None) -> None:
    verdict = judge(PENDING, seen)
    if expected is None:
        assert verdict is None
        return
    assert verdict is not None
    assert verdict.judged is expected
    assert verdict.bought is (expected is Judged.BOUGHT)
    prefix = "bought: " if expected is Judged.BOUGHT else f"missed: {expected.value}: "
    assert verdict.reason.startswith(prefix)
    assert seen.source in verdict.reason


def test_a_missed_reason_names_the_prices() -> None:
    verdict = judge(PENDING, Sighting("42", 101.0, 61_500, "search"))
    assert verdict is not None
    assert "$61.50" in verdict.reason
    assert "$50.00 offered" in verdict.reason


def _listing(item_id: str, price: int) -> Listing:
    return Listing.model_validate({"item_id": item_id, "name": PENDING.name, "price": price})


@pytest.mark.parametrize(
    ("prices", "gone"),
    [
        ([], True),  # nothing of that name is listed at all
        ([30_000, 40_000, 60_000], True),  # a dearer one is shown: the item would be too
        ([30_000, 40_000, 50_000], False),  # ties at the price: the answer may be cut there
        ([30_000, 40_000], False),  # all cheaper: the item may be just past the answer's end
    ],
)
def test_what_an_answer_without_the_item_proves(prices: list[int], gone: bool) -> None:
    listings = [_listing(str(i), p) for i, p in enumerate(prices)]
    assert proves_gone(listings, 50_000) is gone


@pytest.mark.parametrize(
    ("real", "paper"),
    [
        ("snipe.sqlite", "snipe.paper.sqlite"),
        ("data/ledger.db", "data/ledger.paper.db"),
        ("ledger", "ledger.paper"),
    ],
)
def test_the_paper_ledger_sits_beside_the_real_one(real: str, paper: str) -> None:
    assert paper_path_for(real) == Path(paper)
    assert paper_path_for(real) != Path(real)
