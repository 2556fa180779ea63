"""The CSV snapshot is streamed as byte chunks, without the key."""

from __future__ import annotations

import gzip
from collections.abc import AsyncIterator

import httpx
import pytest
from client_support import Recorder

from engine import RateLimited, Unavailable
from engine.client import MarketClient

CSV = b"item_id,name,price,auto,inspect,unlock_at,send_until\n1,AK,000000027867,,,,\n"


async def chunks_of(data: bytes, size: int = 7) -> AsyncIterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start : start + size]


async def test_streams_gzip_file_as_is(client: MarketClient, recorder: Recorder) -> None:
    packed = gzip.compress(CSV)
    recorder.reply(
        httpx.Response(200, content=chunks_of(packed), headers={"content-type": "application/gzip"})
    )
    received: list[bytes] = []
    async with client.snapshot_csv(game="csgo", include_hold=True) as stream:
        assert stream.content_type == "application/gzip"
        async for chunk in stream:
            received.append(chunk)
    assert len(received) > 1  # delivered piece by piece, not loaded whole
    assert gzip.decompress(b"".join(received)) == CSV
    sent = recorder.last
    assert sent.url.path == "/v1/prices/snapshot"
    assert list(sent.url.params.multi_items()) == [
        ("format", "csv"),
        ("game", "csgo"),
        ("include_hold", "1"),
    ]


async def test_content_encoding_gzip_is_decoded(client: MarketClient, recorder: Recorder) -> None:
    recorder.reply(
        httpx.Response(
            200,
            content=gzip.compress(CSV),
            headers={"content-type": "text/csv", "content-encoding": "gzip"},
        )
    )
    async with client.snapshot_csv() as stream:
        body = b"".join([chunk async for chunk in stream])
    assert body == CSV
    assert "api" not in recorder.last.url.params


@pytest.mark.parametrize(
    ("answer", "error", "attr"),
    [
        (httpx.Response(429, headers={"Retry-After": "1"}), RateLimited, ("retry_after", 1.0)),
        (httpx.Response(503, text="building"), Unavailable, ("status_code", 503)),
        (httpx.Response(403), Exception, ("status_code", 403)),
        (httpx.ConnectError("refused"), Unavailable, ("status_code", None)),
    ],
    ids=["429", "503", "403", "connect"],
)
async def test_errors_raise_on_entry(
    answer: object,
    error: type[Exception],
    attr: tuple[str, object],
    client: MarketClient,
    recorder: Recorder,
) -> None:
    recorder.reply(answer)  # type: ignore[arg-type]
    entered = False
    with pytest.raises(error) as info:
        async with client.snapshot_csv():
            entered = True
    assert not entered
    assert getattr(info.value, attr[0]) == attr[1]


async def test_broken_stream_is_unavailable(client: MarketClient, recorder: Recorder) -> None:
    async def broken() -> AsyncIterator[bytes]:
        yield b"item_id,name,price\n"
        raise httpx.ReadError("connection reset")

    recorder.reply(httpx.Response(200, content=broken()))
    received: list[bytes] = []

    async def read_all() -> None:
        async with client.snapshot_csv() as stream:
            async for chunk in stream:
                received.append(chunk)

    with pytest.raises(Unavailable, match="stream broke"):
        await read_all()
    assert received == [b"item_id,name,price\n"]
