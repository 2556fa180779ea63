"""An answer told as changes (SnapshotChanges, a replay's) gives the tracker the diff its
whole body gives, poll after poll, while rows go, come back, lose or gain a price and new
ids fill the places of gone ones (the tracker counts the unpriced and finds free places as
the changes come, not by a pass over the market)."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator

import anyio
from hypothesis import given, settings
from hypothesis import strategies as st
from snapshot_support import apieces

from engine.snapshot import SnapshotChanges, SnapshotDiff, SnapshotTracker

HEADER = b"item_id,name,price,unlock_at,send_until"
NAMES = ("AK-47 | Redline (Field-Tested)", "AWP | Asiimov (Field-Tested)", "Glock-18 | Fade")
Market = dict[str, tuple[str, int | None]]  # id -> (name, price)


def _record(item_id: str, name: str, price: int | None) -> bytes:
    return f"{item_id},{name},{'' if price is None else price},,".encode()


def _body(rows: Market) -> bytes:
    lines = [HEADER, *(_record(i, *row) for i, row in rows.items())]
    return b"\n".join(lines) + b"\n"


def _next(rnd: random.Random, rows: Market, serial: list[int], gone: list[str]) -> Market:
    rows = dict(rows)
    for item_id in rnd.sample(sorted(rows), k=min(len(rows), rnd.randrange(0, 6))):
        del rows[item_id]
        gone.append(item_id)
    for item_id in rnd.sample(sorted(rows), k=min(len(rows), rnd.randrange(0, 6))):
        name, price = rows[item_id]
        rows[item_id] = (name, rnd.choice([None, rnd.randrange(100, 200), price]))
    for _ in range(rnd.randrange(0, 7)):
        if gone and rnd.random() < 0.4:  # an id gone and back
            item_id = gone.pop(rnd.randrange(len(gone)))
        else:
            serial[0] += 1
            item_id = str(serial[0])
        rows.setdefault(item_id, (rnd.choice(NAMES), rnd.choice([None, rnd.randrange(100, 200)])))
    return rows


def _changes(token: object, base: object, before: Market, now: Market) -> SnapshotChanges:
    records = [_record(i, *row) for i, row in now.items() if before.get(i) != row]
    removed = [i for i in before if i not in now]
    return SnapshotChanges(token, base, HEADER + b"\n", records, removed, len(now))


def _seen(diff: SnapshotDiff) -> tuple[object, ...]:
    counts = (diff.new, diff.dropped, diff.raised, diff.removed, diff.unchanged, diff.unpriced)
    return counts, list(diff), diff.names_cheapest_first()


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32), size=st.integers(0, 60), polls=st.integers(2, 25))
def test_changes_give_the_diff_of_the_body(seed: int, size: int, polls: int) -> None:
    rnd = random.Random(seed)
    serial, gone = [size], list[str]()
    markets = [{str(i): (rnd.choice(NAMES), rnd.choice([None, 150])) for i in range(size)}]
    for _ in range(polls - 1):
        markets.append(_next(rnd, markets[-1], serial, gone))

    async def run() -> None:
        told, whole = SnapshotTracker(), SnapshotTracker()
        tokens = [object() for _ in markets]
        read: list[int] = []
        for poll, rows in enumerate(markets):
            base = tokens[poll - 1] if poll else None
            before = markets[poll - 1] if poll else {}
            changes = _changes(tokens[poll], base, before, rows)

            async def body(poll: int = poll, rows: Market = rows) -> AsyncIterator[bytes]:
                read.append(poll)
                async for piece in apieces(_body(rows), 64):
                    yield piece

            fast = await told.aupdate_csv(body(), changes=changes)
            slow = await whole.aupdate_csv(apieces(_body(rows), 64))
            assert _seen(fast) == _seen(slow), poll
            ids = [*rows, *gone, "999999"]
            assert told.current_prices(ids) == whole.current_prices(ids), poll
        assert read == [0]  # only the first answer's body is read

    anyio.run(run)
