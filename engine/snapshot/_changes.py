"""A snapshot answer told as what changed since an earlier answer of the same source.

The service sends the whole snapshot every time; the engine's tracker lines its rows up
with the previous ones and parses only those that changed (``_lines.py``). A source that
already knows what changed (a backtest's replay market: the recording *is* the changes)
can hang a :class:`SnapshotChanges` on its answer (the ``httpx`` response extension
:data:`CHANGES_EXTENSION`, read by the client's ``SnapshotStream``), so the tracker need
not inflate and hash every row to find them again: the work follows the changes, not the
size of the market. The rows it carries are the CSV records the body would hold, parsed
by the same parser; the diff is the one the body would give.

It is an optimisation with a safe fallback: the tracker takes the changes only when it
holds the very answer they start from (``base``, compared by identity); otherwise it reads
the body as usual. Either way it then holds ``token``.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CHANGES_EXTENSION", "SnapshotChanges"]

CHANGES_EXTENSION = "snipe.snapshot_changes"
"""The ``httpx.Response.extensions`` key of a :class:`SnapshotChanges`."""


@dataclass(frozen=True, slots=True, eq=False)
class SnapshotChanges:
    """What an answer's body holds, as changes from an earlier answer (see the module
    docstring). Never sent by the service."""

    token: object
    """Stands for this answer's snapshot: a tracker that took it holds this token."""
    base: object | None
    """The token of the answer the changes go from; ``None``: only the body will do."""
    header: bytes
    """The body's header record."""
    records: list[bytes]
    """The CSV records (without line breaks) of the rows new or changed since ``base``,
    in the order of the body's rows."""
    removed: list[str]
    """The item ids of ``base``'s rows that are gone."""
    rows: int
    """How many rows the body holds."""
