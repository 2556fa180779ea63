"""The replay market's small pieces of bookkeeping (engine/backtest/_market.py): a name's
listings kept sorted by ``(price, item_id)`` as they change, and a recorded time read as
epoch seconds."""

from __future__ import annotations

from bisect import bisect_left
from datetime import datetime
from typing import Any

__all__ = ["epoch", "resort", "unsort"]


def unsort(by_name: dict[str, list[tuple[int, str]]], name: str, price: int, item_id: str) -> int:
    """Take a listing out of its name's sorted listings; returns where it was."""
    ranked = by_name[name]
    at = bisect_left(ranked, (price, item_id))
    del ranked[at]
    if not ranked:
        del by_name[name]
    return at


def resort(ranked: list[tuple[int, str]], old: int, price: int, item_id: str) -> int:
    """Move a repriced listing to its place; returns the first position that changed."""
    was = bisect_left(ranked, (old, item_id))
    del ranked[was]
    at = bisect_left(ranked, (price, item_id))
    ranked.insert(at, (price, item_id))
    return min(was, at)


def epoch(value: Any) -> int | None:
    """A recorded ``unlock_at`` or ``send_until`` (epoch seconds or ISO 8601) as epoch
    seconds; None for none."""
    if value is None or value == "":
        return None
    if isinstance(value, int | float):
        return int(value)
    return int(datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp())
