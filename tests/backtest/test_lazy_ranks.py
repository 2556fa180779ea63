"""The replay market's lazily sorted lists (a name no answer looked at keeps its changes
pending) and its journal, against the listings themselves, under random adds, repricings,
removals, diffs and key frames."""

from __future__ import annotations

import random

import pytest

from engine.backtest._market import ReplayMarket
from engine.backtest._snaprows import apply_diff, apply_key


def _truth(market: ReplayMarket, name: str) -> list[tuple[int, str]] | None:
    return sorted((row[1], i) for i, row in market.listings.items() if row[0] == name) or None


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("size", [25, 120])
def test_names_read_are_sorted_and_the_journal_serves_the_listings(seed: int, size: int) -> None:
    rnd = random.Random(seed)
    market = ReplayMarket(iter([]), ceiling=lambda n: 50)
    names, ids = ["A", "B", "C"], [str(i) for i in range(size)]

    def rows(items: list[tuple[str, str, int]]) -> dict[str, list[object]]:
        return {
            "id": [i for i, _, _ in items],
            "name": [n for _, n, _ in items],
            "price": [p for _, _, p in items],
            "unlock": [None] * len(items),
            "send": [None] * len(items),
        }

    served: dict[str, object] | None = None
    for _ in range(800):
        r = rnd.random()
        if r < 0.3:
            market._apply_entry(
                {"name": rnd.choice(names), "item_id": rnd.choice(ids), "price": rnd.randint(1, 8)}
            )
        elif r < 0.45:
            market._remove(rnd.choice(ids), gone=rnd.random() < 0.1)
        elif r < 0.6:
            repriced = rnd.sample(ids, rnd.randint(0, 3))
            added = [(rnd.choice(ids), rnd.choice(names), rnd.randint(1, 8)) for _ in range(3)]
            apply_diff(
                market,
                {
                    "del": rnd.sample(ids, rnd.randint(0, 3)),
                    "add": rows(added[: rnd.randint(0, 3)]),
                    "px": {"id": repriced, "price": [rnd.randint(1, 8) for _ in repriced]},
                },
            )
        elif r < 0.63:
            chosen = rnd.sample(ids, rnd.randint(0, size // 2))
            apply_key(market, rows([(i, rnd.choice(names), rnd.randint(1, 8)) for i in chosen]))
        elif r < 0.85:
            name = rnd.choice(names)
            ranked = market.ranked(name)
            assert (list(ranked) if ranked else None) == _truth(market, name)
            market.shown(name, min(50, len(ranked or [])))
        else:
            if served is None:
                market.keep_journal()
                market.drain_journal()
                served = dict(market.listings)
            else:
                for item_id in market.drain_journal():
                    row = market.listings.get(item_id)
                    if row is None:
                        served.pop(item_id, None)
                    else:
                        served[item_id] = row
                assert served == market.listings
    every = market.all_ranked()
    assert {n: every.get(n) for n in names} == {n: _truth(market, n) for n in names}
