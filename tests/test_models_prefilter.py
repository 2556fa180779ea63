"""A search answer read through a prefilter: the candidates exactly, odd ones set aside.

The prefilter decode (:func:`decode_search`) must give the listings the full decode gives,
less exactly those whose name no rule watches or whose price is above the name's ceiling,
and set aside the unreadable candidates as the full decode would.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from engine.models import Listing, ListingMemo, SearchResponse, decode_per_item, decode_search
from engine.sandbox import MarketConfig
from engine.sandbox._market import Market
from engine.sandbox._routes_market import search_entry

START = 1_767_225_600.0
CONTEXT = {"image_base_url": "https://images.invalid/"}


def sandbox_answer(seed: int) -> bytes:
    """A v2 search answer as the sandbox sends it, for the 50 most listed names."""
    market = Market(seed=seed, start=START, config=MarketConfig(size=3000))
    by_name: dict[str, list[dict[str, Any]]] = {}
    for listing in sorted(market.listings.values(), key=lambda x: x.price):
        entry = search_entry(listing, START, v2=True, minified=False, delivery=True)
        by_name.setdefault(listing.name, []).append(entry)
    names = sorted(by_name, key=lambda n: -len(by_name[n]))[:50]
    return json.dumps({"success": True, "items": {n: by_name[n][:50] for n in names}}).encode()


def expected(full: SearchResponse, ceilings: dict[str, int]) -> dict[str, tuple[Listing, ...]]:
    return {
        key: tuple(x for x in found if x.name in ceilings and x.price <= ceilings[x.name])
        for key, found in full.items.items()
    }


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("share", [0.0, 0.1, 0.5, 1.0])
def test_the_candidates_are_exactly_the_full_decodes_within_their_ceilings(
    seed: int, share: float
) -> None:
    content = sandbox_answer(seed)
    full = decode_per_item(SearchResponse, content, context=CONTEXT)
    total = sum(len(v) for v in full.items.values())
    ceilings: dict[str, int] = {}
    for i, (name, found) in enumerate(sorted(full.items.items())):
        if i % 4 == 3:
            continue  # a name no rule watches
        prices = sorted(x.price for x in found)
        ceilings[name] = prices[min(len(prices) - 1, int(len(prices) * share))] - (share == 0)
    lazy = decode_search(content, ceilings, context=CONTEXT)
    assert lazy.items == expected(full, ceilings)
    built = sum(len(v) for v in lazy.items.values())
    assert built + lazy.passed_over == total
    assert lazy.success
    assert lazy.set_aside == ()
    # the phases of what was passed over are kept for whoever learns them
    phases = {(x.item_id, x.phase) for v in full.items.values() for x in v if x.phase}
    kept = {(x.item_id, x.phase) for v in lazy.items.values() for x in v if x.phase}
    assert set(lazy.passed_over_phases) == phases - kept
    # a callable prefilter decides the same
    assert decode_search(content, ceilings.get, context=CONTEXT).items == lazy.items


def listing(item_id: Any, price: Any, **extra: Any) -> dict[str, Any]:
    return {"name": "AK-47 | Redline (Field-Tested)", "item_id": item_id, "price": price} | extra


NAME = "AK-47 | Redline (Field-Tested)"


def test_unreadable_candidates_are_set_aside_as_the_full_decode_does() -> None:
    found = [
        listing(1, 5_000),
        listing(2, "12 USD"),  # unreadable price: built, set aside
        listing(3, 6_000, unlock_at="not a time"),  # a candidate with an odd field
        listing(4, 90_000, unlock_at="not a time"),  # above the ceiling: never built
        "not an object",
        {"price": 5_000, "item_id": 6},  # no name
        listing(7, "7000"),  # a digit string within the ceiling: a candidate
        listing(8, "27867.5"),  # a fraction, read as 27868 then passed over by price
    ]
    content = json.dumps({"success": True, "items": {NAME: found}}).encode()
    full = decode_per_item(SearchResponse, content, context=CONTEXT)
    lazy = decode_search(content, {NAME: 10_000}, context=CONTEXT)
    assert [x.item_id for x in lazy.items[NAME]] == ["1", "7"]
    # every built item is set aside as the full decode sets it aside (item 4 is not built)
    assert lazy.set_aside == tuple(s for s in full.set_aside if s.key != "item_id=4")
    assert [s.path for s in lazy.set_aside] == [f"items.{NAME}.{i}" for i in (1, 2, 4, 5)]
    assert lazy.passed_over == 2  # items 4 and 8


def test_a_name_no_rule_watches_builds_nothing_not_even_its_odd_listings() -> None:
    found = [listing(1, 5_000), listing(2, 5_000, unlock_at="not a time")]
    content = json.dumps({"success": True, "items": {NAME: found}}).encode()
    lazy = decode_search(content, {}, context=CONTEXT)
    assert lazy.items == {NAME: ()}
    assert lazy.passed_over == 2
    assert lazy.set_aside == ()


@pytest.mark.parametrize(
    "content",
    [
        b"not json",
        b'{"success": true, "items": [1, 2]}',
        b'{"success": "perhaps", "items": {}}',
        b'{"success": true, "items": {"x": 5}}',
    ],
)
def test_a_broken_answer_fails_as_the_full_decode_fails(content: bytes) -> None:
    with pytest.raises(ValidationError) as full:
        decode_per_item(SearchResponse, content, context=CONTEXT)
    with pytest.raises(ValidationError) as lazy:
        decode_search(content, {NAME: 10_000}, context=CONTEXT)
    assert lazy.value.errors()[0]["loc"] == full.value.errors()[0]["loc"]


@pytest.mark.parametrize("seed", [1, 2])
def test_a_memo_gives_the_full_decode_and_reuses_listings_sent_again(seed: int) -> None:
    content = sandbox_answer(seed)
    full = decode_per_item(SearchResponse, content, context=CONTEXT)
    memo = ListingMemo()
    first = decode_search(content, None, context=CONTEXT, memo=memo)
    again = decode_search(content, None, context=CONTEXT, memo=memo)
    assert first.items == again.items == full.items
    assert first.set_aside == again.set_aside == ()
    # the second answer's listings are the very objects the first one built
    pairs = zip(first.items.values(), again.items.values(), strict=True)
    assert all(a is b for x, y in pairs for a, b in zip(x, y, strict=True))


def test_a_listing_sent_with_any_change_is_built_again_and_odd_ones_set_aside_each_time() -> None:
    memo = ListingMemo()

    def decode(*found: Any) -> SearchResponse:
        content = json.dumps({"success": True, "items": {NAME: list(found)}}).encode()
        return decode_search(content, None, context=CONTEXT, memo=memo)

    before = decode(listing(1, 5_000), listing(2, "12 USD"))
    after = decode(listing(1, 4_000), listing(2, "12 USD"))
    assert [x.price for x in after.items[NAME]] == [4_000]
    assert after.items[NAME][0] is not before.items[NAME][0]
    assert [s.key for s in after.set_aside] == [s.key for s in before.set_aside] == ["item_id=2"]
    stickers = decode(listing(1, 4_000, stickers=[{"name": "Crown", "price": 9}]))
    assert stickers.items[NAME][0].stickers[0].name == "Crown"


def test_an_answer_without_a_success_flag_is_told_from_a_refusal() -> None:
    """The fields the answer carried are kept: the client tells a missing flag (a broken
    answer) from ``success: false`` (a refusal) by them."""
    missing = decode_search(b'{"items": {}}', None, context=CONTEXT, memo=ListingMemo())
    refused = decode_search(b'{"success": false, "items": {}}', None, memo=ListingMemo())
    assert "success" not in missing.model_fields_set
    assert "success" in refused.model_fields_set
