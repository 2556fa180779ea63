"""The running engine's status file: a small JSON document next to the ledger
(``<ledger>.status.json``), rewritten every few seconds by ``snipe run`` and read by
``snipe status``. It holds what the ledger cannot: the mode, the halt reason, uptime, the
latest errors, the search budget. Never a secret.

Writes are atomic (a temporary file renamed over the old one), so a reader never sees
half a document.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._view import EngineView

__all__ = [
    "STATUS_SUFFIX",
    "read_status_file",
    "status_document",
    "status_file_problem",
    "status_path_for",
    "write_status_file",
]

STATUS_SUFFIX = ".status.json"
FORMAT = 1


def status_path_for(ledger: str | os.PathLike[str]) -> Path:
    """Where the engine using the ledger file ``ledger`` writes its status."""
    return Path(f"{os.fspath(ledger)}{STATUS_SUFFIX}")


def status_document(
    view: EngineView, *, every: float, extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The status of an engine, from its :meth:`~engine.sniper.Engine.view`, as plain JSON
    values (``every``: seconds between writes, so a reader can tell a stale file)."""
    return {
        "format": FORMAT,
        "pid": os.getpid(),
        "mode": view.mode.value,
        "halt_reason": view.halt_reason,
        "paused": view.paused,
        "started_at": view.started_at,
        "updated_at": view.now,
        "write_every": every,
        "rules_file": view.rules_file,
        "caps": {"total": view.cap_total, "per_day": view.cap_per_day},
        "search_budget": {"used": view.search_used, "limit": view.search_limit},
        "searches": view.searches,
        "rate_limited": view.rate_limited,
        "snapshot_bytes": dict(view.snapshot_bytes),
        "candidates": view.candidates,
        "outcomes": {o.value: n for o, n in view.outcomes.items()},
        "errors": list(view.errors)[-10:],
        "set_aside": [
            {"endpoint": s.endpoint, "field": s.field, "count": s.count, "example": s.example}
            for s in view.set_aside
        ],
        "overdue": view.overdue,
        "waiting": view.waiting,
        "start_attempts": view.start_attempts,
        "buying_since": view.buying_since,
        "unexpected_errors": dict(view.unexpected),
        "feed": None if view.feed is None else dataclasses.asdict(view.feed),
        "paper": None if view.paper is None else dataclasses.asdict(view.paper),
        **(extra or {}),
    }


def write_status_file(path: str | os.PathLike[str], document: dict[str, Any]) -> None:
    """Replace the file at ``path`` with ``document``, atomically."""
    target = Path(path)
    # A temporary name of its own per write: two writes at once (the first one at start and
    # the periodic one) must never rename each other's file away.
    handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        os.fchmod(handle, 0o644)  # mkstemp's 0600 would hide it from a monitoring user
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(json.dumps(document, indent=1, sort_keys=True))
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def read_status_file(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The document at ``path``, or ``None`` when there is none or it is unreadable."""
    try:
        data = json.loads(Path(path).read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def status_file_problem(path: str | os.PathLike[str]) -> str | None:
    """Why the status file at ``path`` exists but cannot be used (``None`` when there is
    no file, or it reads well): a reader must not call an unreadable file a missing one."""
    file = Path(path)
    if not file.exists():
        return None
    try:
        data = json.loads(file.read_text("utf-8"))
    except OSError as exc:
        return f"{file}: cannot be read: {exc.strerror or exc}"
    except ValueError as exc:
        return f"{file}: is not a status file (not JSON: {exc})"
    return None if isinstance(data, dict) else f"{file}: is not a status file (not an object)"
