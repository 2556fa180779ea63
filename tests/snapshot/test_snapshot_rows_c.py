"""The C helpers of the snapshot diff (``engine/snapshot/_rows.c``, an optional build)
against what they stand for: ``hash`` of each line, and ``_lines._common_run``."""

from __future__ import annotations

from array import array

import pytest

from engine.snapshot import _lines

if _lines._C is None:
    pytest.skip("engine/snapshot/_rows.c is not built", allow_module_level=True)
C = _lines._C


@pytest.mark.parametrize(
    "text",
    [
        b"",
        b"no line break",
        b"a\n",
        b"a\nbb\n\nccc\ntail",
        b"\n\n",
        "★ Karambit | Doppler (Factory New),1\r\n".encode(),
        b"x" * 5000 + b"\n" + b"y" * 7 + b"\n",
    ],
)
def test_line_hashes_are_the_hashes_of_the_lines(text: bytes) -> None:
    hashes, ends, blanks = C.line_hashes(text)
    lines = text.split(b"\n")[:-1]
    assert array("q", hashes) == array("q", map(hash, lines))
    assert list(array("q", ends)) == [i for i, byte in enumerate(text) if byte == 10]
    assert blanks == lines.count(b"")


RUN = list(range(1000))


@pytest.mark.parametrize(
    ("old", "at", "new", "j", "same"),
    [
        pytest.param(RUN, 0, RUN, 0, 1000, id="all"),
        pytest.param(RUN, 10, [*RUN[10:997], -1, *RUN[998:]], 0, 987, id="to-a-change"),
        pytest.param(RUN, 3, RUN, 4, 0, id="shifted"),
        pytest.param(RUN, 990, RUN, 990, 10, id="to-the-end"),
        pytest.param(RUN, 1000, RUN, 0, 0, id="old-at-its-end"),
        pytest.param(RUN, 0, RUN, 1200, 0, id="new-past-its-end"),
        pytest.param([], 0, [], 0, 0, id="empty"),
    ],
)
def test_common_run_counts_as_the_python_one(
    old: list[int], at: int, new: list[int], j: int, same: int
) -> None:
    left, right = array("q", old), array("q", new)
    assert _lines._common_run(left, at, right, j) == same
    assert C.common_run(left, at, right, j) == same
