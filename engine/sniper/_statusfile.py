"""The running engine's status file: a small JSON document next to the ledger
(``<ledger>.status.json``), rewritten every few seconds by ``snipe run`` and read by
``snipe status``. It holds what the ledger cannot: the mode, the halt reason, uptime, the
latest errors, the search budget. Never a secret.

Writes are atomic (a temporary file renamed over the old one), so a reader never sees
half a document.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._engine import Engine

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
    engine: Engine, *, every: float, extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The status of ``engine`` as plain JSON values (``every``: seconds between writes,
    so a reader can tell a stale file)."""
    status = engine.status
    used, limit = engine.limiter.usage("search")
    budgets = engine.ruleset.budgets
    return {
        "format": FORMAT,
        "pid": os.getpid(),
        "mode": status.mode.value,
        "halt_reason": status.halt_reason,
        "started_at": status.started_at,
        "updated_at": engine.clock.now(),
        "write_every": every,
        "rules_file": engine.ruleset.filename,
        "caps": {"total": budgets.total, "per_day": budgets.per_day},
        "search_budget": {"used": used, "limit": limit},
        "searches": status.searches,
        "rate_limited": status.rate_limited,
        "snapshot_bytes": dict(status.snapshot_bytes),
        "candidates": status.candidates,
        "outcomes": {o.value: n for o, n in status.outcomes.items()},
        "errors": list(status.errors)[-10:],
        "set_aside": [
            {
                "endpoint": endpoint,
                "field": field,
                "count": count,
                "example": status.set_aside_example.get((endpoint, field)),
            }
            for (endpoint, field), count in sorted(status.set_aside.items())
        ],
        "overdue": engine.reconciler.overdue,
        "waiting": status.waiting,
        "start_attempts": status.start_attempts,
        "buying_since": status.buying_since,
        "unexpected_errors": dict(status.unexpected),
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
