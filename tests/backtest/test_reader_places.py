"""The reader's places (file:line) once feed lines of unwatched names are skipped by the
quick look (engine/backtest/_feedpeek.py): across chunks, after runs, after the look is
made again for names learnt later; and what making the look again costs."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from engine.backtest import RecordingError, _feedpeek, _format, read_records
from engine.backtest._format import RUN_MAX, UnwatchedRun

from .support import listing, told
from .support import write_with_feed as _write
from .test_feed_records import OTHER, REDLINE, T0


def _many(directory: Path, count: int, bad: bytes | None, bad_at: int) -> tuple[Path, int]:
    steps: list[tuple[float, str, Any]] = [(0.0, "snap", [listing("1", 8000)])]
    steps += [
        (1 + i / 1000, "feed", told(T0 + 1 + i / 1000, str(100 + i), 5)) for i in range(count)
    ]
    _write(directory, steps)
    path = directory / "seg-000001.jsonl.gz"
    text = gzip.decompress(path.read_bytes()).replace(REDLINE.encode(), OTHER.encode())
    lines = text.splitlines(keepends=True)
    if bad is not None:
        lines.insert(bad_at, bad + b"\n")
    path.write_bytes(gzip.compress(b"".join(lines)))
    return path, len(lines)


@pytest.mark.parametrize("read_size", [64, 1 << 17])
@pytest.mark.parametrize("watched", [False, True])
def test_a_bad_line_after_skipped_runs_names_its_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, read_size: int, watched: bool
) -> None:
    monkeypatch.setattr(_format, "_READ_SIZE", read_size)
    bad_at = RUN_MAX * 2 + 37  # 0-based index in the file: line bad_at + 1
    path, _ = _many(tmp_path, RUN_MAX * 3, b'{"t": 1, "k": "feed"', bad_at)
    reader = read_records(tmp_path)
    if watched:
        reader.watched = lambda name: name != OTHER
    with pytest.raises(RecordingError, match=rf"{path.name}:{bad_at + 1}\b"):
        list(reader)


@pytest.mark.parametrize("read_size", [64, 1 << 17])
def test_a_run_record_names_the_line_that_ends_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, read_size: int
) -> None:
    monkeypatch.setattr(_format, "_READ_SIZE", read_size)
    path, _ = _many(tmp_path, RUN_MAX * 2 + 5, None, 0)
    text = gzip.decompress(path.read_bytes()).splitlines()
    feed_lines = [i + 1 for i, line in enumerate(text) if json.loads(line)["k"] == "feed"]
    reader = read_records(tmp_path)
    reader.watched = lambda name: name != OTHER
    runs = [r for r in reader if r.k == "feed" and isinstance(r.body, UnwatchedRun)]
    assert [r.where for r in runs] == [
        f"{path}:{feed_lines[RUN_MAX - 1]}",
        f"{path}:{feed_lines[2 * RUN_MAX - 1]}",
    ]


def test_a_name_learnt_later_with_bad_utf8_names_its_line(tmp_path: Path) -> None:
    """Lines of 300 new names (the look is made again after 256), then a bad one."""
    steps: list[tuple[float, str, Any]] = [(0.0, "snap", [listing("1", 8000)])]
    steps += [(1 + i / 1000, "feed", told(T0 + 1 + i / 1000, str(100 + i), 5)) for i in range(300)]
    _write(tmp_path, steps)
    path = tmp_path / "seg-000001.jsonl.gz"
    lines = gzip.decompress(path.read_bytes()).splitlines(keepends=True)
    out = []
    n = 0
    for line in lines:
        if REDLINE.encode() in line:
            line = line.replace(REDLINE.encode(), f"{OTHER} {n}".encode())
            n += 1
        out.append(line)
    at = len(out) - 3
    out[at] = out[at].replace(f"{OTHER} ".encode(), b"\xff\xfe ")
    path.write_bytes(gzip.compress(b"".join(out)))
    reader = read_records(tmp_path)
    reader.watched = lambda name: False
    with pytest.raises(RecordingError, match=rf"{path.name}:{at + 1}\b"):
        list(reader)


def _distinct_names(directory: Path, count: int) -> None:
    steps: list[tuple[float, str, Any]] = [(0.0, "snap", [listing("1", 8000)])]
    steps += [
        (1 + i / 1000, "feed", told(T0 + 1 + i / 1000, str(100 + i), 5)) for i in range(count)
    ]
    _write(directory, steps)
    path = directory / "seg-000001.jsonl.gz"
    lines = gzip.decompress(path.read_bytes()).splitlines(keepends=True)
    out = [line.replace(REDLINE.encode(), f"{OTHER} {n}".encode()) for n, line in enumerate(lines)]
    path.write_bytes(gzip.compress(b"".join(out)))


def test_making_the_look_again_costs_in_proportion_to_the_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long tail of new names (a real market's): the look is made again ever less often,
    so the names it is made of add up to a few times the names, not their square (a
    making every 256 new names: 70,000 names made for 6,000)."""
    made: list[int] = []
    make = _format.known_names_peek

    def counted(known: Any) -> Any:
        made.append(len(known))
        return make(known)

    monkeypatch.setattr(_format, "known_names_peek", counted)
    _distinct_names(tmp_path, 6000)
    reader = read_records(tmp_path)
    reader.watched = lambda name: False
    assert sum(1 for r in reader if r.k == "feed") > 0
    assert len(made) >= 2
    assert made[0] == _feedpeek.MISSES_BEFORE_REBUILD
    assert sum(made) <= 6 * 6000
