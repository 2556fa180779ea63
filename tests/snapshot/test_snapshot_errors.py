"""Broken snapshots raise a clear error naming the place; never a partial snapshot."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from snapshot_support import gz, parse

from engine import ConfigError, MalformedResponse, Unavailable
from engine.snapshot import SNAPSHOT_ENDPOINT, CsvSnapshotParser, _csv, load_snapshot_file

GOOD = "item_id,name,price\n1,AK,5\n2,AK,6\n"


@pytest.mark.parametrize(
    ("text", "row", "field", "words"),
    [
        pytest.param("id,name,price\n1,AK,5\n", 1, "item_id", "no item_id column", id="no-id"),
        pytest.param("item_id,title,price\n1,AK,5\n", 1, "name", "no name column", id="no-name"),
        pytest.param("item_id,name,cost\n1,AK,5\n", 1, "price", "no price column", id="no-price"),
        pytest.param("item_id,name,price\n1,AK,5\n2,AK,12.5\n", 3, "price", "12.5", id="decimal"),
        pytest.param("item_id,name,price\n1,AK,abc\n", 2, "price", "abc", id="text-price"),
        pytest.param("item_id,name,price\n1,AK,-5\n", 2, "price", "-5", id="negative-price"),
        pytest.param("item_id,name,price\n1,AK, 5\n", 2, "price", "' 5'", id="padded-price"),
        pytest.param(
            "item_id,name,price\n1,AK,99999999999999999999\n", 2, "price", "too large", id="huge"
        ),
        pytest.param("item_id,name,price\n1,AK,5\n,AK,6\n", 3, "item_id", "empty", id="no-id"),
        pytest.param("item_id,name,price\n1,AK,5\n2,AK\n", 3, None, "2 cells", id="short-row"),
        pytest.param('item_id,name,price\n1,"AK,5\n', 2, None, "not valid CSV", id="open-quote"),
        pytest.param(
            "item_id,name,price,unlock_at\n1,AK,5,soon\n", 2, "unlock_at", "soon", id="bad-time"
        ),
    ],
)
def test_bad_rows_from_the_service(text: str, row: int, field: str | None, words: str) -> None:
    with pytest.raises(MalformedResponse) as caught:
        parse(text)
    error = caught.value
    assert error.endpoint == SNAPSHOT_ENDPOINT == "GET /v1/prices/snapshot"
    assert f"row {row}:" in str(error)
    assert words in str(error)
    assert error.field == field


def test_bad_utf8_names_the_row() -> None:
    with pytest.raises(MalformedResponse, match=r"row 3: .*UTF-8"):
        parse(b"item_id,name,price\n1,AK,5\n2,\xff\xfe,6\n")


def test_error_row_is_right_deep_into_a_large_body() -> None:
    rows = "".join(f"{n},AK,{n:012d}\n" for n in range(1, 5001))
    with pytest.raises(MalformedResponse, match="row 4002: price b'x'"):
        parse(
            "item_id,name,price\n" + rows.replace(f"4001,AK,{4001:012d}", "4001,AK,x"),
            block_size=1000,
        )


@pytest.mark.parametrize("keep", [0.2, 0.5, 0.95])
def test_truncated_gzip_stream_is_unavailable(keep: float) -> None:
    body = gz(GOOD * 50)
    parser = CsvSnapshotParser()
    parser.feed(body[: int(len(body) * keep)])
    with pytest.raises(Unavailable, match=r"stopped after \d+ bytes, before its end") as caught:
        parser.close()
    assert not isinstance(caught.value, MalformedResponse)
    assert caught.value.endpoint == SNAPSHOT_ENDPOINT


def test_corrupt_gzip_is_malformed() -> None:
    body = bytearray(gz(GOOD))
    body[12:20] = b"\x00" * 8
    with pytest.raises(MalformedResponse, match="not valid gzip"):
        parse(bytes(body), packed=False)


@pytest.mark.parametrize("body", [b"", b"\x1f"])
def test_empty_body_is_malformed(body: bytes) -> None:
    parser = CsvSnapshotParser()
    parser.feed(body)
    with pytest.raises(MalformedResponse, match=r"no header row|header has no"):
        parser.close()


def test_trailing_garbage_after_gzip_is_malformed() -> None:
    with pytest.raises(MalformedResponse, match="not valid gzip"):
        parse(gz(GOOD) + b"garbage!", packed=False)


@pytest.mark.parametrize(
    "tail",
    [
        pytest.param("3,AK," + "9" * 3000, id="endless-row"),
        pytest.param('3,"never closed\n' + "4,AK,5\n" * 500, id="quote-never-closed"),
    ],
)
def test_runaway_row_is_malformed_without_reading_on(
    tail: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_csv, "_MAX_RECORD", 1000)
    parser = CsvSnapshotParser(block_size=100)
    with pytest.raises(MalformedResponse, match=r"row 4: no end of row within 1000 bytes"):
        feed_all(parser, gz(GOOD + tail))


def feed_all(parser: CsvSnapshotParser, data: bytes) -> None:
    for start in range(0, len(data), 50):
        parser.feed(data[start : start + 50])


# -- a recorded file: ConfigError naming file:row --------------------------------------------


def test_recorded_file_with_bad_price_names_file_and_row(tmp_path: Path) -> None:
    path = tmp_path / "snapshot.csv.gz"
    path.write_bytes(gz("item_id,name,price\n1,AK,5\n2,AK,five\n"))
    with pytest.raises(ConfigError) as caught:
        load_snapshot_file(path)
    assert caught.value.location == f"{path}:3"
    assert caught.value.field == "price"
    assert "five" in str(caught.value)


def test_truncated_recorded_file_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "snapshot.csv.gz"
    path.write_bytes(gz(GOOD * 100)[:-20])
    with pytest.raises(ConfigError, match="stopped after"):
        load_snapshot_file(path)


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read") as caught:
        load_snapshot_file(tmp_path / "nope.csv.gz")
    assert caught.value.location == str(tmp_path / "nope.csv.gz")


@pytest.mark.parametrize("packed", [True, False])
def test_recorded_file_loads(tmp_path: Path, packed: bool) -> None:
    path = tmp_path / "snapshot.csv"
    path.write_bytes(gzip.compress(GOOD.encode()) if packed else GOOD.encode())
    snapshot = load_snapshot_file(path, timestamp=7)
    assert [(row.item_id, row.price) for row in snapshot] == [("1", 5), ("2", 6)]
    assert snapshot.timestamp == 7
