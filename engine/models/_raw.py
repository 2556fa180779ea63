"""A search listing read from its raw JSON values, for a prefilter: no model built.

A v2 search answer holds up to 2,500 listings and building a :class:`Listing` for each is
most of the cost of reading it (bench/bench_parse.py), while the rules turn most of them
down on a few fields. :func:`read_plain` reads those fields straight from the parsed
values into a :class:`RawListing`, a stand-in with the attributes the rules' built-in
criteria read, **only when every value of the listing is in a plain form**: one that
:class:`Listing` surely accepts and reads to the very value the stand-in holds. Anything
odder (a price in dollars, a time as text, a negative price, an id that is a float, a
sticker without a name...) gives ``None``: the listing is built as before, so an odd
listing is set aside and counted exactly as without a prefilter, and a stand-in never
differs from the model it stands for in what it carries.

The fields a stand-in carries are :data:`RAW_FIELDS`; a criterion declares which it reads
(:attr:`engine.rules.Compiled.raw_fields`), and the prefilter runs a rule's own checks
on a stand-in only when all of its criteria do.
"""

from __future__ import annotations

from typing import Any

__all__ = ["RAW_FIELDS", "RawListing", "RawSticker", "read_plain"]

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
"""The :class:`~engine.models.Listing` attributes a :class:`RawListing` carries."""


class RawSticker:
    """A sticker of a :class:`RawListing`: what :class:`~engine.models.Sticker` reads of
    its plain values (``price`` 0 when absent or ``null``), its image left out."""

    __slots__ = ("name", "price", "slot", "wear")

    def __init__(self, name: str, wear: float | None, slot: int | None, price: int) -> None:
        self.name = name
        self.wear = wear
        self.slot = slot
        self.price = price

    def __repr__(self) -> str:
        return f"RawSticker(name={self.name!r}, wear={self.wear!r}, slot={self.slot!r})"


class RawListing:
    """A search listing's :data:`RAW_FIELDS`, as :class:`~engine.models.Listing` reads
    them from the same plain values (see :func:`read_plain`). Immutable by convention;
    ``stickers`` are made on first read (only a rule counting stickers reads them)."""

    __slots__ = (
        "_stickers",
        "float_value",
        "item_id",
        "name",
        "phase",
        "platform_price",
        "price",
        "send_until",
        "sticker_names",
        "unlock_at",
    )

    def __init__(
        self,
        item_id: str,
        name: str,
        price: int,
        phase: str | None,
        float_value: float | None,
        platform_price: int | None,
        unlock_at: int | None,
        send_until: int | None,
        sticker_names: tuple[str, ...],
        stickers: list[dict[str, Any]] | tuple[RawSticker, ...],
    ) -> None:
        self.item_id = item_id
        self.name = name
        self.price = price
        self.phase = phase
        self.float_value = float_value
        self.platform_price = platform_price
        self.unlock_at = unlock_at
        self.send_until = send_until
        self.sticker_names = sticker_names
        self._stickers = stickers

    @property
    def stickers(self) -> tuple[RawSticker, ...]:
        held = self._stickers
        if type(held) is tuple:
            return held
        made = tuple(
            RawSticker(
                s["name"],
                None if (w := s.get("wear")) is None else float(w),
                s.get("slot"),
                _money(s.get("price")) or 0,
            )
            for s in held
        )
        self._stickers = made
        return made

    @property
    def trade_locked(self) -> bool:
        return self.unlock_at is not None

    def __repr__(self) -> str:
        return f"RawListing(item_id={self.item_id!r}, name={self.name!r}, price={self.price})"


# -- plain forms -------------------------------------------------------------------------
# For each key a Listing reads: the types whose values it surely accepts (more checks for
# some below). A key not listed is ignored by the model (``extra="ignore"``) or lenient.
_TEXT = frozenset({str, type(None)})
_NUMBER = frozenset({int, float, type(None)})
_ACCEPTED: dict[str, frozenset[type]] = {
    "image": _TEXT,
    "brand": frozenset({str, int, type(None)}),  # numbers read as text
    "type": frozenset({str, int, type(None)}),
    "discount": _NUMBER,
    "best_deals": frozenset({int, dict, type(None)}),  # an object is "no price"
}
_CHECKED = tuple(_ACCEPTED)
_SKIPPED = frozenset({"float_value"})
"""Keys that name a field by its Python name where the wire uses an alias: with both, which
one wins is pydantic's to say, so such a listing is built."""


def _money(value: Any) -> int | None:
    """A plain price (USD x 1000) as pydantic's lax ``int`` reads it: a JSON integer
    ``>= 0`` or a string of ASCII digits; ``None`` for anything else (not plain)."""
    kind = type(value)
    if kind is int:
        return value if value >= 0 else None
    # short: Python refuses to read thousands of digits, pydantic may not
    if kind is str and len(value) <= _DIGITS and value.isascii() and value.isdigit():
        return int(value)
    return None


_DIGITS = 30


def _reference(value: Any) -> tuple[bool, int | None]:
    """(plain?, the reference price read): absent, ``null`` and an object are no price."""
    if value is None or type(value) is dict:
        return True, None
    money = _money(value)
    return money is not None, money


def _epoch(value: Any) -> tuple[bool, int | None]:
    """(plain?, epoch seconds): absent, ``null`` and ``""`` are none, an integer itself."""
    if value is None or value == "":
        return True, None
    return type(value) is int, value


def _plain_sticker(sticker: Any) -> bool:
    if type(sticker) is not dict or type(sticker.get("name")) is not str:
        return False
    if type(sticker.get("image")) not in _TEXT or type(sticker.get("slot")) not in _SLOT:
        return False
    wear = sticker.get("wear")
    if type(wear) not in _NUMBER or (type(wear) is int and not -_EXACT <= wear <= _EXACT):
        return False
    price = sticker.get("price")
    return price is None or _money(price) is not None


_SLOT = frozenset({int, type(None)})
_EXACT = 1 << 53
"""An integer wear beyond this is not read as plainly (a float rounds it, or overflows)."""


def read_plain(entry: Any) -> RawListing | None:
    """The stand-in of a search listing's parsed values, or ``None`` when any of them is
    not in a plain form (see the module's docstring): then the listing must be built."""
    if type(entry) is not dict:
        return None
    name = entry.get("name")
    price = _money(entry.get("price"))
    item_id = entry.get("item_id")
    if type(name) is not str or price is None or not _SKIPPED.isdisjoint(entry):
        return None
    if type(item_id) is not str:
        if type(item_id) is not int:
            return None
        item_id = str(item_id)  # numbers read as text
    for key in _CHECKED:
        if type(entry.get(key)) not in _ACCEPTED[key]:
            return None
    phase = entry.get("phase")
    if type(phase) is not str:
        if phase is not None:
            return None
    elif not phase:
        phase = None
    wear = entry.get("float")
    if type(wear) is not float:
        if type(wear) is int and -_EXACT <= wear <= _EXACT:
            wear = float(wear)
        elif wear is not None:
            return None
    plain, platform = _reference(entry.get("platform_price"))
    if not plain:
        return None
    plain, number = _reference(entry.get("platform_price_number"))
    if not plain:
        return None
    plain, unlock_at = _epoch(entry.get("unlock_at"))
    if not plain:
        return None
    plain, send_until = _epoch(entry.get("send_until"))
    if not plain:
        return None
    names = entry.get("sticker_names")
    if names is None:
        sticker_names: tuple[str, ...] = ()
    elif type(names) is list and all(type(n) is str for n in names):
        sticker_names = tuple(names)
    else:
        return None
    stickers = entry.get("stickers")
    if stickers is None:
        stickers = ()
    elif type(stickers) is not list or not all(map(_plain_sticker, stickers)):
        return None
    return RawListing(
        item_id,
        name,
        price,
        phase,
        wear,
        platform if platform is not None else number,
        unlock_at,
        send_until,
        sticker_names,
        stickers if stickers else (),
    )
