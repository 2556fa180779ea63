"""The value types of the rule language: dollars, percentages, wear, durations.

Each is an ``Annotated`` type with a validator that reads the text a person wrote exactly
(the YAML loader hands numbers over as ``Decimal`` built from their source text) and turns
it into the one internal form:

- :data:`USD` -> ``int`` USD x 1000 (``"12.50"``, ``12.5``, ``"$12.50"`` -> ``12500``);
- :data:`Percent` -> ``int`` basis points (``20``, ``"20%"``, ``12.5`` -> ``2000``, ``1250``);
- :data:`Wear` -> ``float`` in ``[0, 1]``;
- :data:`Duration` -> ``int`` seconds (``"7d"``, ``"36h"``, ``"1d12h"``, ``"90m"``, ``3600``);
- :data:`Size` -> ``int`` bytes (``"1 MiB"``, ``"512KiB"``, ``"2MB"``, ``1048576``).
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Annotated, Any

from pydantic import BeforeValidator

from .._money import parse_usd

__all__ = [
    "BASIS_POINTS",
    "USD",
    "Duration",
    "Percent",
    "Size",
    "Wear",
    "duration_shape",
    "format_duration",
    "format_percent",
    "format_size",
    "parse_duration",
    "parse_percent",
    "parse_size",
    "parse_wear",
]

BASIS_POINTS = 10_000
"""100% in the unit :data:`Percent` is kept in."""


def _usd(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, str | int | Decimal):
        raise ValueError(f"expected a dollar amount such as '12.50', got {value!r}")
    if isinstance(value, Decimal) and not value.is_finite():
        raise ValueError(f"{value} is not a dollar amount")
    # Decimal from the YAML source text: quote it as the person wrote it
    return parse_usd(format(value, "f") if isinstance(value, Decimal) else value)


USD = Annotated[int, BeforeValidator(_usd)]
"""Dollars as written (text or a number read exactly) -> USD x 1000."""


def parse_percent(value: Any) -> int:
    """``20``, ``"20%"``, ``12.5``, ``"0.5 %"`` -> basis points (``2000``, ``1250``, ``50``).

    A percentage is a number from 0 to 100 with at most two decimals.
    """
    if isinstance(value, bool):
        raise ValueError(f"expected a percentage such as 20 or '20%', got {value!r}")
    text = value.strip().removesuffix("%").strip() if isinstance(value, str) else value
    try:
        amount = Decimal(text) if isinstance(text, str | int | Decimal) else None
    except InvalidOperation:
        amount = None
    if amount is None or not amount.is_finite():
        raise ValueError(f"expected a percentage such as 20 or '20%', got {value!r}")
    if not 0 <= amount <= 100:
        raise ValueError(f"a percentage is between 0 and 100, got {_shown(value)}")
    points = amount * 100
    if points != points.to_integral_value():
        raise ValueError(f"{_shown(value)} has more than two decimals")
    return int(points)


def _shown(value: Any) -> str:
    return format(value, "f") if isinstance(value, Decimal) else repr(value)


Percent = Annotated[int, BeforeValidator(parse_percent)]
"""A percentage -> basis points (``20%`` -> ``2000``)."""


def format_percent(points: int | float) -> str:
    """Basis points -> ``"20%"`` / ``"12.5%"``."""
    return f"{points / 100:.2f}".rstrip("0").rstrip(".") + "%"


def parse_wear(value: Any) -> float:
    """A float (wear) value from 0 to 1."""
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal | str):
        raise ValueError(f"expected a wear value between 0 and 1, got {value!r}")
    try:
        wear = float(Decimal(value.strip()) if isinstance(value, str) else value)
    except (InvalidOperation, ValueError):
        raise ValueError(f"expected a wear value between 0 and 1, got {value!r}") from None
    if not 0.0 <= wear <= 1.0:
        shown = format(value, "f") if isinstance(value, Decimal) else repr(value)
        raise ValueError(f"a wear (float) value is between 0 and 1, got {shown}")
    return wear


Wear = Annotated[float, BeforeValidator(parse_wear)]

_DURATION_PART = re.compile(r"(\d+)\s*([wdhms])")
_DURATION = re.compile(r"^\s*(?:\d+\s*[wdhms]\s*)+$")
_UNIT_SECONDS = {"w": 604_800, "d": 86_400, "h": 3_600, "m": 60, "s": 1}


def parse_duration(value: Any) -> int:
    """``"7d"``, ``"36h"``, ``"1d12h"``, ``"90m"``, ``"30s"``, ``"2w"`` or whole seconds."""
    if isinstance(value, bool):
        raise ValueError(f"expected a duration such as '7d' or '36h', got {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"a duration cannot be negative, got {value!r}")
        return value
    if isinstance(value, str) and _DURATION.match(value.lower()):
        return sum(
            int(n) * _UNIT_SECONDS[unit] for n, unit in _DURATION_PART.findall(value.lower())
        )
    raise ValueError(f"expected a duration such as '7d', '36h', '1d12h' or '90m', got {value!r}")


Duration = Annotated[int, BeforeValidator(parse_duration)]
"""A duration -> seconds."""


_SIZE = re.compile(r"^\s*(\d+)\s*(b|kb|kib|mb|mib|gb|gib)?\s*$")
_UNIT_BYTES = {
    None: 1,
    "b": 1,
    "kb": 1000,
    "kib": 1 << 10,
    "mb": 1000**2,
    "mib": 1 << 20,
    "gb": 1000**3,
    "gib": 1 << 30,
}


def parse_size(value: Any) -> int:
    """``"1 MiB"``, ``"512KiB"``, ``"2MB"``, ``"300 B"`` or whole bytes -> bytes."""
    if isinstance(value, Decimal) and value == value.to_integral_value():
        value = int(value)  # the YAML loader's numbers: a whole one is a count of bytes
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    match = _SIZE.match(value.lower()) if isinstance(value, str) else None
    if match is None:
        shown = format(value, "f") if isinstance(value, Decimal) else repr(value)
        raise ValueError(f"expected a size such as '1 MiB', '512 KiB' or 1048576, got {shown}")
    return int(match[1]) * _UNIT_BYTES[match[2]]


Size = Annotated[int, BeforeValidator(parse_size)]
"""A size -> bytes."""


def format_size(size: int) -> str:
    """Bytes -> ``"1 MiB"`` / ``"64 KiB"`` / ``"1000 B"`` (exact, for messages)."""
    for unit, factor in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size and size % factor == 0:
            return f"{size // factor} {unit}"
    return f"{size} B"


def format_duration(seconds: float) -> str:
    """Seconds -> ``"2d 4h"`` / ``"36m"`` (for reasons shown to a person)."""
    seconds = int(seconds)
    if seconds < 0:
        return "-" + format_duration(-seconds)
    days, rest = divmod(seconds, 86_400)
    hours, rest = divmod(rest, 3_600)
    minutes = rest // 60
    parts = [f"{days}d"] if days else []
    if hours:
        parts.append(f"{hours}h")
    if minutes and not days:
        parts.append(f"{minutes}m")
    return " ".join(parts) or f"{seconds}s"


def duration_shape(seconds: float) -> int:
    """Which parts :func:`format_duration` writes for ``seconds``, the sign aside: 4 for
    days, 2 for hours, 1 for minutes, 0 for seconds only. Two durations of one shape read
    alike once their numbers are blanked, as skip reasons are counted (a criterion's
    :data:`~engine.rules.ReasonKind` tells a reason's kind with it, without the text)."""
    days, rest = divmod(abs(int(seconds)), 86_400)
    shape = 4 if days else 0
    if rest >= 3_600:
        shape |= 2
    if not days and rest % 3_600 >= 60:
        shape |= 1
    return shape
