"""The sandbox's rate limits, as the service enforces them: sans-I/O, in market time.

Each account has a sliding window per bucket. A request that is refused (429) is not
counted, so a client that waits ``msBeforeNext`` always gets through.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

__all__ = ["LimitConfig", "RateLimits", "Window"]


@dataclass(frozen=True, slots=True)
class Window:
    """At most ``calls`` requests in any ``period`` seconds of market time."""

    calls: int
    period: float

    def __post_init__(self) -> None:
        if self.calls < 1 or self.period <= 0:
            raise ValueError(f"a limit needs calls >= 1 and period > 0, got {self!r}")


@dataclass(frozen=True, slots=True)
class LimitConfig:
    """The limits of interface.md section 8. ``None`` switches a bucket off (a partner
    account). ``search_covers_catalogue`` makes catalogue pages count against the search
    window too (off by default: interface.md names only search-by-name)."""

    search: Window | None = Window(20, 60.0)
    buy_order: Window | None = Window(60, 60.0)
    set_platform_api: Window | None = Window(5, 60.0)
    search_covers_catalogue: bool = False

    def window(self, bucket: str) -> Window | None:
        if bucket == "search":
            return self.search
        if bucket == "buy_order":
            return self.buy_order
        if bucket == "set_platform_api":
            return self.set_platform_api
        raise ValueError(f"unknown limit bucket {bucket!r}")


@dataclass(slots=True)
class RateLimits:
    """Sliding windows per (account, bucket)."""

    config: LimitConfig = field(default_factory=LimitConfig)
    _calls: dict[tuple[str, str], deque[float]] = field(default_factory=dict)

    def try_acquire(self, account: str, bucket: str, now: float) -> float | None:
        """Count a call at ``now`` and return ``None``, or return the seconds to wait before
        the next call would be allowed (nothing counted)."""
        window = self.config.window(bucket)
        if window is None:
            return None
        calls = self._calls.setdefault((account, bucket), deque())
        while calls and calls[0] <= now - window.period:
            calls.popleft()
        if len(calls) >= window.calls:
            return max(0.001, calls[0] + window.period - now)
        calls.append(now)
        return None

    def usage(self, account: str, bucket: str, now: float) -> int:
        """Calls counted in the window ending at ``now``."""
        window = self.config.window(bucket)
        if window is None:
            return 0
        calls = self._calls.get((account, bucket), deque())
        return sum(1 for t in calls if t > now - window.period)
