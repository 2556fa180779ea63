"""The recording reader's quick look at a feed line (engine/backtest/_format.py's
RecordReader): a listing or removal of an unwatched name is read into its time, kind,
event and item name only, the rest of its line checked as JSON by msgspec, never built."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal, cast

import msgspec

__all__ = [
    "MISSES_BEFORE_REBUILD",
    "Peeked",
    "known_names_peek",
    "misses_before_rebuild",
    "no_peek",
    "peek_any",
]

_LISTING_EVENT = Literal["new", "update", "removed"]


class _PeekedItem(msgspec.Struct, gc=False):
    name: str


class Peeked(msgspec.Struct, gc=False):
    """What tells a feed listing or removal of an unwatched name: the rest of its line is
    only checked to be JSON (msgspec skips a value checking its syntax, without building
    it). Any other line fails to decode as one (a connection marker, a missing name) and
    goes the usual way."""

    t: float
    k: Literal["feed"]
    ev: _LISTING_EVENT
    item: _PeekedItem


_PEEK = msgspec.json.Decoder(Peeked).decode
MISSES_BEFORE_REBUILD = 256
"""Lines of names learnt since :func:`known_names_peek` last made the look (each looked
at twice, ~2 us more) after which it is made again (~1.2 ms for 1,300 names), at least."""


def misses_before_rebuild(names: int) -> int:
    """The misses after which the look of ``names`` known names is made again: a making
    costs ~1 us a name, so with a long tail of new names (a real market has tens of
    thousands) a fixed count would cost the square of the names; a quarter of them keeps
    each miss's share of a making near 4 us."""
    return max(MISSES_BEFORE_REBUILD, names // 4)


def peek_any(line: bytes) -> Peeked | None:
    """The look at a line of any name; None for a line it cannot vouch for."""
    try:
        return _PEEK(line)
    except (ValueError, RecursionError):  # (msgspec's errors and UnicodeDecodeError)
        return None  # not what a quick look can vouch for: the usual way says why


def no_peek(line: bytes) -> Peeked:
    """The look before any name is known: every line is a miss."""
    raise ValueError("no names known yet")


def known_names_peek(known: Mapping[str, bool]) -> Callable[[bytes], Peeked]:
    """The look for lines of the names in ``known`` only (any other fails): msgspec
    finds a name's bytes in its own table of them and gives back the str of ``known``
    itself, not a new one, so the name's lookup there hashes nothing and compares one
    pointer (a fresh str per line, hashed and compared byte by byte, cost ~0.1 us)."""
    if not known:
        return no_peek
    names = cast(Any, Literal)[tuple(known)]
    # Peeked, its item's name one of these (subclasses: the same fields, one retyped)
    item = msgspec.defstruct("_KnownItem", [("name", names)], bases=(_PeekedItem,), gc=False)
    peeked = msgspec.defstruct("_KnownPeeked", [("item", item)], bases=(Peeked,), gc=False)
    return cast(Callable[[bytes], Peeked], msgspec.json.Decoder(peeked).decode)
