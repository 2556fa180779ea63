"""Parsing while the body streams in, on asyncio and trio."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest
from snapshot_support import L, apieces, gz

from engine import Unavailable
from engine.snapshot import (
    Snapshot,
    SnapshotTracker,
    _diff,
    aparse_csv_snapshot,
    parse_csv_snapshot,
)

BODY = (
    "item_id,name,price,auto,inspect,unlock_at,send_until\n"
    '1,"Sticker | Hello, World",000000000500,true,steam://1,,\n'
    "2,★ Karambit | Doppler Ruby (Factory New),000001200000,false,steam://2,"
    "2026-11-29T10:00:00Z,2026-12-06T10:00:00Z\n"
    "3,AK,,true,steam://3,,\n"
)
EXPECTED = [
    L("1", "Sticker | Hello, World", 500),
    L("2", "★ Karambit | Doppler Ruby (Factory New)", 1200000, 1795946400, 1796551200),
    L("3", "AK", None),
]


@pytest.mark.parametrize("piece", [1, 5, 1 << 16])
async def test_parses_gzip_stream(piece: int) -> None:
    snapshot = await aparse_csv_snapshot(apieces(gz(BODY), piece), timestamp=9)
    assert list(snapshot) == EXPECTED
    assert snapshot.timestamp == 9


async def test_parses_already_decoded_stream() -> None:
    snapshot = await aparse_csv_snapshot(apieces(BODY.encode(), 3))
    assert list(snapshot) == EXPECTED


async def test_truncated_stream_raises_and_gives_no_snapshot() -> None:
    body = gz(BODY * 20)
    with pytest.raises(Unavailable, match="before its end"):
        await aparse_csv_snapshot(apieces(body[: len(body) // 2], 64))


async def test_stream_into_tracker() -> None:
    tracker = SnapshotTracker()
    tracker.update(await aparse_csv_snapshot(apieces(gz(BODY), 7)))
    cheaper = BODY.replace("000001200000", "000001100000")
    changes = tracker.update(await aparse_csv_snapshot(apieces(gz(cheaper), 7)))
    assert [(e.item_id, e.price) for e in changes] == [("2", 1100000)]


POLLS = [
    [("1", "AK", 100), ("2", "AK", 200), ("3", "M4", 300)],
    [("1", "AK", 90), ("3", "M4", 300), ("4", "M4", 5), ("5", "AK", None)],
    [("1", "AK", 95), ("5", "AK", 7), ("6", "AK", 1)],
]


def _snap(rows: list[tuple[str, str, int | None]]) -> Snapshot:
    body = "item_id,name,price\n" + "".join(
        f"{i},{n},{'' if p is None else p}\n" for i, n, p in rows
    )
    return parse_csv_snapshot([body.encode()])


@pytest.fixture(params=[1 << 16, 2], ids=["one-slice", "two-row-slices"])
def slice_rows(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(_diff, "_SLICE", request.param)
    return int(request.param)


async def test_aupdate_matches_update(slice_rows: int) -> None:
    sync, concurrent = SnapshotTracker(), SnapshotTracker()
    for rows in POLLS:
        expected = sync.update(_snap(rows))
        got = await concurrent.aupdate(_snap(rows))
        assert list(got) == list(expected)
        assert repr(got) == repr(expected)


async def test_aupdate_lets_other_tasks_run_between_slices(slice_rows: int) -> None:
    tracker = SnapshotTracker()
    tracker.update(_snap(POLLS[0]))
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as group:
        group.start_soon(ticker)
        await anyio.lowlevel.checkpoint()
        before = ticks
        await tracker.aupdate(_snap(POLLS[1]))  # 4 rows: 2 slices per pass with 2-row slices
        during = ticks - before
        group.cancel_scope.cancel()
    assert during >= (4 if slice_rows == 2 else 2) - 1


async def test_cancelled_aupdate_leaves_the_tracker_as_it_was() -> None:
    tracker = SnapshotTracker()
    tracker.update(_snap(POLLS[0]))
    with anyio.CancelScope() as scope:
        scope.cancel()
        await tracker.aupdate(_snap(POLLS[1]))
    changes = tracker.update(_snap(POLLS[1]))  # still compared with the first poll
    assert [e.item_id for e in changes] == ["1", "4"]


def test_update_inside_an_update_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_diff, "_SLICE", 1)
    tracker = SnapshotTracker()
    steps = tracker._steps(_snap(POLLS[0]), report_all=False)
    next(steps)
    with pytest.raises(RuntimeError, match="while another is running"):
        tracker.update(_snap(POLLS[1]))
