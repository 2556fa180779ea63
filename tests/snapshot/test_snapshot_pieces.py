"""update_csv splits each inflated piece where it lies (issue 20): the record a piece ends
in is carried over to the next one. Wherever the pieces are cut, the diff is the one the
whole parse gives, for the rows that real snapshots have; with the C helpers of
``_rows.c`` (lines hashed where they lie) and without them (the pure-Python way)."""

from __future__ import annotations

from itertools import pairwise
from unittest import mock

import pytest
from snapshot_support import gz, pieces

from engine import MalformedResponse
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
HEADER = "item_id,name,price,auto,unlock_at,send_until"
BEFORE = (
    f"{HEADER}\n"
    f"1,{AK},000000000100,true,,\n"
    '2,"Sticker | Hello, World",000000000200,true,,\n'
    f"3,{AK},000000000300,false,1796000000,1796604800\n"
    '4,"two\nlines",000000000400,true,,\n'
    f"5,{AK},,true,,\n"
)


@pytest.fixture(params=["c", "python"], autouse=True)
def way(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "python":
        monkeypatch.setattr(_lines, "_C", None)
    elif _lines._C is None:
        pytest.skip("engine/snapshot/_rows.c is not built")
    return str(request.param)


def summary(diff: SnapshotDiff) -> tuple[object, ...]:
    counts = (diff.new, diff.dropped, diff.raised, diff.removed, diff.unchanged, diff.unpriced)
    return list(diff), counts


def whole(before: str, after: str) -> tuple[object, ...]:
    tracker = SnapshotTracker()
    tracker.update(parse_csv_snapshot([before.encode()]))
    return summary(tracker.update(parse_csv_snapshot([after.encode()])))


def fast(before: str, after: bytes, cuts: list[int], *, packed: bool = False) -> SnapshotDiff:
    """The diff of ``after`` fed in pieces cut at ``cuts``, each parsed as it comes."""
    tracker = SnapshotTracker()
    tracker.update_csv([gz(before)])
    body = gz(after) if packed else after
    bounds = [0, *cuts, len(body)]
    with mock.patch.object(_diff, "_CSV_BLOCK_SIZE", 1):
        return tracker.update_csv(body[a:b] for a, b in pairwise(bounds))


CASES = [
    pytest.param(
        BEFORE.replace(
            "1,AK-47 | Redline (Field-Tested),000000000100,true", f"1,{AK},000000000100,false"
        ),
        [],
        (0, 0, 0, 0, 4, 1),
        id="a-column-the-engine-ignores-changed",
    ),
    pytest.param(
        BEFORE.replace("000000000200", "200").replace("000000000300", "0290"),
        [PriceDrop("3", AK, 300, 290, 1796000000, 1796604800)],
        (0, 1, 0, 0, 3, 1),
        id="zero-padding-changed",
    ),
    pytest.param(
        BEFORE.replace("000000000100", "").replace(f"5,{AK},,", f"5,{AK},000000000050,"),
        [NewListing("5", AK, 50)],
        (1, 0, 0, 0, 3, 1),
        id="empty-price-cells",
    ),
    pytest.param(
        BEFORE.replace(",,\n", ",\n")
        .replace(HEADER, "item_id,name,price,auto,unlock_at")
        .replace("1796000000,1796604800", "1796000000"),
        [],
        (0, 0, 0, 0, 4, 1),
        id="a-column-removed",
    ),
    pytest.param(
        BEFORE.replace(HEADER, "item_id,float,name,price,auto,unlock_at,send_until")
        .replace("\n1,", "\n1,0.01,")
        .replace("\n2,", "\n2,0.02,")
        .replace("\n3,", "\n3,,")
        .replace("\n4,", "\n4,0.04,")
        .replace("\n5,", "\n5,0.5,")
        .replace("000000000400", "000000000399"),
        [PriceDrop("4", "two\nlines", 400, 399)],
        (0, 1, 0, 0, 3, 1),
        id="a-column-added-in-the-middle",
    ),
    pytest.param(
        BEFORE.replace("\n", "\r\n").replace('"two\r\nlines"', '"two\nlines"'),
        [],
        (0, 0, 0, 0, 4, 1),
        id="crlf-line-endings",
    ),
    pytest.param(
        f'{BEFORE}6,{AK},000000000010,true,,\n7,"say ""hi""",000000000070,true,,\n'.replace(
            f"1,{AK},000000000100,true,,\n", ""
        ),
        [NewListing("6", AK, 10), NewListing("7", 'say "hi"', 70)],
        (2, 0, 0, 1, 3, 1),
        id="rows-removed-and-added",
    ),
    pytest.param(
        BEFORE + "\n\n",
        [],
        (0, 0, 0, 0, 4, 1),
        id="blank-lines-at-the-end",
    ),
    pytest.param(
        BEFORE.rstrip("\n"),
        [],
        (0, 0, 0, 0, 4, 1),
        id="no-line-break-at-the-end",
    ),
]


@pytest.mark.parametrize(("after", "events", "counts"), CASES)
def test_every_cut_of_the_body_gives_the_whole_parse_diff(
    after: str, events: list[object], counts: tuple[int, ...]
) -> None:
    data = after.encode()
    expected = whole(BEFORE, after)
    assert expected == (events, counts)
    # One cut anywhere (in a row, between CR and LF, in a quoted line break), then two.
    for cut in range(1, len(data)):
        assert summary(fast(BEFORE, data, [cut])) == expected, cut
    for cut in range(1, len(data) - 7, 3):
        assert summary(fast(BEFORE, data, [cut, cut + 7])) == expected, cut
    assert summary(fast(BEFORE, data, list(range(1, len(data))))) == expected
    assert summary(fast(BEFORE, data, [13], packed=True)) == expected


@pytest.mark.parametrize("piece", [1, 5, 64, 1 << 16])
def test_crlf_bodies_poll_after_poll_take_the_fast_way(piece: int) -> None:
    bodies = [BEFORE, BEFORE.replace("000000000300", "000000000250")]
    crlf = [text.replace("\n", "\r\n").encode() for text in bodies]
    tracker = SnapshotTracker()
    tracker.update_csv([gz(crlf[0])])
    with mock.patch.object(_diff, "_CSV_BLOCK_SIZE", 1):
        diff = tracker.update_csv(pieces(crlf[1], piece))
    assert diff.snapshot is None  # the fast way: only the changed row was parsed
    assert len(diff._current) == 1
    assert list(diff) == [PriceDrop("3", AK, 300, 250, 1796000000, 1796604800)]
    assert diff.unchanged == 3


def test_a_bad_row_in_a_later_piece_names_its_row() -> None:
    after = BEFORE.replace("000000000300", "3x0").encode()
    with pytest.raises(MalformedResponse, match="row 4") as caught:
        fast(BEFORE, after, list(range(10, len(after), 10)))
    assert caught.value.field == "price"


def test_a_quote_never_closed_is_an_error_naming_its_row() -> None:
    after = (BEFORE + '6,"open,1,true,,\n' + "7,AK,1,true,,\n" * 50).encode()
    with pytest.raises(MalformedResponse, match="row 7"):
        fast(BEFORE, after, list(range(40, len(after), 40)))


def test_with_the_c_helpers_plain_pieces_are_not_split_in_python(
    way: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    split = []
    real = _lines.split_records

    def spy(text: bytes, *, final: bool) -> tuple[list[bytes], bytes]:
        split.append(text)
        return real(text, final=final)

    monkeypatch.setattr(_lines, "split_records", spy)
    plain = "item_id,name,price\n" + "".join(f"{n},{AK},{n}\n" for n in range(1, 30))
    after = plain.replace(f"7,{AK},7", f"7,{AK},6")
    cuts = [plain.index("3,"), plain.index("9,") + 4]
    assert [e.item_id for e in fast(plain, after.encode(), cuts)] == ["7"]
    # Split in Python: the first snapshot (parsed whole) and the piece with the header;
    # the two pieces of plain rows after it only without the C helpers.
    assert len(split) == (2 if way == "c" else 4)
