"""SnapshotTracker.update_csv: parse only the rows whose bytes changed, and still give the
same diff as parsing every row (parse_csv_snapshot + update)."""

from __future__ import annotations

import random
from contextlib import aclosing
from pathlib import Path
from unittest import mock

import anyio
import anyio.lowlevel
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from snapshot_support import apieces, gz, pieces

from engine import ConfigError, MalformedResponse
from engine.snapshot import (
    NewListing,
    PriceDrop,
    SnapshotDiff,
    SnapshotTracker,
    _diff,
    _lines,
    parse_csv_snapshot,
)

AK = "AK-47 | Redline (Field-Tested)"
HELLO = "Sticker | Hello, World"  # quoted: it has a comma
QUOTE = 'Graffiti | "Tiger" (Orange)'  # quoted, with doubled quotes
BREAK = "Name with a\nline break"  # a quoted cell that spans two lines
NAMES = [AK, "M4A4 | Howl (Minimal Wear)", HELLO, QUOTE, BREAK]
HEADER = "item_id,name,price,auto,unlock_at,send_until"
Row = tuple[str, str, int | None, str, int | None]  # id, name, price, auto, unlock_at


def cell(text: str) -> str:
    if any(c in text for c in ',"\n'):
        return '"' + text.replace('"', '""') + '"'
    return text


def body(rows: list[Row], header: str = HEADER) -> bytes:
    columns = header.split(",")
    lines = [header]
    for item_id, name, price, auto, unlock in rows:
        values = {
            "item_id": item_id,
            "name": cell(name),
            "price": "" if price is None else f"{price:012d}",
            "auto": auto,
            "unlock_at": "" if unlock is None else str(unlock),
            "send_until": "" if unlock is None else str(unlock + 604800),
        }
        lines.append(",".join(values[c] for c in columns))
    return ("\n".join(lines) + "\n").encode()


def summary(diff: SnapshotDiff) -> tuple[object, ...]:
    counts = (diff.new, diff.dropped, diff.raised, diff.removed, diff.unchanged, diff.unpriced)
    return list(diff), counts, diff.names_cheapest_first(), diff.first


def whole_way(bodies: list[bytes]) -> list[tuple[object, ...]]:
    tracker = SnapshotTracker()
    return [summary(tracker.update(parse_csv_snapshot([data]))) for data in bodies]


def csv_way(bodies: list[bytes], *, piece: int = 1 << 16) -> list[SnapshotDiff]:
    tracker = SnapshotTracker()
    return [tracker.update_csv(pieces(gz(data), piece)) for data in bodies]


def market(n: int, seed: int = 1) -> list[Row]:
    rnd = random.Random(seed)
    return [
        (str(10_000 + i), rnd.choice(NAMES), rnd.randint(1, 10_000), "true", None) for i in range(n)
    ]


# -- the same diff as the whole parse ---------------------------------------------------


@pytest.mark.parametrize(
    ("previous", "current", "events", "counts"),
    [
        pytest.param(
            [("1", AK, 100, "true", None)],
            [("1", AK, 100, "true", None), ("2", HELLO, 50, "true", None)],
            [NewListing("2", HELLO, 50)],
            (1, 0, 0, 0, 1, 0),
            id="new",
        ),
        pytest.param(
            [("1", AK, 100, "true", None), ("2", QUOTE, 70, "true", None)],
            [("1", AK, 90, "true", None), ("2", QUOTE, 80, "true", None)],
            [PriceDrop("1", AK, 100, 90)],
            (0, 1, 1, 0, 0, 0),
            id="drop-and-raise",
        ),
        pytest.param(
            [("1", AK, 100, "true", None), ("2", AK, 100, "true", None)],
            [("2", AK, 100, "false", None)],
            [],
            (0, 0, 0, 1, 1, 0),
            id="another-column-changed-is-no-event",
        ),
        pytest.param(
            [("1", AK, None, "true", None), ("2", AK, None, "true", None)],
            [("1", AK, 80, "true", None), ("2", AK, None, "true", None)],
            [NewListing("1", AK, 80)],
            (1, 0, 0, 0, 0, 1),
            id="price-becomes-known",
        ),
        pytest.param(
            [("1", BREAK, 100, "true", None)],
            [("1", BREAK, 90, "true", 1796000000)],
            [PriceDrop("1", BREAK, 100, 90, 1796000000, 1796604800)],
            (0, 1, 0, 0, 0, 0),
            id="multi-line-record-with-hold",
        ),
        pytest.param(
            [("1", AK, 100, "true", None)],
            [("1", AK, 90, "true", None), ("1", AK, 95, "true", None)],
            [PriceDrop("1", AK, 100, 90), PriceDrop("1", AK, 100, 95)],
            (0, 2, 0, 0, 0, 0),
            id="duplicate-id-now",
        ),
        pytest.param(
            [("1", AK, 100, "true", None), ("1", AK, 50, "true", None)],
            [("1", AK, 100, "true", None), ("1", AK, 50, "true", None)],
            [],
            (0, 0, 1, 0, 1, 0),
            id="duplicate-id-before-and-now",
        ),
        pytest.param(
            [("10", AK, 100, "true", None), ("11", AK, 100, "true", None)],
            [("10", AK, 90, "true", None), ("x-1", AK, 5, "true", None)],
            [PriceDrop("10", AK, 100, 90), NewListing("x-1", AK, 5)],
            (1, 1, 0, 1, 0, 0),
            id="ids-turn-to-text",
        ),
    ],
)
def test_events_and_counts(
    previous: list[Row], current: list[Row], events: list[object], counts: tuple[int, ...]
) -> None:
    bodies = [body(previous), body(current)]
    changes = csv_way(bodies)[1]
    assert list(changes) == events
    got = (
        changes.new,
        changes.dropped,
        changes.raised,
        changes.removed,
        changes.unchanged,
        changes.unpriced,
    )
    assert got == counts
    assert summary(changes) == whole_way(bodies)[1]


def test_only_changed_rows_are_parsed_and_the_first_snapshot_is_whole() -> None:
    rows = market(500)
    later = [*rows[:100], (rows[100][0], rows[100][1], 1, "true", None), *rows[101:]]
    first, second = csv_way([body(rows), body(later)])
    assert first.first
    assert first.snapshot is not None
    assert set(first.snapshot.names) == {name for _, name, _, _, _ in rows}
    assert second.snapshot is None  # the fast way: only the changed row was parsed
    assert len(second._current) == 1
    assert list(second) == [PriceDrop(rows[100][0], rows[100][1], rows[100][2], 1)]
    assert second.unchanged == 499


def test_a_new_header_is_parsed_whole_and_read_by_column_name() -> None:
    rows = market(50)
    reordered = "price,auto,item_id,name,unlock_at,send_until"
    cheaper = [(*row[:2], row[2] - 1 if row[2] else None, *row[3:]) for row in rows[:3]]
    bodies = [body(rows), body(cheaper + rows[3:], header=reordered)]
    diffs = csv_way(bodies)
    assert diffs[1].snapshot is not None
    assert [e.item_id for e in diffs[1]] == [row[0] for row in rows[:3]]
    assert summary(diffs[1]) == whole_way(bodies)[1]


def test_rows_that_moved_far_are_unchanged() -> None:
    rows = market(3000)
    moved = rows[2000:] + rows[:2000]
    diffs = csv_way([body(rows), body(moved)])
    assert (len(diffs[1]), diffs[1].unchanged, diffs[1].removed) == (0, 3000, 0)


def test_blank_lines_are_not_rows() -> None:
    rows = market(20)
    text = body(rows).replace(b"\n", b"\n\n", 3)
    bodies = [body(rows), text, body(rows[1:])]
    diffs = csv_way(bodies)
    assert [d.unchanged for d in diffs[1:]] == [20, 19]
    assert [summary(d) for d in diffs] == whole_way(bodies)


def _edit(rnd: random.Random, rows: list[Row], ops: int) -> list[Row]:
    rows = list(rows)
    for _ in range(ops):
        at = rnd.randrange(len(rows) + 1)
        kind = rnd.choice(["insert", "remove", "price", "auto", "hold", "move", "dup"])
        if kind == "insert" or not rows:
            item_id = str(rnd.randrange(1, 10**6)) if rnd.random() < 0.9 else f"x{rnd.random()}"
            price = rnd.choice([None, rnd.randint(1, 10_000)])
            rows.insert(at, (item_id, rnd.choice(NAMES), price, "true", None))
            continue
        at = min(at, len(rows) - 1)
        item_id, name, price, auto, unlock = rows[at]
        if kind == "remove":
            del rows[at]
        elif kind == "price":
            rows[at] = (item_id, name, rnd.choice([None, rnd.randint(1, 10_000)]), auto, unlock)
        elif kind == "auto":
            rows[at] = (item_id, name, price, "false" if auto == "true" else "true", unlock)
        elif kind == "hold":
            rows[at] = (item_id, name, price, auto, rnd.choice([None, 1796000000]))
        elif kind == "move":
            rows.insert(rnd.randrange(len(rows)), rows.pop(at))
        elif rnd.random() < 0.2:  # an id on two rows now and then: the whole parse decides
            rows.insert(rnd.randrange(len(rows)), (item_id, name, 1, auto, unlock))
    return rows


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    size=st.integers(0, 300),
    polls=st.integers(2, 5),
    ops=st.integers(0, 30),
    block_size=st.sampled_from([1, 200, 4096, 1 << 20]),
    window=st.sampled_from([1, 4, 64]),
    shuffle=st.booleans(),
)
def test_fast_way_and_whole_parse_agree(
    seed: int, size: int, polls: int, ops: int, block_size: int, window: int, shuffle: bool
) -> None:
    rnd = random.Random(seed)
    snapshots = [market(size, seed)]
    for _ in range(polls - 1):
        rows = _edit(rnd, snapshots[-1], ops)
        if shuffle and rnd.random() < 0.5:
            rnd.shuffle(rows)
        snapshots.append(rows)
    bodies = [body(rows) for rows in snapshots]
    with (
        mock.patch.object(_diff, "_CSV_BLOCK_SIZE", block_size),
        mock.patch.object(_lines, "_WINDOW", window),
        mock.patch.object(_lines, "_FAR", 2),
        mock.patch.object(_lines, "_GIVE_UP", rnd.choice([0, 10, 4096])),
    ):
        got = [summary(diff) for diff in csv_way(bodies, piece=rnd.choice([7, 100, 1 << 16]))]
    # A snapshot with an id on two rows is judged the same way, but which of its prices
    # the tracker remembers for that id may differ from then on (the whole parse keeps
    # the last changed row, or the last row once it starts afresh): compare up to it.
    repeated = [len({row[0] for row in rows}) != len(rows) for rows in snapshots]
    upto = repeated.index(True) + 1 if True in repeated else len(bodies)
    assert got[:upto] == whole_way(bodies)[:upto]


def _with_blank_lines(rnd: random.Random, rows: list[Row], blanks: int) -> bytes:
    """The body of ``rows`` with ``blanks`` empty lines put between records (or first)."""
    records = [body([row])[len(HEADER) + 1 :] for row in rows]
    for _ in range(blanks):
        records.insert(rnd.randrange(len(records) + 1), b"\n")
    return (HEADER + "\n").encode() + b"".join(records)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    size=st.integers(0, 200),
    ops=st.integers(0, 20),
    blanks=st.lists(st.integers(0, 6), min_size=2, max_size=4),
    block_size=st.sampled_from([1, 300, 1 << 20]),
)
def test_blank_lines_anywhere_do_not_change_the_diff(
    seed: int, size: int, ops: int, blanks: list[int], block_size: int
) -> None:
    # Blank lines are told apart per block (issue 20 made that test cheaper): wherever they
    # fall, next to quoted cells and line breaks inside them too, the fast way and the
    # whole parse agree.
    rnd = random.Random(seed)
    snapshots = [market(size, seed)]
    for _ in blanks[1:]:
        snapshots.append(_edit(rnd, snapshots[-1], ops))
    if any(len({row[0] for row in rows}) != len(rows) for rows in snapshots):
        snapshots = [list({row[0]: row for row in rows}.values()) for rows in snapshots]
    bodies = [_with_blank_lines(rnd, rows, n) for rows, n in zip(snapshots, blanks, strict=True)]
    with mock.patch.object(_diff, "_CSV_BLOCK_SIZE", block_size):
        got = [summary(diff) for diff in csv_way(bodies, piece=rnd.choice([5, 100, 1 << 16]))]
    assert got == whole_way(bodies)
    assert got == whole_way([body(rows) for rows in snapshots])


# -- errors -------------------------------------------------------------------------------


def test_a_bad_changed_row_names_its_row_and_leaves_the_tracker_as_it_was(
    tmp_path: Path,
) -> None:
    rows = market(3000)
    tracker = SnapshotTracker()
    tracker.update_csv([gz(body(rows))])
    bad = body(rows).replace(f"{rows[2500][0]},".encode(), f"{rows[2500][0]},".encode(), 1)
    bad = bad.replace(f"{rows[2500][2]:012d}".encode(), b"12x", 1)
    with pytest.raises(MalformedResponse, match="row 2502") as caught:
        tracker.update_csv(pieces(gz(bad), 4096))
    assert caught.value.field == "price"
    file = tmp_path / "snapshot.csv.gz"
    file.write_bytes(gz(bad))
    with pytest.raises(ConfigError) as config_error:
        tracker.update_csv([file.read_bytes()], source=file)
    assert f"{file}:2502" in str(config_error.value)
    cheaper = [*rows[:10], (rows[10][0], rows[10][1], 0, "true", None), *rows[11:]]
    assert [e.item_id for e in tracker.update_csv([gz(body(cheaper))])] == [rows[10][0]]


def test_a_cut_stream_leaves_the_tracker_as_it_was() -> None:
    from engine import Unavailable

    rows = market(2000)
    tracker = SnapshotTracker()
    tracker.update_csv([gz(body(rows))])
    packed = gz(body(rows[1:]))
    with pytest.raises(Unavailable):
        tracker.update_csv([packed[: len(packed) // 2]])
    assert tracker.update_csv([packed]).removed == 1


# -- on asyncio and trio -----------------------------------------------------------------


async def test_aupdate_csv_matches_update_csv() -> None:
    bodies = [body(market(200)), body(_edit(random.Random(3), market(200), 20))]
    tracker = SnapshotTracker()
    got = [summary(await tracker.aupdate_csv(apieces(gz(data), 512))) for data in bodies]
    assert got == [summary(diff) for diff in csv_way(bodies)]


async def test_aupdate_csv_lets_other_tasks_run_while_the_body_streams() -> None:
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await anyio.lowlevel.checkpoint()

    data = gz(body(market(300)))
    async with anyio.create_task_group() as group:
        group.start_soon(ticker)
        await anyio.lowlevel.checkpoint()
        before = ticks
        await SnapshotTracker().aupdate_csv(apieces(data, 256))
        during = ticks - before
        group.cancel_scope.cancel()
    assert during >= len(data) // 256 - 1


async def test_cancelled_aupdate_csv_leaves_the_tracker_as_it_was() -> None:
    rows = market(100)
    tracker = SnapshotTracker()
    await tracker.aupdate_csv(apieces(gz(body(rows)), 1 << 16))
    cheaper = [(rows[0][0], rows[0][1], 0, "true", None), *rows[1:]]
    async with aclosing(apieces(gz(body(cheaper)), 64)) as stream:
        with anyio.CancelScope() as scope:
            scope.cancel()
            await tracker.aupdate_csv(stream)
    changes = await tracker.aupdate_csv(apieces(gz(body(cheaper)), 64))
    assert [e.item_id for e in changes] == [rows[0][0]]


def test_snapshots_and_csv_bodies_can_take_turns() -> None:
    rnd = random.Random(5)
    snapshots = [market(100)]
    for _ in range(4):
        snapshots.append(_edit(rnd, snapshots[-1], 10))
    bodies = [body(rows) for rows in snapshots]
    tracker = SnapshotTracker()
    got = []
    for n, data in enumerate(bodies):
        if n % 2:
            got.append(summary(tracker.update(parse_csv_snapshot([data]))))
        else:
            got.append(summary(tracker.update_csv([data])))
    assert got == whole_way(bodies)


@pytest.mark.parametrize("give_up", [0, 4096])
def test_from_an_empty_market_every_row_is_new(give_up: int) -> None:
    rows = market(50)
    with mock.patch.object(_lines, "_GIVE_UP", give_up):
        diffs = csv_way([body([]), body(rows), body([])])
    assert [len(diffs[1]), diffs[1].new, diffs[2].removed] == [50, 50, 50]
