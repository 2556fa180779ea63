"""The recording format: round trip, rotation, bounded disk, resume after a crash, and
clear errors (file and position) for damaged recordings."""

from __future__ import annotations

import contextlib
import gzip
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.backtest import RecordingError, RecordWriter, read_records, recording_span
from engine.backtest._format import KINDS, _parse_line, segment_paths

from .support import T0, entry, listing

ROWS = [listing(str(i), 1000 + i) for i in range(200)]


def _record(directory: Path, snapshots: int, **writer: int) -> None:
    with RecordWriter(directory, **writer) as w:
        rows = list(ROWS)
        for n in range(snapshots):
            rows = [*rows[1:], listing(f"n{n}", 5000 + n)]
            rows[0] = (rows[0][0], rows[0][1], rows[0][2] - 1, None, None)
            w.snapshot(T0 + 10 * n, rows)
            w.search(T0 + 10 * n + 1, [rows[0][1]], None, {rows[0][1]: [entry("x", 1, 2)]})


def _replayed(directory: Path) -> list[dict[str, tuple[str, int]]]:
    """Each snapshot's listings, rebuilt from the key frames and diffs."""
    state: dict[str, tuple[str, int]] = {}
    out = []
    for record in read_records(directory):
        if record.k == "key":
            rows = record.body["rows"]
            state = dict(
                zip(rows["id"], zip(rows["name"], rows["price"], strict=True), strict=True)
            )
        elif record.k == "diff":
            for item_id in record.body["del"]:
                del state[item_id]
            add = record.body["add"]
            state.update(zip(add["id"], zip(add["name"], add["price"], strict=True), strict=True))
            px = record.body["px"]
            for item_id, price in zip(px["id"], px["price"], strict=True):
                state[item_id] = (state[item_id][0], price)
        else:
            continue
        out.append(dict(state))
    return out


def test_diffs_rebuild_every_snapshot(tmp_path: Path) -> None:
    _record(tmp_path, 5)
    rows = list(ROWS)
    expected = []
    for n in range(5):
        rows = [*rows[1:], listing(f"n{n}", 5000 + n)]
        rows[0] = (rows[0][0], rows[0][1], rows[0][2] - 1, None, None)
        expected.append({r[0]: (r[1], r[2]) for r in rows})
    assert _replayed(tmp_path) == expected
    assert recording_span(tmp_path) == (T0, T0 + 41)


def test_segments_rotate_and_each_starts_with_a_key_frame(tmp_path: Path) -> None:
    _record(tmp_path, 30, segment_bytes=500)
    segments = segment_paths(tmp_path)
    assert len(segments) > 3
    for path in segments:
        lines = gzip.decompress(path.read_bytes()).splitlines()
        assert [json.loads(x)["k"] for x in lines[:2]] == ["head", "key"]


def test_disk_use_is_bounded_and_what_is_left_still_reads(tmp_path: Path) -> None:
    _record(tmp_path, 60, segment_bytes=2000, max_bytes=8000)
    total = sum(p.stat().st_size for p in segment_paths(tmp_path))
    assert total <= 8000 + 4000  # the bound, plus the segment being closed
    assert len(_replayed(tmp_path)) > 0


def test_a_crashed_recording_is_salvaged_and_resumed(tmp_path: Path) -> None:
    live = tmp_path / "live"
    with RecordWriter(live) as writer:
        writer.snapshot(T0, ROWS)
        writer.snapshot(T0 + 10, ROWS[1:])
        # a crash now: the files as they are on disk, the open segment without its end
        tmp_path = tmp_path / "crashed"
        shutil.copytree(live, tmp_path)
    (tmp_path / "seg-000001.jsonl.gz.open").write_bytes(
        (tmp_path / "seg-000001.jsonl.gz.open").read_bytes() + b"\x00garbage of a half line"
    )
    with pytest.raises(RecordingError, match="still open"):
        list(read_records(tmp_path))
    resumed = RecordWriter(tmp_path)
    assert resumed.resumed
    resumed.snapshot(T0 + 20, ROWS[2:])
    resumed.close()
    kinds = [r.k for r in read_records(tmp_path)]
    assert kinds == ["head", "key", "diff", "head", "resume", "key"]
    assert [len(s) for s in _replayed(tmp_path)] == [200, 199, 198]


def _one_segment(tmp_path: Path) -> Path:
    _record(tmp_path, 3)
    (path,) = segment_paths(tmp_path)
    return path


def _open_files() -> set[str]:
    fds = Path("/proc/self/fd")
    if not fds.is_dir():
        pytest.skip("needs /proc/self/fd")
    opened = set()
    for fd in fds.iterdir():
        with contextlib.suppress(OSError):  # closed while listed
            opened.add(str(fd.readlink()))
    return opened


def test_a_reader_stopped_between_records_holds_no_file(tmp_path: Path) -> None:
    # a cut run or a stopped sweep worker drops its reader mid-segment; a file held by it
    # would be finalised by the cyclic GC, maybe before the reader (a ResourceWarning)
    path = _one_segment(tmp_path)
    records = read_records(tmp_path)
    assert next(records).k == "head"
    assert str(path) not in _open_files()
    assert [r.k for r in records][-1] == "search"  # and it still reads on to the end


def test_a_truncated_segment_names_the_file(tmp_path: Path) -> None:
    path = _one_segment(tmp_path)
    path.write_bytes(path.read_bytes()[:-30])
    with pytest.raises(RecordingError, match=r"seg-000001\.jsonl\.gz.*truncated"):
        list(read_records(tmp_path))


def test_damaged_gzip_names_the_file_and_byte(tmp_path: Path) -> None:
    path = _one_segment(tmp_path)
    data = bytearray(path.read_bytes())
    data[40:60] = b"\xff" * 20
    path.write_bytes(bytes(data))
    with pytest.raises(RecordingError, match=r"seg-000001\.jsonl\.gz.*(byte|truncated)"):
        list(read_records(tmp_path))


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (b"{not json", r"seg-000001\.jsonl\.gz:3:\d+: not a JSON record"),
        (b'{"t": 1, "k": "diff", "v": "\xff"}', r"seg-000001\.jsonl\.gz:3: not a JSON record"),
        (b'{"k": "key", "rows": []}', r"seg-000001\.jsonl\.gz:3: t: missing"),
        (b'{"t": 1, "k": "nope"}', r"seg-000001\.jsonl\.gz:3: k: unknown record kind"),
        (b'{"t": 1, "k": "diff", "del": []}', r"3: time runs backwards"),
    ],
)
def test_a_bad_line_names_file_and_line(tmp_path: Path, line: bytes, message: str) -> None:
    path = _one_segment(tmp_path)
    lines = gzip.decompress(path.read_bytes()).splitlines(keepends=True)
    path.write_bytes(gzip.compress(b"".join([*lines[:2], line + b"\n", *lines[3:]])))
    with pytest.raises(RecordingError, match=message):
        list(read_records(tmp_path))


@pytest.mark.parametrize(
    "text",
    [
        '{"t": 1.5, "k": "diff", "v": 1767225600.3327615}',
        '{"t": 1, "k": "diff", "v": 123456789012345678901234567890}',
        '{"t": 1, "k": "diff", "v": [NaN, Infinity, -Infinity, 1e400, -0.0, 1E5]}',
        '{"t": 1, "k": "diff", "v": 1, "v": 2}',
        '{"t": 1, "k": "diff", "v": "\\ud800 lone surrogate"}',
        '\ufeff{"t": 1, "k": "diff", "v": "a byte order mark"}',
        '{"t": 1, "k": "diff", "v": "caf\\u00e9 \u2605", "w": {"x": [true, null]}}',
    ],
)
def test_a_line_reads_as_json_loads_reads_it(text: str) -> None:
    """Lines are parsed by msgspec (faster) where it can, by json.loads where it cannot:
    either way a record is what json.loads makes of its line."""
    _reads_as_json_loads(text.encode())


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(st.characters(codec="utf-8")),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(body=st.dictionaries(st.text(max_size=6), _JSON, max_size=5), ascii_only=st.booleans())
def test_any_json_line_reads_as_json_loads_reads_it(body: dict[str, Any], ascii_only: bool) -> None:
    """Whatever JSON a line holds (floats to the last digit, big integers, any text),
    the record is json.loads' value."""
    body.pop("t", None)
    body.pop("k", None)
    text = json.dumps({"t": 1767225600.25, "k": "diff", **body}, ensure_ascii=ascii_only)
    _reads_as_json_loads(text.encode("utf-8", "surrogatepass"))


def _reads_as_json_loads(line: bytes) -> None:
    record = _parse_line(line, "f:1", KINDS)
    expected = json.loads(line)
    assert (record.t, record.k) == (float(expected.pop("t")), expected.pop("k"))
    assert repr(dict(record.body)) == repr(expected)


async def test_a_malformed_record_stops_the_backtest_naming_the_line(tmp_path: Path) -> None:
    from .support import backtest, rules

    path = _one_segment(tmp_path)
    lines = gzip.decompress(path.read_bytes()).splitlines(keepends=True)
    bad = b'{"t": %f, "k": "diff", "add": [["1"]], "del": [], "px": []}\n' % (T0 + 30)
    path.write_bytes(gzip.compress(b"".join([*lines, bad])))
    with pytest.raises(RecordingError, match=r"seg-000001\.jsonl\.gz:\d+: malformed 'diff'"):
        await backtest(rules(), tmp_path)


@pytest.mark.parametrize("price", [2**63, -(2**63) - 1], ids=["too-high", "too-low"])
@pytest.mark.parametrize("when", ["listed", "repriced"])
def test_a_price_out_of_range_stops_the_replay_naming_the_line(
    tmp_path: Path, price: int, when: str
) -> None:
    from engine.backtest import ReplayMarket

    from .support import REDLINE, write

    ok = ("1", REDLINE, 1000, None, None)
    odd = ("2", REDLINE, price, None, None)
    steps = (
        [(0.0, "snap", [ok, odd])]
        if when == "listed"
        else [(0.0, "snap", [ok, ("2", REDLINE, 900, None, None)]), (10.0, "snap", [ok, odd])]
    )
    market = ReplayMarket(read_records(write(tmp_path / "rec", steps)))
    with pytest.raises(RecordingError, match=r"seg-000001\.jsonl\.gz:\d+: malformed '(key|diff)'"):
        market.advance_to(T0 + 60)


def test_a_newer_format_version_is_refused(tmp_path: Path) -> None:
    _one_segment(tmp_path)
    header = tmp_path / "recording.json"
    header.write_text(header.read_text().replace('"version": 2', '"version": 3'))
    with pytest.raises(RecordingError, match=r"recording\.json: version: format version 3"):
        list(read_records(tmp_path))


def test_a_directory_that_is_not_a_recording(tmp_path: Path) -> None:
    with pytest.raises(RecordingError, match=r"recording\.json is missing"):
        list(read_records(tmp_path))
