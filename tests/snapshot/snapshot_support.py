"""Helpers for the snapshot tests: build bodies and feed them in pieces."""

from __future__ import annotations

import gzip
from collections.abc import AsyncIterator, Iterator

from engine.snapshot import CsvSnapshotParser, Snapshot, SnapshotListing


def gz(text: str | bytes) -> bytes:
    data = text.encode() if isinstance(text, str) else text
    return gzip.compress(data, mtime=0)


def pieces(data: bytes, size: int) -> Iterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start : start + size]


async def apieces(data: bytes, size: int) -> AsyncIterator[bytes]:
    for piece in pieces(data, size):
        yield piece


def parse(
    text: str | bytes, *, piece: int = 1 << 16, block_size: int = 1 << 20, packed: bool = True
) -> Snapshot:
    data = text.encode() if isinstance(text, str) else text
    body = gz(data) if packed else data
    parser = CsvSnapshotParser(block_size=block_size)
    for chunk in pieces(body, piece):
        parser.feed(chunk)
    return parser.close()


def listings(snapshot: Snapshot) -> list[SnapshotListing]:
    return list(snapshot)


def L(
    item_id: str,
    name: str,
    price: int | None,
    unlock_at: int | None = None,
    send_until: int | None = None,
) -> SnapshotListing:
    return SnapshotListing(item_id, name, price, unlock_at, send_until)
