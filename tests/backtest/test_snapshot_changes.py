"""The replay's snapshot answers told as changes (engine/backtest/_served.py) give the
engine's tracker the very diff the whole body gives, answer after answer; a tracker that
missed an answer reads the body; a search answer's listings are those a sort of the
name's listings gives (the replay market keeps them sorted as they change, or as they
are read when no answer looked at them since their last change)."""

from __future__ import annotations

import json
import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from engine import VirtualClock
from engine.backtest import ReplayMarket, ReplayTransport, read_records
from engine.snapshot import CHANGES_EXTENSION, SnapshotChanges, SnapshotDiff, SnapshotTracker

from .support import T0, entry, write

pytestmark = pytest.mark.anyio

NAMES = ("AK-47 | Redline (Field-Tested)", 'Sticker | "Quoted", Holo', "AWP | Asiimov")


def _random_market(seed: int, steps: int = 40) -> list[tuple[float, str, Any]]:
    """Snapshots every 10 s of a market that lists, relists (an id gone and back),
    reprices, removes, and locks listings whose locks end during the recording; search
    answers in between reprice and add listings between two snapshots."""
    draw = random.Random(seed)
    rows: dict[str, tuple[Any, ...]] = {}
    gone: list[str] = []
    serial = 0

    def fresh(t: float) -> tuple[Any, ...]:
        nonlocal serial
        if gone and draw.random() < 0.3:
            item_id = gone.pop(draw.randrange(len(gone)))
        else:
            serial += 1
            item_id = str(1000 + serial) if draw.random() < 0.95 else f"x{serial}"
        unlock = int(T0 + t + draw.randrange(1, 200)) if draw.random() < 0.3 else None
        send = unlock + 600 if unlock is not None and draw.random() < 0.5 else None
        return (item_id, draw.choice(NAMES), draw.randrange(1000, 1100), unlock, send)

    for _ in range(60):
        row = fresh(0.0)
        rows[row[0]] = row
    out: list[tuple[float, str, Any]] = []
    for step in range(steps):
        t = step * 10.0
        for item_id in draw.sample(sorted(rows), k=min(len(rows), draw.randrange(0, 5))):
            gone.append(item_id)
            del rows[item_id]
        for item_id in draw.sample(sorted(rows), k=min(len(rows), draw.randrange(0, 8))):
            old = rows[item_id]
            rows[item_id] = (*old[:2], old[2] + draw.randrange(-20, 21), *old[3:])
        for _ in range(draw.randrange(0, 5)):
            row = fresh(t)
            rows[row[0]] = row
        out.append((t, "snap", list(rows.values())))
        if step % 3 == 1:  # between two snapshots: a search answer changes the market
            picked = draw.sample(sorted(rows), k=min(len(rows), 3))
            entries = [entry(i, rows[i][2] - 7, 1200, name=rows[i][1]) for i in picked]
            entries.append(entry(f"{9000 + step}", 990, 1200, name=NAMES[0]))
            out.append((t + 5.0, "search", entries))
    return out


def _request(include_hold: bool) -> httpx.Request:
    params = {"format": "csv", "include_hold": "1" if include_hold else "0"}
    return httpx.Request("GET", "http://replay.invalid/v1/prices/snapshot", params=params)


async def _answer(transport: ReplayTransport, include_hold: bool) -> tuple[SnapshotChanges, bytes]:
    response = await transport.handle_async_request(_request(include_hold))
    changes = response.extensions[CHANGES_EXTENSION]
    assert isinstance(changes, SnapshotChanges)
    return changes, b"".join([chunk async for chunk in response.aiter_bytes()])


async def _chunks(body: bytes, read: list[bool] | None = None) -> AsyncIterator[bytes]:
    if read is not None:
        read.append(True)
    yield body


def _seen(diff: SnapshotDiff) -> tuple[Any, ...]:
    ids, prices, names = diff.columns()
    counts = (diff.new, diff.dropped, diff.raised, diff.removed, diff.unchanged, diff.unpriced)
    return (diff.first, counts, list(diff), ids, list(prices), names, diff.names_cheapest_first())


@pytest.mark.parametrize("include_hold", [True, False])
@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_an_answer_told_as_changes_gives_the_diff_of_its_body(
    tmp_path: Path, include_hold: bool, seed: int
) -> None:
    data = write(tmp_path / "rec", _random_market(seed), include_hold=True)
    market = ReplayMarket(read_records(data))
    clock = VirtualClock(T0)
    transport = ReplayTransport(market, clock)
    told, whole = SnapshotTracker(), SnapshotTracker()
    bodies_read = 0
    for half_step in range(80):  # every 5 s: half of the answers are the same as before
        clock.jump_to(T0 + 5.0 * half_step)
        changes, body = await _answer(transport, include_hold)
        read: list[bool] = []
        fast = await told.aupdate_csv(_chunks(body, read), changes=changes)
        slow = await whole.aupdate_csv(_chunks(body))
        bodies_read += bool(read)
        assert _seen(fast) == _seen(slow), f"at {5 * half_step} s"
        ids = [str(i) for i in market.listings] + ["1001", "1002", "x3"]
        assert told.current_prices(ids) == whole.current_prices(ids)
    assert bodies_read == 1  # the first answer only


async def test_a_tracker_that_missed_an_answer_reads_the_body(tmp_path: Path) -> None:
    data = write(tmp_path / "rec", _random_market(7), include_hold=True)
    market = ReplayMarket(read_records(data))
    clock = VirtualClock(T0)
    transport = ReplayTransport(market, clock)
    told, whole = SnapshotTracker(), SnapshotTracker()
    for step in range(30):
        clock.jump_to(T0 + 10.0 * step)
        changes, body = await _answer(transport, True)
        if step in (4, 5, 17):  # lost on the way: neither tracker gets it
            continue
        read: list[bool] = []
        fast = await told.aupdate_csv(_chunks(body, read), changes=changes)
        slow = await whole.aupdate_csv(_chunks(body))
        assert bool(read) == (step in (0, 6, 18)), f"at {step}"
        # (a body parsed whole holds its ids as text when one is not a number; the rows
        # parsed alone hold numbers: the same ids)
        fast_seen, slow_seen = _seen(fast), _seen(slow)
        assert [str(i) for i in fast_seen[3]] == [str(i) for i in slow_seen[3]]
        assert fast_seen[1:3] + fast_seen[4:] == slow_seen[1:3] + slow_seen[4:]


@pytest.mark.parametrize("every", [5, 60], ids=["read-often", "read-seldom"])
@pytest.mark.parametrize("include_hold", [True, False])
async def test_search_listings_are_the_cheapest_50_in_order(
    tmp_path: Path, include_hold: bool, every: int
) -> None:
    """Read often, a name's changes are few when read (each moved to its place); read
    seldom, many (the name sorted again): the same answers either way."""
    steps = _random_market(5, steps=30)
    big = [(str(5000 + i), NAMES[0], 1000 + (i * 7) % 90, None, None) for i in range(120)]
    steps[0] = (0.0, "snap", [*steps[0][2], *big])
    market = ReplayMarket(read_records(write(tmp_path / "rec", steps, include_hold=True)))
    for t in range(0, 300, every):
        now = T0 + t
        market.advance_to(now)
        for name in NAMES:
            cheapest = min((r[1] for r in market.listings.values() if r[0] == name), default=None)
            assert market.cheapest(name) == cheapest
            expected = sorted(
                (row[1], item_id, row)
                for item_id, row in market.listings.items()
                if row[0] == name and (include_hold or row[2] is None or row[2] <= now)
            )[:50]
            found, until = market.listings_of(name, include_hold=include_hold, now=now)
            assert found == [(item_id, row) for _, item_id, row in expected]
            assert until > now


@pytest.mark.parametrize("include_hold", [True, False])
async def test_kept_search_answers_are_the_answers_made_afresh(
    tmp_path: Path, include_hold: bool
) -> None:
    steps = _random_market(9, steps=30)
    big = [(str(5000 + i), NAMES[0], 1000 + (i * 7) % 90, None, None) for i in range(120)]
    steps[0] = (0.0, "snap", [*steps[0][2], *big])
    market = ReplayMarket(read_records(write(tmp_path / "rec", steps, include_hold=True)))
    clock = VirtualClock(T0)
    kept = ReplayTransport(market, clock)
    params = [("name", n) for n in NAMES] + [("include_hold", "1" if include_hold else "0")]
    request = httpx.Request("GET", "http://replay.invalid/v2/search-items-by-name", params=params)
    for t in range(0, 300, 3):
        clock.jump_to(T0 + t)
        answer = await kept.handle_async_request(request)
        afresh = await ReplayTransport(market, clock).handle_async_request(request)
        assert answer.content == afresh.content, f"at {t} s"


@pytest.mark.parametrize("include_hold", [True, False])
@pytest.mark.parametrize("seed", [31, 32, 33])
async def test_kept_search_answers_see_the_candidates_answers_made_afresh_see(
    tmp_path: Path, include_hold: bool, seed: int
) -> None:
    """A kept part is looked through for candidates only when one may show in it: the
    listings a search shows stop being unseen candidates exactly as if every part were
    made afresh (relisted ids, reprices, a snapshot sending a shown row again)."""
    steps = _random_market(seed, steps=40)
    big = [(str(5000 + i), NAMES[0], 1000 + (i * 7) % 90, None, None) for i in range(120)]
    steps[0] = (0.0, "snap", [*steps[0][2], *big])
    # tiny segments: each snapshot is a key with every row again (kept parts re-sent)
    data = write(tmp_path / "rec", steps, include_hold=True, segment_bytes=256)
    markets = [ReplayMarket(read_records(data), ceiling=lambda name: 1060) for _ in range(2)]
    clocks = [VirtualClock(T0), VirtualClock(T0)]
    kept = ReplayTransport(markets[0], clocks[0])
    params = [("name", n) for n in NAMES] + [("include_hold", "1" if include_hold else "0")]
    request = httpx.Request("GET", "http://replay.invalid/v2/search-items-by-name", params=params)
    for t in range(0, 400):
        for clock, market in zip(clocks, markets, strict=True):
            clock.jump_to(T0 + t)
            market.advance_to(T0 + t)
        await kept.handle_async_request(request)
        await ReplayTransport(markets[1], clocks[1]).handle_async_request(request)
        assert markets[0]._candidates == markets[1]._candidates, f"at {t} s"
    assert markets[0].counters == markets[1].counters
    assert markets[0].counters.unseen_candidates > 0
    assert markets[0].counters.unseen_by_name


async def test_a_shown_row_sent_again_is_seen_by_the_next_search_of_a_kept_part(
    tmp_path: Path,
) -> None:
    """The boundary of the candidate marks: a snapshot re-sends a listing a search showed
    (same price: the name's answer is kept), which makes it a candidate again; the next
    search, answered from the kept part, still counts it as seen."""
    rows = [("1", NAMES[0], 1000, None, None), ("2", NAMES[0], 1200, None, None)]
    steps = [(0.0, "snap", rows), (20.0, "snap", rows), (40.0, "snap", rows[1:])]
    # a segment per snapshot: each a key with every row (not a diff that leaves them out)
    data = write(tmp_path / "rec", steps, include_hold=True, segment_bytes=1)
    assert [r.k for r in read_records(data)].count("key") == 3
    market = ReplayMarket(read_records(data), ceiling=lambda name: 1500)
    clock = VirtualClock(T0)
    transport = ReplayTransport(market, clock)
    params = [("name", NAMES[0]), ("include_hold", "1")]
    request = httpx.Request("GET", "http://replay.invalid/v2/search-items-by-name", params=params)
    for t in (10, 30, 50):
        clock.jump_to(T0 + t)
        market.advance_to(T0 + t)
        await transport.handle_async_request(request)
        assert market._candidates == set(), f"at {t} s"
    assert market.counters.unseen_candidates == 0  # "1" left at 40 s, seen at 30 s


@pytest.mark.parametrize("seed", [21, 22, 23, 24])
async def test_patched_search_answers_are_the_answers_made_afresh(
    tmp_path: Path, seed: int
) -> None:
    """A changed name's part is patched from its last one (only the listings whose place
    changed are looked at): a search answer's details of a listing at the same price, a
    new reference, relisted ids with other locks, ending locks and a name with no listing
    for a while still show."""
    draw = random.Random(seed)
    steps = _random_market(seed, steps=40)
    big = [(str(5000 + i), NAMES[0], 1000 + (i * 7) % 90, None, None) for i in range(60)]
    steps[0] = (0.0, "snap", [*steps[0][2], *big])
    for step in range(2, 40, 4):  # the same price with other details; a new reference
        t, _, rows = steps[[s[0] for s in steps].index(step * 10.0)]
        picked = draw.sample(rows, k=3)
        reference = 1200 + 10 * draw.randrange(0, 3)
        payload = [entry(r[0], r[2], reference, name=r[1]) for r in picked]
        payload[0]["float"] = draw.random()
        payload[1]["unlock_at"] = int(T0 + t + draw.randrange(1, 60))  # (a listed row's lock)
        steps.append((t + 2.0, "search", payload))
    for at, (t, kind, rows) in enumerate(steps):  # a name with no listing for 30 s
        if kind == "snap" and 100.0 <= t < 130.0:
            steps[at] = (t, kind, [r for r in rows if r[1] != NAMES[1]])
    steps.sort(key=lambda s: s[0])
    market = ReplayMarket(read_records(write(tmp_path / "rec", steps, include_hold=True)))
    clock = VirtualClock(T0)
    kept = ReplayTransport(market, clock)
    params = [("name", n) for n in NAMES] + [("include_hold", "1")]
    request = httpx.Request("GET", "http://replay.invalid/v2/search-items-by-name", params=params)
    for t in range(0, 400, 2):
        clock.jump_to(T0 + t)
        answer = await kept.handle_async_request(request)
        afresh = await ReplayTransport(market, clock).handle_async_request(request)
        assert answer.content == afresh.content, f"at {t} s"


@pytest.mark.parametrize("include_hold", [True, False])
async def test_catalogue_pages_rank_as_a_sort_of_every_listing(
    tmp_path: Path, include_hold: bool
) -> None:
    steps = _random_market(11, steps=30)
    big = [(str(5000 + i), NAMES[2], 1000 + (i * 7) % 90, None, None) for i in range(120)]
    steps[0] = (0.0, "snap", [*steps[0][2], *big])
    # references: one per name, and listings with details (a reference of their own)
    steps.insert(1, (0.0, "search", [entry("5003", 1021, 1100, name=NAMES[2])]))
    market = ReplayMarket(read_records(write(tmp_path / "rec", steps, include_hold=True)))
    clock = VirtualClock(T0)
    transport = ReplayTransport(market, clock)
    for t in range(0, 300, 7):
        for cursor, limit in ((0, 100), (30, 20), (150, 100)):
            clock.jump_to(T0 + t)
            params = {"cursor": str(cursor), "limit": str(limit)}
            params["include_hold"] = "1" if include_hold else "0"
            request = httpx.Request("GET", "http://replay.invalid/v2/get-items-list", params=params)
            body = (await transport.handle_async_request(request)).json()
            now = clock.now()
            everything = sorted(
                (row[1] / reference, item_id)
                for item_id, row in market.listings.items()
                if (include_hold or row[2] is None or row[2] <= now)
                and (reference := market.reference(item_id, row[0]))
            )
            expected = [item_id for _, item_id in everything[cursor : cursor + limit]]
            assert [item["item_id"] for item in body["items"]] == expected, f"at {t} s"
            assert body["has_more"] == (cursor + limit < len(everything))


@pytest.mark.parametrize(
    ("name", "row_tail", "reference"),
    [
        (NAMES[0], (1000, None, None), None),
        (NAMES[1], (1234, int(T0) + 60, None), 1500),  # locked, no send_until
        ("Café ★ | \\back\\slash\t", (7, int(T0) + 60, int(T0) + 600), 9),
        (NAMES[2], (5, int(T0) - 60, int(T0) + 600), 0),  # the lock ended
    ],
)
def test_a_listing_without_details_is_written_as_json_dumps_writes_it(
    name: str, row_tail: tuple[int, int | None, int | None], reference: int | None
) -> None:
    market = ReplayMarket(iter([]))
    transport = ReplayTransport(market, VirtualClock(T0))
    row = (name, *row_tail)
    if reference is not None:
        market.references[name] = reference
    text = transport._entry_text('id "7"\u00e9', row, T0)[1]
    assert text == json.dumps(transport._entry('id "7"\u00e9', row, T0))
