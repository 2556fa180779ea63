"""Money: an integer number of thousandths of a US dollar, everywhere.

The marketplace counts ``1000`` as one dollar. snipe keeps that unit end to end (the wire,
rules, budgets, the ledger, reports) and never lets a float near an amount. Humans write
dollars (``"12.50"``, ``"$0.999"``); :func:`parse_usd` turns that text into the integer
exactly, and :func:`format_usd` turns it back.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import TypeAlias

__all__ = ["MILLS_PER_USD", "Money", "format_usd", "parse_usd"]

Money: TypeAlias = int
"""USD x 1000. ``12_500`` is $12.50."""

MILLS_PER_USD = 1000

_USD_TEXT = re.compile(r"^\s*\$?\s*(?P<num>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*(?:usd|USD)?\s*$")


def parse_usd(text: str | int | Decimal) -> Money:
    """Dollars as a person writes them -> USD x 1000, exactly.

    ``"12.5"``, ``"$12.50"``, ``"12.345 USD"`` and ``12`` are accepted. More than three
    decimals, a negative amount, or anything else raises ``ValueError`` with a message that
    quotes the input. Floats are refused: ``0.1`` has no exact binary form, and a money
    amount that is not exact is a bug waiting to happen.
    """
    if isinstance(text, bool | float):
        raise ValueError(f"{text!r} is not an exact dollar amount; write it as text, e.g. '12.50'")
    if isinstance(text, int):
        if text < 0:
            raise ValueError(f"{text!r} is negative")
        return text * MILLS_PER_USD
    if isinstance(text, Decimal):
        amount = text
    else:
        match = _USD_TEXT.match(text)
        if match is None:
            raise ValueError(f"{text!r} is not a dollar amount such as '12.50'")
        try:
            amount = Decimal(match["num"])
        except InvalidOperation:  # pragma: no cover - the regex admits only valid numbers
            raise ValueError(f"{text!r} is not a dollar amount such as '12.50'") from None
    if amount < 0:
        raise ValueError(f"{text!r} is negative")
    mills = amount * MILLS_PER_USD
    if mills != mills.to_integral_value():
        raise ValueError(f"{text!r} has more than three decimals (the unit is $0.001)")
    return int(mills)


_SHOWN: dict[int, str] = {}
_SHOWN_HELD = 100_000


def format_usd(amount: Money) -> str:
    """USD x 1000 -> ``"$12.50"`` (cents always shown, the third decimal only when used)."""
    # Memoised: skip reasons show the same prices and caps again and again (two per
    # reason of a turned-down pair was a quarter of making the reasons). Integers only:
    # 1.0 == 1 would otherwise share a text.
    if type(amount) is int:
        shown = _SHOWN.get(amount)
        if shown is None:
            if len(_SHOWN) >= _SHOWN_HELD:
                _SHOWN.clear()
            shown = _SHOWN[amount] = _format_usd(amount)
        return shown
    return _format_usd(amount)


def _format_usd(amount: Money) -> str:
    sign = "-" if amount < 0 else ""
    dollars, mills = divmod(abs(amount), MILLS_PER_USD)
    if mills % 10:
        return f"{sign}${dollars:,}.{mills:03d}"
    return f"{sign}${dollars:,}.{mills // 10:02d}"
