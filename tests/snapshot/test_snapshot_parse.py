"""The CSV snapshot parser: columns by header name, CSV quoting, empty cells, any chunking."""

from __future__ import annotations

import gzip
import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from snapshot_support import L, gz, listings, parse, pieces

from engine.snapshot import CsvSnapshotParser, SnapshotListing, parse_csv_snapshot

AK = "AK-47 | Redline (Field-Tested)"
DOPPLER = "★ Karambit | Doppler Phase 2 (Factory New)"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "item_id,name,price,auto,inspect\n1,AK,000000027867,true,steam://x\n",
            [L("1", "AK", 27867)],
            id="documented-order",
        ),
        pytest.param(
            "price,inspect,name,auto,item_id\n000000000500,steam://x,AK,false,77\n",
            [L("77", "AK", 500)],
            id="other-order",
        ),
        pytest.param(
            "item_id,name,price\n5,AK,12\n",
            [L("5", "AK", 12)],
            id="only-required-columns",
        ),
        pytest.param(
            "paintseed,item_id,float,name,price,new_col\n9,5,0.1,AK,12,x\n",
            [L("5", "AK", 12)],
            id="unknown-extra-columns",
        ),
        pytest.param(
            "\ufeff Item_ID ,NAME, Price \n5,AK,12\n",
            [L("5", "AK", 12)],
            id="bom-case-and-spaces-in-header",
        ),
        pytest.param(
            "item_id,name,price\n1,AK,000000000000\n2,AK,0\n3,AK,000000000001\n",
            [L("1", "AK", 0), L("2", "AK", 0), L("3", "AK", 1)],
            id="zero-padded-prices",
        ),
        pytest.param(
            "item_id,name,price,auto,inspect\n1,AK,,,\n2,,7,,\n",
            [L("1", "AK", None), L("2", "", 7)],
            id="empty-cells-are-unknown",
        ),
        pytest.param(
            'item_id,name,price\n1,"Sticker | Hello, World",5\n2,"say ""hi""",6\n',
            [L("1", "Sticker | Hello, World", 5), L("2", 'say "hi"', 6)],
            id="quoted-names",
        ),
        pytest.param(
            'item_id,name,price\n1,"two\nlines, really",5\n2,AK,6\n',
            [L("1", "two\nlines, really", 5), L("2", "AK", 6)],
            id="newline-inside-quotes",
        ),
        pytest.param(
            'item_id,name,price\n1,Knife 5" blade,5\n2,AK,6\n',
            [L("1", 'Knife 5" blade', 5), L("2", "AK", 6)],
            id="quote-inside-unquoted-cell-is-text",
        ),
        pytest.param(
            f"item_id,name,price\n1,{DOPPLER},99000\n",
            [L("1", DOPPLER, 99000)],
            id="doppler-phase-in-name-kept",
        ),
        pytest.param(
            "item_id,name,price\r\n1,AK,5\r\n2,AK,6\r\n",
            [L("1", "AK", 5), L("2", "AK", 6)],
            id="crlf",
        ),
        pytest.param(
            "item_id,name,price\n1,AK,5\n\n2,AK,6",
            [L("1", "AK", 5), L("2", "AK", 6)],
            id="blank-line-and-no-final-newline",
        ),
        pytest.param(
            "item_id,name,price,auto,inspect\n1,AK,5\n",
            [L("1", "AK", 5)],
            id="short-row-missing-only-optional-cells",
        ),
        pytest.param("item_id,name,price\n", [], id="header-only"),
    ],
)
def test_reads_columns_by_header_name(text: str, expected: list[SnapshotListing]) -> None:
    assert listings(parse(text)) == expected


@pytest.mark.parametrize(
    ("cells", "unlock_at", "send_until"),
    [
        pytest.param(",", None, None, id="not-trade-locked"),
        pytest.param(
            "2026-11-29T10:00:00Z,2026-12-06T10:00:00Z", 1795946400, 1796551200, id="rfc3339"
        ),
        pytest.param(
            "2026-11-29T12:00:00+02:00,1796551200", 1795946400, 1796551200, id="offset-and-epoch"
        ),
    ],
)
def test_hold_columns(cells: str, unlock_at: int | None, send_until: int | None) -> None:
    snapshot = parse(f"item_id,name,price,auto,inspect,unlock_at,send_until\n1,AK,5,,,{cells}\n")
    assert snapshot.has_hold
    assert listings(snapshot) == [L("1", "AK", 5, unlock_at, send_until)]


def test_without_hold_columns_times_are_none() -> None:
    snapshot = parse("item_id,name,price\n1,AK,5\n")
    assert not snapshot.has_hold
    assert snapshot[0].unlock_at is None


@pytest.mark.parametrize(
    ("ids", "numeric"),
    [
        pytest.param(["1", "29834567890", "123456789012345678"], True, id="plain-numbers"),
        pytest.param(["007", "7"], False, id="leading-zero-kept"),
        pytest.param(["a1b2", "c3"], False, id="text"),
        pytest.param(["1", "1234567890123456789012"], False, id="longer-than-int64"),
    ],
)
def test_item_ids_are_kept_exactly(ids: list[str], numeric: bool) -> None:
    text = "item_id,name,price\n" + "".join(f"{i},AK,5\n" for i in ids)
    snapshot = parse(text)
    assert [row.item_id for row in snapshot] == ids
    assert snapshot.numeric_ids is numeric
    assert all(snapshot.get(i) is not None for i in ids)


def test_text_id_in_a_later_block_turns_earlier_numeric_ids_to_text() -> None:
    rows = [f"{n},AK,5\n" for n in range(1, 400)] + ["x-1,AK,5\n"]
    snapshot = parse("item_id,name,price\n" + "".join(rows), block_size=256)
    assert not snapshot.numeric_ids
    assert [row.item_id for row in snapshot] == [str(n) for n in range(1, 400)] + ["x-1"]


def test_lookup_by_id() -> None:
    snapshot = parse(f"item_id,name,price\n10,AK,5\n11,{DOPPLER},6\n")
    assert snapshot.get("11") == L("11", DOPPLER, 6)
    assert snapshot.get("12") is None
    assert snapshot.get("011") is None
    assert "10" in snapshot
    assert "nope" not in snapshot
    assert set(snapshot.names) == {"AK", DOPPLER}


def test_plain_body_is_read_as_is() -> None:
    # An HTTP layer that honoured Content-Encoding: gzip hands over the CSV itself.
    assert listings(parse("item_id,name,price\n1,AK,5\n", packed=False)) == [L("1", "AK", 5)]


def test_several_gzip_members_are_one_body() -> None:
    body = gz("item_id,name,price\n1,AK,5\n") + gz("2,AK,6\n")
    assert listings(parse_csv_snapshot([body])) == [L("1", "AK", 5), L("2", "AK", 6)]


def _market(rows: int) -> str:
    names = ["AK", DOPPLER, "Sticker | Hello, World", 'say "hi"', "M4A1-S | Nitro", "two\nlines"]
    lines = ["item_id,name,price,auto,inspect,unlock_at,send_until\n"]
    for n in range(rows):
        name = names[n % len(names)]
        quote = "," in name or '"' in name or "\n" in name
        cell = f'"{name.replace(chr(34), 2 * chr(34))}"' if quote else name
        price = "" if n % 11 == 0 else f"{n * 37 % 100000:012d}"
        hold = "2026-11-29T10:00:00Z,1796551200" if n % 7 == 0 else ","
        lines.append(f"{1000 + n},{cell},{price},true,steam://{n},{hold}\n")
    return "".join(lines)


MARKET = _market(300)
MARKET_GZ = gz(MARKET)
EXPECTED = listings(parse(MARKET))


def test_market_fixture_exercises_every_path() -> None:
    assert len(EXPECTED) == 300
    assert {row.name for row in EXPECTED} >= {"Sticker | Hello, World", 'say "hi"', "two\nlines"}
    assert any(row.price is None for row in EXPECTED)
    assert any(row.unlock_at == 1795946400 for row in EXPECTED)


@pytest.mark.parametrize("piece", [1, 2, 7, 64, 4096])
@pytest.mark.parametrize("block_size", [1, 100, 1 << 20])
def test_any_piece_and_block_size_gives_the_same_snapshot(piece: int, block_size: int) -> None:
    parser = CsvSnapshotParser(block_size=block_size)
    for chunk in pieces(MARKET_GZ, piece):
        parser.feed(chunk)
    assert listings(parser.close()) == EXPECTED


@settings(max_examples=60, deadline=None)
@given(
    cuts=st.lists(st.integers(min_value=0, max_value=len(MARKET_GZ)), max_size=40),
    block_size=st.integers(min_value=1, max_value=3000),
)
def test_any_chunking_gives_the_same_snapshot(cuts: list[int], block_size: int) -> None:
    bounds = [0, *sorted(cuts), len(MARKET_GZ)]
    parser = CsvSnapshotParser(block_size=block_size)
    for start, end in itertools.pairwise(bounds):
        parser.feed(MARKET_GZ[start:end])
    assert listings(parser.close()) == EXPECTED


def test_feeding_after_close_is_a_programming_error() -> None:
    parser = CsvSnapshotParser()
    parser.feed(gzip.compress(b"item_id,name,price\n"))
    parser.close()
    with pytest.raises(RuntimeError):
        parser.feed(b"x")
    with pytest.raises(RuntimeError):
        parser.close()


def test_timestamp_is_carried() -> None:
    parser = CsvSnapshotParser(timestamp=1_795_000_000)
    parser.feed(b"item_id,name,price\n")
    assert parser.close().timestamp == 1_795_000_000
