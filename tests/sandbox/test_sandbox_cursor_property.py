"""Property: a v2 cursor walk over a market that changes between pages (arrivals,
departures, price edits) returns every listing at most once, and every listing that stays
on the market unedited for the whole walk exactly once. Sans-I/O, on the catalogue core."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.sandbox import Market, MarketConfig
from engine.sandbox._browse import CatalogueQuery, Cursor, catalogue_page

START = 1_767_225_600.0


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    order_by=st.sampled_from(["price", "profit", "discount"]),
    descending=st.booleans(),
    limit=st.integers(1, 100),
    gaps=st.lists(st.floats(0.0, 900.0), min_size=1, max_size=8),
    edits=st.lists(st.integers(10, 2_000_000), max_size=8),
)
def test_cursor_walk_returns_each_listing_at_most_once(
    seed: int,
    order_by: str,
    descending: bool,
    limit: int,
    gaps: list[float],
    edits: list[int],
) -> None:
    market = Market(seed=seed, start=START, config=MarketConfig(size=300, reprice_share=0.8))
    query = CatalogueQuery(None, None, None, None, None, None, True, order_by, descending)
    steady = {item_id: listing.price for item_id, listing in market.listings.items()}
    seen: list[int] = []
    cursor: Cursor | None = None
    step = 0
    while True:
        page = catalogue_page(
            list(market.listings.values()), query, now=market.now, limit=limit, skip=0,
            cursor=cursor,
        )  # fmt: skip
        seen += [listing.item_id for listing in page.listings]
        if not page.has_more:
            assert page.next_cursor is None
            break
        assert page.next_cursor is not None
        cursor = Cursor.decode(page.next_cursor, query)
        market.advance_to(market.now + gaps[step % len(gaps)])
        if step < len(edits):  # a sharp edit of a listing not walked past yet
            walked = set(seen)
            ahead = [li for li in market.listings.values() if li.item_id not in walked]
            if ahead:
                target = ahead[len(ahead) // 2]
                target.price = edits[step]
                target.edits.append((market.now, edits[step]))
        step += 1
    assert len(seen) == len(set(seen))
    unchanged = {
        item_id
        for item_id, price in steady.items()
        if (listing := market.listings.get(item_id)) is not None
        and listing.price == price
        and not listing.edits
    }
    assert unchanged <= set(seen)
