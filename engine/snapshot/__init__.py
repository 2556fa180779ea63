"""The whole-market prices snapshot as a change detector.

Fetch the snapshot (CSV, ~1.3 million rows, gzip) as a stream and compare it with the
previous one. The way the engine polls: the tracker parses the body itself, and after the
first snapshot parses only the rows whose bytes changed (see ``_lines.py``)::

    tracker = SnapshotTracker()             # lives as long as the engine
    ...
    changes = await tracker.aupdate_csv(response.aiter_raw())
    for event in changes:          # NewListing / PriceDrop, lazily
        ...
    changes.names_cheapest_first() # which names to search first
    changes.snapshot               # the whole Snapshot, when it was parsed whole

To have every row, parse it into a compact :class:`Snapshot` (never held as Python objects
per row) and compare that: ``tracker.update(await aparse_csv_snapshot(stream))``, or
``diff_snapshots(previous, snapshot)``.

Broken data is never a partial snapshot: from the service it is a
:class:`~engine.MalformedResponse` (or :class:`~engine.Unavailable` for a stream cut short,
:class:`~engine.Refused` for a JSON ``success: false``), from a recorded file a
:class:`~engine.ConfigError` naming ``file:row``.
"""

from __future__ import annotations

import os
from pathlib import Path

from .._errors import ConfigError
from ._changes import CHANGES_EXTENSION, SnapshotChanges
from ._csv import REQUIRED_COLUMNS, CsvSnapshotParser, aparse_csv_snapshot, parse_csv_snapshot
from ._diff import (
    NameSummary,
    NewListing,
    PriceDrop,
    SnapshotDiff,
    SnapshotEvent,
    SnapshotTracker,
    diff_snapshots,
)
from ._json import parse_json_snapshot
from ._origin import SNAPSHOT_ENDPOINT
from ._store import Snapshot, SnapshotListing

__all__ = [
    "CHANGES_EXTENSION",
    "REQUIRED_COLUMNS",
    "SNAPSHOT_ENDPOINT",
    "CsvSnapshotParser",
    "NameSummary",
    "NewListing",
    "PriceDrop",
    "Snapshot",
    "SnapshotChanges",
    "SnapshotDiff",
    "SnapshotEvent",
    "SnapshotListing",
    "SnapshotTracker",
    "aparse_csv_snapshot",
    "diff_snapshots",
    "load_snapshot_file",
    "parse_csv_snapshot",
    "parse_json_snapshot",
]

_READ_SIZE = 1 << 16


def load_snapshot_file(path: str | os.PathLike[str], *, timestamp: int | None = None) -> Snapshot:
    """Read a recorded snapshot: CSV (gzip or plain) or, for a ``.json`` file, the JSON form.

    Broken content raises :class:`~engine.ConfigError` naming ``file:row``; a file that
    cannot be read raises it too, naming the file.
    """
    file = Path(path)
    try:
        if file.suffix.lower() == ".json":
            return parse_json_snapshot(file.read_bytes(), source=file)
        with file.open("rb") as handle:
            return parse_csv_snapshot(
                iter(lambda: handle.read(_READ_SIZE), b""), source=file, timestamp=timestamp
            )
    except OSError as exc:
        raise ConfigError(
            f"cannot read the snapshot ({exc.strerror or exc})", location=str(file)
        ) from None
