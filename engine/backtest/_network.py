"""The live run's network, replayed: each request's latency and failure.

``snipe run --record`` writes one line per request the engine sent for market data or a
purchase into ``DIR/requests.jsonl``: when it was sent (``sent``), when its answer came
or it failed (``t``), the path, the status, and for a failed or unreadable answer its
headers and body (``failure``). A replay with ``--against`` answers the engine's request
as the live request of the same path sent nearest in time (within ``window`` seconds)
was answered: the clock moves on by that request's latency, and a failure (a 429, a 5xx,
an HTML page, a lost connection) is answered again, so the replay's schedule (retries,
backoff, the search pacing) follows the live one's. A request with no live counterpart
takes the path's median latency and succeeds.

Sans-I/O apart from :meth:`NetworkLog.load`.
"""

from __future__ import annotations

import bisect
import json
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._errors import ConfigError

__all__ = ["REQUESTS_FILE", "NetworkLog", "Passage", "request_line"]

REQUESTS_FILE = "requests.jsonl"


@dataclass(frozen=True)
class Passage:
    """How one live request went: ``latency`` seconds, and its failure (``status``,
    ``headers``, ``body``; ``error``: the name of a transport error), if it failed."""

    sent: float
    latency: float
    status: int | None = None
    headers: dict[str, str] | None = None
    body: str | None = None
    error: str | None = None
    key: str | None = None

    @property
    def failed(self) -> bool:
        return self.error is not None or self.body is not None


def request_line(
    sent: float,
    t: float,
    path: str,
    status: int | None,
    *,
    headers: dict[str, str] | None = None,
    body: bytes | None = None,
    error: str | None = None,
    key: str | None = None,
) -> str:
    """One line of ``requests.jsonl`` (``body``: only for a failed, refused or unreadable
    answer; ``key``: what a purchase bought, its item ids)."""
    entry: dict[str, Any] = {"sent": sent, "t": t, "path": path, "status": status}
    if key is not None:
        entry["key"] = key
    if body is not None:
        entry["failure"] = {
            "headers": headers or {},
            "body": body[:4096].decode("utf-8", "replace"),
        }
    if error is not None:
        entry["error"] = error
    return json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n"


class NetworkLog:
    """The live requests by path, matched to the replay's as it sends them."""

    def __init__(self, window: float = 1.5) -> None:
        self.window = window
        self._sent: dict[str, list[float]] = {}
        self._passages: dict[str, list[Passage]] = {}
        self._used: dict[str, set[int]] = {}
        self._median: dict[str, float] = {}
        self.matched = 0
        self.unmatched = 0
        self.failures_replayed = 0
        self.charged: frozenset[str] = frozenset()
        """Listings live was charged for: a live purchase whose answer failed but that
        was charged all the same is committed in the replay too."""

    @classmethod
    def load(cls, path: str | Path, *, window: float = 1.5) -> NetworkLog:
        log = cls(window)
        file = Path(path)
        with file.open(encoding="utf-8") as lines:
            for number, line in enumerate(lines, start=1):
                if not line.endswith("\n"):
                    break  # a line a crash cut short
                try:
                    entry = json.loads(line)
                    failure = entry.get("failure") or {}
                    passage = Passage(
                        sent=float(entry["sent"]),
                        latency=max(0.0, float(entry["t"]) - float(entry["sent"])),
                        status=entry.get("status"),
                        headers=failure.get("headers") if failure else None,
                        body=failure.get("body") if failure else None,
                        error=entry.get("error"),
                        key=entry.get("key"),
                    )
                    log.add(str(entry["path"]), passage)
                except (ValueError, KeyError, TypeError, AttributeError) as exc:
                    raise ConfigError(
                        f"not a request line: {exc}", location=f"{file}:{number}"
                    ) from None
        return log

    @property
    def first_sent(self) -> float | None:
        """When the live run sent its first recorded request."""
        return min((sent[0] for sent in self._sent.values() if sent), default=None)

    def add(self, path: str, passage: Passage) -> None:
        sent = self._sent.setdefault(path, [])
        at = bisect.bisect_right(sent, passage.sent)
        sent.insert(at, passage.sent)
        self._passages.setdefault(path, []).insert(at, passage)
        self._median.pop(path, None)

    def passage(
        self, path: str, now: float, default_latency: float, *, key: str | None = None
    ) -> Passage:
        """How the replay's request to ``path`` sent at ``now`` goes (see the module
        docstring); each live request answers at most one replay request. A purchase
        (``key``: its item ids) is matched to the live purchase of the same items within
        a minute."""
        sent = self._sent.get(path)
        if sent:
            used = self._used.setdefault(path, set())
            window = self.window if key is None else max(self.window, 60.0)
            low = bisect.bisect_left(sent, now - window)
            high = bisect.bisect_right(sent, now + window)
            passages = self._passages[path]
            best = None
            for index in range(low, high):
                if index in used or (key is not None and passages[index].key != key):
                    continue
                if best is None or abs(sent[index] - now) < abs(sent[best] - now):
                    best = index
            if best is not None:
                used.add(best)
                self.matched += 1
                passage = self._passages[path][best]
                if passage.failed:
                    self.failures_replayed += 1
                return passage
        self.unmatched += 1
        return Passage(now, self._median_of(path, default_latency))

    def _median_of(self, path: str, default: float) -> float:
        median = self._median.get(path)
        if median is None:
            passages = self._passages.get(path)
            latencies = [p.latency for p in passages or () if not p.failed]
            median = self._median[path] = statistics.median(latencies) if latencies else default
        return median
