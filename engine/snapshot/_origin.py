"""Where a snapshot came from, and so which error a broken one raises.

A snapshot that the service sent broken is the service's fault and is retried later: a body
that is not a snapshot at all (bad gzip, bad UTF-8, no usable header, a price that is not a
number) is a :class:`~engine.MalformedResponse`; a stream that stops before its gzip trailer
is :class:`~engine.Unavailable` (the connection was cut, the next fetch will do). A recorded
file that is broken is the owner's to fix: :class:`~engine.ConfigError` naming ``file:row``.

Rows are counted as CSV records with the header as row 1, so row ``N`` is line ``N`` of the
unpacked file unless a quoted name holds a line break.
"""

from __future__ import annotations

import os
from typing import NoReturn

from .._errors import ConfigError, MalformedResponse, Refused, Unavailable

__all__ = ["SNAPSHOT_ENDPOINT", "Origin"]

SNAPSHOT_ENDPOINT = "GET /v1/prices/snapshot"


class Origin:
    """The source of a snapshot: the service (``path`` is ``None``) or a recorded file."""

    __slots__ = ("endpoint", "path")

    def __init__(
        self, path: str | os.PathLike[str] | None = None, *, endpoint: str = SNAPSHOT_ENDPOINT
    ):
        self.path = os.fspath(path) if path is not None else None
        self.endpoint = endpoint

    def malformed(
        self, message: str, *, row: int | None = None, field: str | None = None
    ) -> NoReturn:
        """Raise the error for data that is not a valid snapshot."""
        if self.path is not None:
            location = f"{self.path}:{row}" if row is not None else self.path
            raise ConfigError(message, location=location, field=field)
        where = f"row {row}: " if row is not None else ""
        raise MalformedResponse(where + message, endpoint=self.endpoint, field=field)

    def truncated(self, message: str, *, row: int | None = None) -> NoReturn:
        """Raise the error for a stream that ended before its end."""
        if self.path is not None:
            self.malformed(message, row=row)
        where = f"after row {row}: " if row is not None else ""
        raise Unavailable(where + message, endpoint=self.endpoint)

    def refused(self, msg: str | None) -> NoReturn:
        """Raise the error for a snapshot answer with ``success: false`` (no snapshot yet)."""
        if self.path is not None:
            self.malformed(f"the recorded answer is a refusal, not a snapshot: {msg!r}")
        raise Refused(f"no snapshot: {msg!r}", endpoint=self.endpoint, msg=msg)
