"""What a loop does with an error nobody planned for.

The engine's and the operations' loops catch snipe's own errors where they know what they
mean (a 503 is retried, a 403 halts). Anything else (a plugin's bug, SQLite busy for longer
than its timeout, a full disk) used to escape the loop and end the process with an
exception group. :class:`LoopGuard` turns it into one of two clean outcomes:

- a **retried step**: the error is logged with its traceback the first time it is seen in
  that loop (one line each time after that), counted (``EngineStatus.unexpected``, the
  metric ``snipe_unexpected_errors_total{loop}``), and the loop waits a backoff and goes on;
- a **HALT** (buying stops, reconciling goes on, the process later exits 4): at once for an
  error on the buying path, where the ledger may now be behind the service, or after
  ``max_in_a_row`` failures in a row of the same loop.

A purchase in flight at that moment stays INTENT or UNKNOWN in the ledger and is resolved
by ``project_id``, exactly as after a crash.
"""

from __future__ import annotations

import logging
from collections import Counter

from .._errors import SnipeError
from ._status import EngineStatus

__all__ = ["LoopGuard", "describe", "unwrap"]

log = logging.getLogger("snipe.engine")


def describe(exc: BaseException) -> str:
    """A one-line description safe to show anywhere: snipe's own messages never carry a
    secret; another library's might (a URL, a path with a key), so only its type is named.
    """
    if isinstance(exc, SnipeError):
        return f"{type(exc).__name__}: {exc}"
    return f"{type(exc).__module__}.{type(exc).__qualname__} (traceback in the log)"


class LoopGuard:
    """Counts unexpected errors per loop and decides retry or HALT; see the module
    docstring."""

    def __init__(
        self,
        status: EngineStatus,
        *,
        max_in_a_row: int = 5,
        first_backoff: float = 1.0,
        max_backoff: float = 60.0,
    ) -> None:
        self._status = status
        self.max_in_a_row = max_in_a_row
        self._first_backoff = first_backoff
        self._max_backoff = max_backoff
        self._in_a_row: Counter[str] = Counter()
        self._told: set[tuple[str, str]] = set()

    def failed(
        self, loop: str, exc: BaseException, *, halt: bool = False, may_halt: bool = True
    ) -> float:
        """Record ``exc`` in ``loop``; HALT if ``halt``, or after too many in a row unless
        ``may_halt`` is false (a task beside the engine, which must never stop buying).
        Returns the seconds to wait before the loop's next step."""
        self._status.unexpected[loop] += 1
        self._in_a_row[loop] += 1
        in_a_row = self._in_a_row[loop]
        text = f"{loop}: unexpected error {describe(exc)}"
        kind = (loop, f"{type(exc).__module__}.{type(exc).__qualname__}")
        if kind in self._told:
            log.error("%s (again, %d in a row; traceback logged before)", text, in_a_row)
        else:
            self._told.add(kind)
            log.error("%s", text, exc_info=(type(exc), exc, exc.__traceback__))
        self._status.errors.append(text)
        if halt:
            self._status.halt(f"{text}; purchases in flight are resolved by project_id")
        elif may_halt and in_a_row >= self.max_in_a_row:
            self._status.halt(f"{text} ({in_a_row} times in a row)")
        return min(self._max_backoff, self._first_backoff * 2.0 ** (in_a_row - 1))

    def succeeded(self, loop: str) -> None:
        """A step of ``loop`` went through: its count in a row starts again."""
        self._in_a_row.pop(loop, None)


def unwrap(exc: Exception) -> Exception:
    """The first real error inside (nested) exception groups."""
    while isinstance(exc, ExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc
