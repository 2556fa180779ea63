"""A listing read from its JSON text for a prefilter: plain forms only, read as its model.

:func:`read_plain` makes a stand-in only when the listing's model would surely be built
from the same text, and then holds what the model holds in every field the rules may read
(:data:`RAW_FIELDS`); anything odder gives ``None`` (the listing is built, and set aside
as without a prefilter). :func:`decode_search` with a screen keeps every listing the full
decode gives, the passed-over ones as stand-ins in their places, and sets aside exactly
what the full decode sets aside.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import ValidationError

from engine.models import (
    RAW_FIELDS,
    Listing,
    ListingMemo,
    RawListing,
    SearchResponse,
    decode_per_item,
    decode_search,
    read_plain,
)
from engine.sandbox import MarketConfig
from engine.sandbox._market import Market
from engine.sandbox._routes_market import search_entry

START = 1_767_225_600.0
CONTEXT = {"image_base_url": "https://images.invalid/"}
BASE = {"name": "AK-47 | Redline (Field-Tested)", "price": 12_000, "item_id": "7"}
STICKER = {"name": "Titan (Holo) | Katowice 2014", "image": "s.png", "wear": 0.01, "slot": 0}


def same_fields(stand_in: RawListing, model: Listing) -> None:
    for field in sorted(RAW_FIELDS - {"stickers"}):
        assert getattr(stand_in, field) == getattr(model, field), field
    assert [(s.name, s.wear, s.slot, s.price) for s in stand_in.stickers] == [
        (s.name, s.wear, s.slot, s.price) for s in model.stickers
    ]
    assert stand_in.trade_locked == model.trade_locked


PLAIN: list[tuple[str, dict[str, Any]]] = [
    ("the least", {}),
    ("an id as a number", {"item_id": 31000001}),
    ("a price as digits", {"price": "000012000"}),
    ("no phase", {"phase": ""}),
    ("a phase", {"phase": "Ruby"}),
    ("a float as an integer", {"float": 0}),
    ("a reference price", {"platform_price": 15_000}),
    ("the reference in the second field", {"platform_price_number": 15_000}),
    ("an object, then a number", {"platform_price": {"usd": 1}, "platform_price_number": 9}),
    ("both references", {"platform_price": 15_000, "platform_price_number": 9}),
    ("a reference as digits", {"platform_price": "15000"}),
    ("a lock as RFC 3339", {"unlock_at": "2026-01-03T00:00:00Z", "send_until": 1767500000}),
    ("a lock as epoch digits", {"unlock_at": "1767400000"}),
    ("no lock", {"unlock_at": None, "send_until": ""}),
    ("null sticker names", {"sticker_names": None, "stickers": None}),
    ("stickers", {"sticker_names": ["a", "b"], "stickers": [STICKER, {"name": "b"}]}),
    ("a sticker of unknown price", {"stickers": [{**STICKER, "price": None}]}),
    ("a sticker priced in digits", {"stickers": [{**STICKER, "price": "2500"}]}),
    ("a sticker worn by an integer", {"stickers": [{**STICKER, "wear": 0}]}),
    ("informative extras, odd", {"delivery": {"avg": 1}, "paintseed": "x", "auto": "yes"}),
    ("unknown keys", {"brand_new_field": [1, 2]}),
]

ODD: list[tuple[str, dict[str, Any]]] = [
    ("no name", {"name": None}),
    ("a name as a number", {"name": 5}),
    ("a negative price", {"price": -1}),
    ("a price in dollars", {"price": "12.50"}),
    ("a price as a float", {"price": 12000.0}),
    ("a boolean price", {"price": True}),
    ("no id", {"item_id": None}),
    ("a negative reference", {"platform_price": -5}),
    ("an odd second reference", {"platform_price": 5, "platform_price_number": "x"}),
    ("a lock the parser refuses", {"unlock_at": "next week"}),
    ("a lock as a float", {"unlock_at": 1767400000.5}),
    ("a float as text", {"float": "0.1"}),
    ("a boolean float", {"float": True}),
    ("float_value beside float", {"float_value": 0.2}),
    ("a sticker name as a number", {"sticker_names": [5]}),
    ("a sticker without a name", {"stickers": [{"wear": 0.1}]}),
    ("a sticker that is not an object", {"stickers": ["Titan"]}),
    ("a sticker at a negative price", {"stickers": [{**STICKER, "price": -1}]}),
    ("an image as a list", {"image": ["a"]}),
    ("a brand as an object", {"brand": {}}),
    ("a discount as text", {"discount": "ten"}),
    ("a lone surrogate", {"name": "\ud800"}),
]


@pytest.mark.parametrize(("case", "extra"), PLAIN, ids=[c for c, _ in PLAIN])
def test_a_plain_listing_reads_as_its_model(case: str, extra: dict[str, Any]) -> None:
    text = json.dumps({**BASE, **extra}).encode()
    stand_in = read_plain(text)
    assert stand_in is not None, case
    same_fields(stand_in, Listing.model_validate_json(text, context=CONTEXT))


@pytest.mark.parametrize(("case", "extra"), ODD, ids=[c for c, _ in ODD])
def test_an_odd_listing_is_not_read_plainly(case: str, extra: dict[str, Any]) -> None:
    assert read_plain(json.dumps({**BASE, **extra}).encode()) is None, case


def test_every_listing_of_the_sandbox_reads_as_its_model() -> None:
    market = Market(seed=3, start=START, config=MarketConfig(size=1500))
    read = 0
    for listing in market.listings.values():
        for delivery in (False, True):
            text = json.dumps(
                search_entry(listing, START, v2=True, minified=False, delivery=delivery)
            ).encode()
            stand_in = read_plain(text)
            assert stand_in is not None
            same_fields(stand_in, Listing.model_validate_json(text, context=CONTEXT))
            read += 1
    assert read == 3000


def _answer(entries: list[Any]) -> bytes:
    by_name: dict[str, list[Any]] = {}
    for entry in entries:
        name = entry.get("name") if isinstance(entry, dict) else "?"
        by_name.setdefault(str(name), []).append(entry)
    return json.dumps({"success": True, "items": by_name}).encode()


def _below(limit: int) -> Callable[[str], Callable[[RawListing], bool] | None]:
    return lambda name: lambda stand_in: stand_in.price <= limit


def test_a_screen_builds_only_what_it_lets_through_and_keeps_the_rest_in_place() -> None:
    entries = [{**BASE, "item_id": str(i), "price": 1000 * i} for i in range(1, 9)]
    content = _answer(entries)
    full = decode_per_item(SearchResponse, content, context=CONTEXT)
    screened = decode_search(content, None, context=CONTEXT, screen=_below(3000))
    (name,) = full.items
    assert screened.items[name] == full.items[name][:3]
    assert screened.passed_over == 5
    judged = screened.judged_items[name]
    assert [x.item_id for x in judged] == [x.item_id for x in full.items[name]]
    assert all(type(x) is RawListing for x in judged[3:])
    for stand_in, model in zip(judged[3:], full.items[name][3:], strict=True):
        same_fields(stand_in, model)  # type: ignore[arg-type]


def test_odd_listings_are_built_and_set_aside_as_the_full_decode_does() -> None:
    entries = [
        {**BASE, "item_id": "1", "price": 99_000},
        {**BASE, "item_id": "2", "price": "12.345.6"},  # odd price: built, set aside
        {**BASE, "item_id": "3", "price": 99_000, "image": ["x"]},  # odd image: the same
        {**BASE, "item_id": "4", "price": 99_000, "unlock_at": "soon"},
        {**BASE, "item_id": "5", "price": 1_000},
        "not a listing",
    ]
    content = _answer(entries)
    full = decode_per_item(SearchResponse, content, context=CONTEXT)
    screened = decode_search(content, None, context=CONTEXT, screen=_below(5000))
    assert screened.set_aside == full.set_aside
    assert len(full.set_aside) == 4
    assert {k: [x.item_id for x in v] for k, v in screened.items.items()} == {
        BASE["name"]: ["5"],
        "?": [],
    }
    assert screened.passed_over == 1  # item 1: plain, above the screen's limit


def test_a_name_without_a_judge_is_built_whole_and_an_odd_envelope_decoded_in_full() -> None:
    entries = [{**BASE, "item_id": str(i), "price": 1000 * i} for i in range(1, 4)]
    content = _answer(entries)
    full = decode_per_item(SearchResponse, content, context=CONTEXT)
    assert decode_search(content, None, context=CONTEXT, screen=lambda n: None).items == full.items
    odd = b'{"success": true, "items": {"a": {"b": 1}}}'
    with pytest.raises(ValidationError) as full_error:
        decode_per_item(SearchResponse, odd, context=CONTEXT)
    with pytest.raises(ValidationError) as screened_error:
        decode_search(odd, None, context=CONTEXT, screen=_below(1))
    assert screened_error.value.errors() == full_error.value.errors()


def test_the_memo_gives_the_same_objects_for_the_same_text() -> None:
    entries = [{**BASE, "item_id": str(i), "price": 1000 * i} for i in range(1, 5)]
    content = _answer(entries)
    memo = ListingMemo()
    first = decode_search(content, None, context=CONTEXT, memo=memo, screen=_below(2000))
    again = decode_search(content, None, context=CONTEXT, memo=memo, screen=_below(2000))
    (name,) = first.items
    assert all(map(lambda a, b: a is b, first.judged_items[name], again.judged_items[name]))
    # other rules: a stand-in passed over before is judged again, and built when it may pass
    wider = decode_search(content, None, context=CONTEXT, memo=memo, screen=_below(3000))
    assert [x.item_id for x in wider.items[name]] == ["1", "2", "3"]


def test_a_name_sent_again_as_the_same_text_is_the_same_part_until_its_judge_changes() -> None:
    # two names: one unchanged between the answers, one with a listing repriced
    same = [{**BASE, "item_id": str(i), "price": 1000 * i} for i in range(1, 5)]
    other = {**BASE, "name": "AWP | Asiimov (Field-Tested)"}
    before = [{**other, "item_id": str(i), "price": 1000 * i} for i in range(11, 14)]
    after = [*before[:2], {**before[2], "price": 1}]
    memo = ListingMemo()
    judges: dict[str, Callable[[RawListing], bool] | None] = {}

    def screen(name: str) -> Callable[[RawListing], bool] | None:
        # one judge per name, as the engine's screen learns them
        return judges.setdefault(name, _below(2000)(name))

    first = decode_search(_answer(same + before), None, context=CONTEXT, memo=memo, screen=screen)
    again = decode_search(_answer(same + after), None, context=CONTEXT, memo=memo, screen=screen)
    fresh = decode_search(_answer(same + after), None, context=CONTEXT, screen=screen)
    name, changed = BASE["name"], other["name"]
    # the unchanged name: its very tuples again; the changed one: read again, same values
    assert again.judged_items[name] is first.judged_items[name]
    assert again.items[name] is first.items[name]
    assert [x.item_id for x in again.items[changed]] == ["13"]
    assert [x.item_id for x in again.judged_items[changed]] == ["11", "12", "13"]
    assert again.judged_items[changed][0] is first.judged_items[changed][0]
    assert again.passed_over == fresh.passed_over == 4
    assert again.passed_over_phases == fresh.passed_over_phases
    # another judge: the kept part is screened again
    wider = decode_search(
        _answer(same + after), None, context=CONTEXT, memo=memo, screen=_below(3000)
    )
    assert [x.item_id for x in wider.items[name]] == ["1", "2", "3"]


def test_a_part_with_a_set_aside_listing_is_read_and_set_aside_every_time() -> None:
    entries = [{**BASE, "item_id": "1", "price": 1000}, {**BASE, "item_id": "2", "price": "x"}]
    memo = ListingMemo()
    for _ in range(2):
        answer = decode_search(_answer(entries), None, context=CONTEXT, memo=memo, screen=_below(1))
        assert [s.path for s in answer.set_aside] == [f"items.{BASE['name']}.1"]
        assert answer.passed_over == 1


def _edited(entries: list[Any], rng: random.Random, round_: int) -> list[Any]:
    """A name's next part: listings come and go anywhere, some change their price (and
    so their place), now and then one is odd (set aside) or sent twice."""
    out = list(entries)
    for i in range(rng.choice([0, 1, 1, 2, 4])):
        roll = rng.random()
        if roll < 0.3 and out:
            out.pop(rng.randrange(len(out)))
        elif roll < 0.6 and out:
            old = out.pop(rng.randrange(len(out)))
            out.append({**old, "price": max(0, old["price"] + rng.randint(-3000, 3000))})
        elif roll < 0.85:
            phase = rng.choice(["", "Phase 2", "Ruby"])
            out.append(
                {**BASE, "item_id": f"n{round_}-{i}", "price": rng.randint(0, 9000), "phase": phase}
            )
        elif roll < 0.93 and out:
            out.append(rng.choice(out))
        else:
            out.append(
                {
                    **BASE,
                    "item_id": f"odd{round_}-{i}",
                    "price": rng.randint(0, 9000),
                    "unlock_at": "soon",
                }
            )
    return sorted(out, key=lambda x: x["price"])


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("limit", [-1, 2000, 10**9], ids=["none-built", "some-built", "all-built"])
def test_a_changed_part_reads_as_the_full_decode_and_keeps_what_it_can(
    seed: int, limit: int
) -> None:
    rng = random.Random(seed)
    entries = sorted(
        ({**BASE, "item_id": str(i), "price": rng.randint(0, 9000)} for i in range(40)),
        key=lambda x: x["price"],
    )
    memo = ListingMemo()
    judge = _below(limit)(BASE["name"])  # one judge, as the engine's screen keeps it
    last: dict[str, Any] = {}
    name = BASE["name"]
    for n in range(30):
        if n:
            entries = _edited(entries, rng, n)
        content = _answer(entries)
        got = decode_search(content, None, context=CONTEXT, memo=memo, screen=lambda _: judge)
        fresh = decode_search(content, None, context=CONTEXT, screen=lambda _: judge)
        full = decode_per_item(SearchResponse, content, context=CONTEXT)
        assert got.items == fresh.items
        assert got.set_aside == fresh.set_aside == full.set_aside
        assert got.passed_over == fresh.passed_over
        assert got.passed_over_phases == fresh.passed_over_phases
        judged = got.judged_items.get(name, ())
        assert [x.item_id for x in judged] == [x.item_id for x in full.items.get(name, ())]
        for x, model in zip(judged, full.items.get(name, ()), strict=True):
            if type(x) is RawListing:
                same_fields(x, model)
            else:
                assert x == model
        # a listing sent as before is what was made of it before
        texts = [json.dumps(e).encode() for e in entries if "unlock_at" not in e]
        for text, x in zip(texts, judged, strict=True):
            if text in last:
                assert x is last[text]
        last = dict(zip(texts, judged, strict=True))
