"""Field types shared by every model: lenient on the way in, one typed form inside.

The live service sends the same field in several forms (wire-notes.md): ids as integers or
strings, prices as integers or numeric strings (zero-padded in the CSV snapshot), times as
RFC 3339 strings, epoch integers or numeric strings, ``""`` for "no phase", ``null`` sticker
wear. These types accept every form seen and normalise it, so the rest of snipe sees one.

Prices are read in pydantic-core without a Python call per value, which keeps parsing fast:
a JSON integer (strict, so ``true`` is not the price 1) or a string its lax ``int`` reads
(``"990000"``, ``"000000027867"``), never below 0 unless it is a difference. Only what
both refuse (``5000.5``, ``"5000.0"``) reaches the Python fallback, which rounds a fraction
and refuses the rest.
"""

from __future__ import annotations

import math
from datetime import datetime
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal, InvalidOperation
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    GetCoreSchemaHandler,
    ValidationInfo,
)
from pydantic_core import PydanticCustomError, core_schema

__all__ = [
    "PHASES",
    "Charged",
    "Epoch",
    "ImageURL",
    "Lenient",
    "Nullable",
    "OptionalText",
    "Phase",
    "Price",
    "Reference",
    "WireModel",
    "WireMoney",
    "image_base_url",
    "join_image_url",
    "parse_epoch",
]

PHASES: frozenset[str] = frozenset(
    {"Phase 1", "Phase 2", "Phase 3", "Phase 4", "Ruby", "Sapphire", "Black Pearl", "Emerald"}
)
"""Every phase value of interface.md section 2.1."""


class WireModel(BaseModel):
    """Base of every model parsed from the wire: unknown fields ignored, numbers accepted
    where text is expected, instances immutable."""

    model_config = ConfigDict(
        extra="ignore",
        frozen=True,
        coerce_numbers_to_str=True,
        populate_by_name=True,
        # pydantic-core's cache of short string values thrashes on answers full of
        # unique ones (a search's 2,500 inspect links, ids): caching only keys parses
        # a search answer about a tenth faster (bench/bench_parse.py)
        cache_strings="keys",
    )


def parse_epoch(value: Any) -> int | None:
    """An instant as epoch seconds, from an int, a float, a numeric string, or an RFC 3339
    string. ``None`` and ``""`` mean absent."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise PydanticCustomError("epoch", "expected a time, got a boolean")
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise PydanticCustomError("epoch", "expected a time, got {value}", {"value": value})
        return int(value)
    if isinstance(value, str):
        text = value.strip()
        try:
            return int(float(text)) if _looks_numeric(text) else _parse_rfc3339(text)
        except (ValueError, OverflowError):  # OverflowError: digits past a float's range
            raise PydanticCustomError(
                "epoch",
                "expected epoch seconds or an RFC 3339 time, got {value}",
                {"value": repr(value)},
            ) from None
    raise PydanticCustomError(
        "epoch", "expected a time, got {type}", {"type": type(value).__name__}
    )


def _looks_numeric(text: str) -> bool:
    return bool(text) and text.replace(".", "", 1).isdigit()


def _parse_rfc3339(text: str) -> int:
    parsed = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    if parsed.tzinfo is None:
        raise ValueError("RFC 3339 time without an offset")
    return int(parsed.timestamp())


Epoch = Annotated[int | None, BeforeValidator(parse_epoch)]
"""An instant in epoch seconds (UTC), or ``None`` when absent."""


def _empty_to_none(value: Any) -> Any:
    return None if value == "" else value


Phase = Annotated[str | None, BeforeValidator(_empty_to_none)]
"""A Doppler phase (see :data:`PHASES`), or ``None``: ``""`` on the wire means no phase."""

OptionalText = Annotated[str | None, BeforeValidator(_empty_to_none)]


def join_image_url(value: str | None, base: str | None) -> str | None:
    """interface.md 2.9: a value that does not start with ``http`` is appended to
    ``{image_base_url}/``."""
    if not value or base is None or value.startswith("http"):
        return value or None
    return f"{base.rstrip('/')}/{value.lstrip('/')}"


def image_base_url(info: ValidationInfo) -> str | None:
    """The ``image_base_url`` a caller passed in the validation context, if any."""
    context = info.context
    return context.get("image_base_url") if isinstance(context, dict) else None


def _image_url(value: str | None, info: ValidationInfo) -> str | None:
    # An after-validator (not a wrap one) on the already-validated text: parsing a large
    # search answer calls this thousands of times, and a wrap validator costs several
    # times more per call.
    if not value:
        return None
    if value.startswith("http"):
        return value
    return join_image_url(value, image_base_url(info))


ImageURL = Annotated[str | None, AfterValidator(_image_url)]
"""An image address; relative values are joined to the ``image_base_url`` passed in the
validation context."""


class WireMoney:
    """Annotation of a money field (USD x 1000) that also reads a fraction of a thousandth.

    Whole numbers (``5000``, ``"990000"``, ``"000000027867"``, ``5000.0``) are read by
    pydantic's lax ``int`` in pydantic-core, as before; only a value that fails it reaches
    the Python fallback, so the common path costs nothing more. The fallback reads a
    fractional number or numeric string (``"27867.5"``: seen on the live feed) and rounds it
    against the buyer (docs/wire.md): ``ROUND_CEILING`` for what snipe may pay (a listing's
    price, a trade's charged price), ``ROUND_FLOOR`` for what it compares against (a
    reference price, a sticker's value). Half a thousandth of a dollar is never worth
    setting a listing aside, and rounding this way never under-counts spending nor
    over-states a discount. ``null`` gives ``null_as`` when set (else it is refused, unless
    the field is optional); ``objects_absent`` reads an object as "no price" (the website's
    ``platform_price`` object).
    """

    _MESSAGE = "Input should be a price in USD x 1000 (a number or a numeric string)"

    def __init__(
        self,
        rounding: str,
        *,
        null_as: int | None = None,
        objects_absent: bool = False,
        signed: bool = False,
    ) -> None:
        self.rounding = rounding
        self.null_as = null_as
        self.objects_absent = objects_absent
        self.least = None if signed else 0

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.union_schema(
            [
                core_schema.int_schema(strict=True, ge=self.least),
                core_schema.chain_schema(
                    [core_schema.str_schema(strict=True), core_schema.int_schema(ge=self.least)]
                ),
                core_schema.no_info_plain_validator_function(self.read),
            ],
            mode="left_to_right",
            custom_error_type="money",
            custom_error_message=self._MESSAGE,
        )

    def read(self, value: Any) -> int | None:
        """The fallback for a value pydantic's ``int`` refused: a fraction rounded, or
        ``PydanticCustomError`` when it is not a price at all."""
        if value is None and self.null_as is not None:
            return self.null_as
        if isinstance(value, dict) and self.objects_absent:
            return None
        if isinstance(value, str | float) and not isinstance(value, bool):
            try:
                number = Decimal(value.strip() if isinstance(value, str) else repr(value))
            except InvalidOperation:
                number = None
            if (
                number is not None
                and number.is_finite()
                and (self.least is None or number >= self.least)
            ):
                return int(number.to_integral_value(self.rounding))
        raise PydanticCustomError("money", self._MESSAGE)


Price = Annotated[int, WireMoney(ROUND_CEILING)]
"""Money snipe may pay: a fraction of a thousandth is rounded up."""
Charged = Price
"""Money the service says was charged: rounded up, so spending is never under-counted."""
Reference = Annotated[int, WireMoney(ROUND_FLOOR, objects_absent=True)]
"""A price compared against (a reference price): a fraction is rounded down, and an object
in its place (a website's ``platform_price`` object) means no price."""
Difference = Annotated[int, WireMoney(ROUND_FLOOR, objects_absent=True, signed=True)]
"""A difference of two prices (``best_deals``: the suggested price less the price), which
may be below 0; read as a reference otherwise."""


class Lenient:
    """Annotation of an informative field (``inspect``, ``delivery``, ``auto``, paint
    seed): a value of an unexpected type becomes ``None`` instead of setting the whole
    listing aside. Never used on money, ids, times or a status."""

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        # pydantic-core's own "use the default when the value does not validate": no
        # Python call for any value, odd or not: a search answer holds 2,500 listings, and
        # an odd value may be in every one of them (the sandbox and bench/bench_parse.py
        # send ``delivery`` as an object).
        return core_schema.with_default_schema(handler(source), default=None, on_error="default")


class Nullable:
    """Annotation of a collection field that the service sometimes sends as ``null``
    (``sticker_names: null``): ``null`` passes, and the model's own normalisation turns it
    into the empty collection (one check in a validator that already runs, rather than a
    validator call per value)."""

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.nullable_schema(handler(source))
