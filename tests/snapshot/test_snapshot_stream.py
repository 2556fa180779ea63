"""Parsing while the body streams in, on asyncio and trio."""

from __future__ import annotations

import pytest
from snapshot_support import L, apieces, gz

from engine import Unavailable
from engine.snapshot import SnapshotTracker, aparse_csv_snapshot

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
