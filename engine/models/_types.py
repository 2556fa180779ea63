"""Field types shared by every model: lenient on the way in, one typed form inside.

The live service sends the same field in several forms (wire-notes.md): ids as integers or
strings, prices as integers or numeric strings (zero-padded in the CSV snapshot), times as
RFC 3339 strings, epoch integers or numeric strings, ``""`` for "no phase", ``null`` sticker
wear. These types accept every form seen and normalise it, so the rest of snipe sees one.

Prices use pydantic's lax ``int``, which already accepts ``990000``, ``"990000"``,
``"000000027867"`` and ``5000.0`` and rejects ``5000.5``; that is done in pydantic-core,
without a Python call per value, which keeps parsing fast.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, ValidationInfo
from pydantic_core import PydanticCustomError

__all__ = [
    "PHASES",
    "Epoch",
    "ImageURL",
    "OptionalText",
    "Phase",
    "WireModel",
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
