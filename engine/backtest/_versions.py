"""Price lists versioned by time, kept beside a recording: ``DIR/lists/``.

A price list from a file or an address (``prices.lists.NAME``) is read live every
``every`` seconds; replaying a recording must read each list as it was at that moment,
not as the file is today (a list edited after the recording would otherwise change the
replay's decisions: look-ahead through the back door). ``snipe run --record`` writes each
version the engine read once, by content hash:

- ``lists/<sha256>``: the bytes as read (written to a temporary name, then renamed);
- ``lists/index.jsonl``: one line per change, ``{"t", "source", "origin", "sha256"}``,
  appended and flushed after the content is in place (a crash loses at most the line
  being written, never points at a missing file).

A version is valid from its ``t`` until the next version of the same source. Before the
first version of a source (the replay starts at the first record, which the first read
of the list may follow by a moment), the first version stands.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from .._errors import ConfigError

__all__ = ["LISTS_DIR", "ListVersions"]

LISTS_DIR = "lists"
INDEX = "index.jsonl"


class ListVersions:
    """The versions of the price lists of one recording: written by the live recorder
    (:meth:`add`), read by the backtest (:meth:`read_at`)."""

    def __init__(self, recording: str | os.PathLike[str]) -> None:
        self.directory = Path(recording) / LISTS_DIR
        self._times: dict[str, list[float]] = {}
        self._hashes: dict[str, list[str]] = {}
        self._loaded = False

    # -- writing ---------------------------------------------------------------------------

    def add(self, source: str, origin: str, t: float, data: bytes) -> bool:
        """Keep ``data`` as the version of ``source`` from ``t`` on, unless it is the
        version already current; True when a new version was written."""
        self._load()
        digest = hashlib.sha256(data).hexdigest()
        hashes = self._hashes.get(source)
        if hashes and hashes[-1] == digest:
            return False
        self.directory.mkdir(parents=True, exist_ok=True)
        content = self.directory / digest
        if not content.exists():
            temporary = content.with_name(digest + ".tmp")
            temporary.write_bytes(data)
            os.replace(temporary, content)
        times = self._times.setdefault(source, [])
        t = max(t, times[-1]) if times else t
        line = {"t": t, "source": source, "origin": origin, "sha256": digest}
        with (self.directory / INDEX).open("a", encoding="utf-8") as index:
            index.write(json.dumps(line, ensure_ascii=False) + "\n")
            index.flush()
        times.append(t)
        self._hashes.setdefault(source, []).append(digest)
        return True

    # -- reading ---------------------------------------------------------------------------

    @property
    def exists(self) -> bool:
        return (self.directory / INDEX).exists()

    def sources(self) -> list[str]:
        self._load()
        return sorted(self._times)

    def versions(self, source: str) -> list[tuple[float, str]]:
        """``(valid from, sha256)`` of each version of ``source``, oldest first."""
        self._load()
        return list(zip(self._times.get(source, ()), self._hashes.get(source, ()), strict=True))

    def read_at(self, source: str, t: float) -> bytes | None:
        """The content of ``source`` as it was at ``t`` (``None``: never recorded)."""
        self._load()
        times = self._times.get(source)
        if not times:
            return None
        at = max(0, bisect.bisect_right(times, t) - 1)
        digest = self._hashes[source][at]
        path = self.directory / digest
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise ConfigError(
                f"a recorded version of {source} is missing ({exc.strerror})", location=str(path)
            ) from None
        if hashlib.sha256(data).hexdigest() != digest:
            raise ConfigError(
                f"the recorded version of {source} does not match its hash", location=str(path)
            )
        return data

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        path = self.directory / INDEX
        if not path.exists():
            return
        with path.open(encoding="utf-8") as index:
            for number, line in enumerate(index, start=1):
                if not line.endswith("\n"):
                    break  # the line a crash cut short: everything before it stands
                entry = _entry(line, f"{path}:{number}")
                times = self._times.setdefault(entry["source"], [])
                if times and entry["t"] < times[-1]:
                    raise ConfigError("time runs backwards", location=f"{path}:{number}")
                times.append(float(entry["t"]))
                self._hashes.setdefault(entry["source"], []).append(entry["sha256"])


def _entry(line: str, where: str) -> dict[str, Any]:
    try:
        entry = json.loads(line)
    except ValueError as exc:
        raise ConfigError(f"not a JSON line: {exc}", location=where) from None
    if (
        not isinstance(entry, dict)
        or not isinstance(entry.get("source"), str)
        or not isinstance(entry.get("sha256"), str)
        or not isinstance(entry.get("t"), int | float)
        or isinstance(entry.get("t"), bool)
    ):
        raise ConfigError("expected {t, source, origin, sha256}", location=where)
    return entry
