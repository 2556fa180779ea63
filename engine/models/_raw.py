"""A search listing read from its JSON text for a prefilter, in plain forms only: no model.

A v2 search answer holds up to 2,500 listings and building a :class:`Listing` for each is
most of the cost of reading it (bench/bench_parse.py), while the rules turn most of them
down on a few fields. :func:`read_plain` reads one listing's JSON text (its slice of the
answer, :func:`split_answer`) with msgspec straight into a :class:`RawListing`: a
stand-in with the attributes the rules' built-in criteria read, decoded in C against
**plain forms only**: types and values that :class:`Listing` surely accepts and reads to
the very values the stand-in then holds (a price as a JSON integer ``>= 0`` or a string
of digits, a time as an integer or the text the model's own parser reads, a reference
price as a number, a string of digits or an object...). Anything odder (a price in
dollars, a boolean id, a sticker without a name, the field ``float_value`` beside
``float``, a number too large for 64 bits) gives ``None``: the listing is built as before,
so an odd listing is set aside and counted exactly as without a prefilter.

msgspec (jcrist/msgspec, BSD) is used because it validates typed JSON in C at several
times the speed of ``json.loads`` into dicts: what the prefilter must beat. Its JSON
parser agrees with pydantic-core's on every plain value (integers, correctly rounded
floats, UTF-8 strings); where the two parsers could differ (a lone surrogate, an integer
past 64 bits, a duplicate key) it refuses, and the listing is built.

The fields a stand-in answers for are :data:`RAW_FIELDS`; a criterion declares which it
reads (:attr:`engine.rules.Compiled.raw_fields`), and the prefilter runs a rule's own
checks on a stand-in only when all of its criteria do.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from msgspec import UNSET, Meta, Raw, Struct, UnsetType, field

from ._types import parse_epoch

__all__ = [
    "RAW_FIELDS",
    "RawListing",
    "RawSticker",
    "read_array",
    "read_plain",
    "split_answer",
    "split_parts",
]

RAW_FIELDS = frozenset(
    {
        "item_id",
        "name",
        "price",
        "phase",
        "float_value",
        "platform_price",
        "unlock_at",
        "send_until",
        "sticker_names",
        "stickers",
    }
)
"""The :class:`~engine.models.Listing` attributes a :class:`RawListing` answers for."""

_Money = Annotated[int, Meta(ge=0)]
_Object = dict[str, Any]


class RawSticker(Struct, gc=False):
    """A sticker of a :class:`RawListing`: what :class:`~engine.models.Sticker` reads of
    the same values (``price`` 0 when absent or ``null``, a string of digits read)."""

    name: str
    image: str | None = None
    wear: float | None = None
    slot: int | None = None
    price: _Money | str | None = 0


class RawListing(Struct, gc=False):
    """A search listing's :data:`RAW_FIELDS` (and the other values its model checks), as
    :class:`~engine.models.Listing` reads them (see :func:`read_plain`): ``price`` an
    int, ``item_id`` text, ``phase`` ``None`` for ``""``, ``platform_price`` the first of
    the wire's two reference fields holding a number, times in epoch seconds,
    ``sticker_names`` and ``stickers`` tuples. Only :data:`RAW_FIELDS` may be read."""

    name: str
    price: _Money | str
    item_id: str | int
    phase: str | None = None
    float_value: float | None = field(default=None, name="float")
    platform_price: _Money | str | _Object | None = None
    platform_price_number: _Money | str | _Object | None = None
    unlock_at: int | str | None = None
    send_until: int | str | None = None
    sticker_names: tuple[str, ...] | None = ()
    stickers: tuple[RawSticker, ...] | None = ()
    # checked only: what the model would refuse is not plain
    image: str | None = None
    brand: str | int | None = None
    type: str | int | None = None
    discount: float | None = None
    best_deals: int | _Object | None = None
    # the Python name of the aliased ``float``: with both, which one the model reads is
    # pydantic's to say, so a listing carrying it is not plain
    aliased: UnsetType = field(default=UNSET, name="float_value")

    @property
    def trade_locked(self) -> bool:
        return self.unlock_at is not None


_listing = msgspec.json.Decoder(RawListing)


class _Envelope(Struct):
    items: dict[str, list[Raw]]
    success: Raw | UnsetType = UNSET
    msg: Raw | UnsetType = UNSET


_envelope = msgspec.json.Decoder(_Envelope)


class _Parts(Struct):
    items: dict[str, Raw]
    success: Raw | UnsetType = UNSET
    msg: Raw | UnsetType = UNSET


_parts = msgspec.json.Decoder(_Parts)
_array = msgspec.json.Decoder(list[Raw])

_ODD: Any = object()
_DIGITS = 30
"""Digits at most in a price read from text (Python refuses to read thousands)."""


def _money(value: Any) -> Any:
    """A price of an accepted type as pydantic's lax ``int`` reads it (an int is ``>= 0``
    already), or :data:`_ODD`."""
    if type(value) is int:
        return value
    if len(value) <= _DIGITS and value.isascii() and value.isdigit():
        return int(value)
    return _ODD


def _reference(value: Any) -> Any:
    if value is None or type(value) is int:
        return value
    if type(value) is dict:
        return None  # an object: no price
    return _money(value)


def _epoch(value: Any) -> Any:
    """A time as the model reads it (with its own parser), or :data:`_ODD`."""
    if value is None or type(value) is int:
        return value
    try:
        return parse_epoch(value)
    except ValueError:  # PydanticCustomError: the model would set the listing aside
        return _ODD


def _settle(x: RawListing) -> bool:
    """Read ``x``'s values as the model reads them, in place; ``False`` when one is not
    plain after all (a string that is not digits, a time its parser refuses)."""
    price = x.price
    if type(price) is not int:
        price = x.price = _money(price)
        if price is _ODD:
            return False
    if type(x.item_id) is int:
        x.item_id = str(x.item_id)  # numbers read as text
    if x.phase == "":
        x.phase = None
    reference = _reference(x.platform_price)
    if reference is None:
        reference = _reference(x.platform_price_number)
    elif x.platform_price_number is not None and _reference(x.platform_price_number) is _ODD:
        return False
    if reference is _ODD:
        return False
    x.platform_price = reference
    if x.unlock_at is not None:
        x.unlock_at = _epoch(x.unlock_at)
        if x.unlock_at is _ODD:
            return False
    if x.send_until is not None:
        x.send_until = _epoch(x.send_until)
        if x.send_until is _ODD:
            return False
    if x.sticker_names is None:
        x.sticker_names = ()
    stickers = x.stickers
    if stickers is None:
        x.stickers = ()
    else:
        for sticker in stickers:
            value = sticker.price
            if type(value) is not int:
                value = sticker.price = 0 if value is None else _money(value)
                if value is _ODD:
                    return False
    return True


def read_plain(text: bytes | Raw) -> RawListing | None:
    """The stand-in of one search listing's JSON text, or ``None`` when any of its
    values is not in a plain form (see the module's docstring): then build the listing."""
    try:
        listing = _listing.decode(text)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None
    return listing if _settle(listing) else None


def split_answer(
    content: bytes | str,
) -> tuple[dict[str, Any], dict[str, list[Raw]]] | None:
    """A search answer's other fields (``success``, ``msg``: those it carries, read) and
    its listings by searched name, each as its JSON text (found, not decoded), or
    ``None`` when the answer is not JSON or its ``items`` are not an object of arrays
    (the full decode gives its verdict on those)."""
    try:
        envelope = _envelope.decode(content)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None
    return _fields(envelope), envelope.items


def split_parts(content: bytes | str) -> tuple[dict[str, Any], dict[str, Raw]] | None:
    """:func:`split_answer` a step short: each searched name's listings as the JSON text
    of their array (:func:`read_array` splits one), which is not checked to be an array
    yet; ``None`` when the answer is not JSON or its ``items`` not an object."""
    try:
        envelope = _parts.decode(content)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None
    return _fields(envelope), envelope.items


def read_array(text: Raw) -> list[Raw] | None:
    """The items of the JSON array ``text`` (a part of :func:`split_parts`), each as its
    JSON text, or ``None`` when ``text`` is not an array."""
    try:
        return _array.decode(text)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None


def _fields(envelope: _Envelope | _Parts) -> dict[str, Any]:
    return {
        name: msgspec.json.decode(value)
        for name, value in (("success", envelope.success), ("msg", envelope.msg))
        if type(value) is Raw
    }
