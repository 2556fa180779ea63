"""``GET /v1/prices``: the per-item price list (interface.md 4.8 names it; its shape is in
wire-notes.md and docs/wire.md).

Each item is decoded on its own (:class:`PriceItem`): one odd row is set aside by the
decoder in :mod:`engine.reference._lists`, never the whole list.
"""

from __future__ import annotations

import math
from decimal import Decimal, InvalidOperation
from typing import Annotated, Any

from pydantic import BeforeValidator, field_validator
from pydantic_core import PydanticCustomError

from ._types import OptionalText, WireModel

__all__ = ["ListPrice", "PriceItem"]


def _list_price(value: Any) -> int | None:
    """A price in USD x 1000: an int, a numeric string (``"990000"``, ``"27867.5"``) or a
    float; a fraction of a unit is rounded (a reference, never a charge). ``None``/``""``
    mean absent; negative, boolean or non-numeric values are errors."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise PydanticCustomError("price", "expected a price, got a boolean")
    if isinstance(value, int):
        number = Decimal(value)
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise PydanticCustomError("price", "expected a finite price")
        number = Decimal(repr(value))
    elif isinstance(value, str):
        try:
            number = Decimal(value.strip())
        except InvalidOperation:
            raise PydanticCustomError(
                "price", "not a number: {value}", {"value": repr(value[:40])}
            ) from None
        if not number.is_finite():
            raise PydanticCustomError("price", "expected a finite price")
    else:
        raise PydanticCustomError(
            "price", "expected a number, got {kind}", {"kind": type(value).__name__}
        )
    if number < 0:
        raise PydanticCustomError("price", "a price cannot be negative")
    return int(number.to_integral_value())


ListPrice = Annotated[int | None, BeforeValidator(_list_price)]


class PriceItem(WireModel):
    """One row of ``GET /v1/prices``: ``min`` is the lowest listed price, ``count`` the
    number of listings, ``platform_price`` the service's reference (USD x 1000 each). A
    Doppler phase may be written into ``name``."""

    name: str
    min: ListPrice = None
    platform_price: ListPrice = None
    count: int | None = None
    img: OptionalText = None
    type: OptionalText = None
    rarity_color: OptionalText = None

    @field_validator("name")
    @classmethod
    def _named(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("empty name")
        return value
