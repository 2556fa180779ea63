"""The rules file's ``portfolio:`` section: how ``snipe portfolio`` (and the backtest
report's "Portfolio at the end") values what was bought.

::

    portfolio:
      value_by: market.p25        # the reference a holding is valued at
      min_observations: 3         # a market.* reference with fewer is no value
      max_age: 7d                 # a reference older than this is no value
      sale_fee: 5%                # taken from every sale (rounded up, against the trader)
      channel: the service        # where things are sold: a label shown with the fee

Every key is optional. Without ``sale_fee`` values are shown before any fee and the output
says so: a fee is never guessed.
"""

from __future__ import annotations

import re

from pydantic import Field, field_validator

from ._strict import StrictModel
from ._values import Duration, Percent

__all__ = ["VALUE_SOURCES", "PortfolioSettings"]

VALUE_SOURCES = (
    "market.p10",
    "market.p25",
    "market.median",
    "market.floor",
    "service.platform_price",
    "service.min",
)
"""The references a holding can be valued at (and ``file.NAME``, a price list)."""

_FILE_SOURCE = re.compile(r"^file\.[a-z][a-z0-9_]*$")


class PortfolioSettings(StrictModel):
    """The ``portfolio:`` section; see the module docstring."""

    value_by: str = "market.p25"
    min_observations: int = Field(3, ge=1, le=1_000_000)
    max_age: Duration = Field(7 * 86_400, ge=60)
    sale_fee: Percent | None = None
    """Basis points of a sale's price; ``None``: not set (values shown before any fee)."""
    channel: str | None = Field(None, min_length=1, max_length=80)

    @field_validator("value_by")
    @classmethod
    def _known_source(cls, value: str) -> str:
        if value in VALUE_SOURCES or _FILE_SOURCE.match(value):
            return value
        known = ", ".join(VALUE_SOURCES)
        raise ValueError(f"value_by must be one of {known} or file.NAME, got {value!r}")
