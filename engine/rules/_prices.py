"""The rules file's ``prices:`` section: how the reference price sources are fed.

::

    prices:
      market: {window: 7d, hold: 10m}      # learned from the snapshot (market.p25, ...)
      service: {every: 10m}                # GET /v1/prices (service.platform_price, ...)
      lists:                               # price lists: file.NAME
        buff: {path: prices/buff.csv, every: 1h}
        mine: {url: "http://127.0.0.1:8080/prices.json", every: 30m, unit: usd1000}

Every key is optional; without the section the ``market`` source learns with the defaults
and the service list is fetched only when a rule names a ``service.*`` source.
"""

from __future__ import annotations

from typing import Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import Field, field_validator, model_validator

from ._contract import PriceSource
from ._strict import StrictModel
from ._values import Duration

__all__ = ["ListSettings", "ListSource", "MarketSettings", "PricesSettings", "ServiceSettings"]


class MarketSettings(StrictModel):
    """The learned ``market.*`` source: statistics over ``window`` of the prices that
    stayed listed at least ``hold``."""

    window: Duration = Field(7 * 86_400, ge=3_600, le=90 * 86_400)
    hold: Duration = Field(600, ge=0, le=86_400)


class ServiceSettings(StrictModel):
    """``GET /v1/prices``, fetched every ``every`` (outside the search budget)."""

    every: Duration = Field(600, ge=60, le=86_400)
    game: Literal["csgo", "dota2", "rust", "tf2"] | None = None


class ListSettings(StrictModel):
    """A price list from a ``path`` or an HTTP(S) ``url`` (exactly one), read every
    ``every``: JSON ``{name: price}`` or rows ``{market_hash_name, price, phase}``, or CSV
    with those columns; ``unit`` ``usd`` (dollars, default) or ``usd1000``."""

    path: str | None = None
    url: str | None = None
    every: Duration = Field(3_600, ge=10, le=7 * 86_400)
    format: Literal["json", "csv"] | None = None
    unit: Literal["usd", "usd1000"] = "usd"

    @field_validator("url")
    @classmethod
    def _http(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError("url must start with http:// or https://")
        return value

    @model_validator(mode="after")
    def _one_origin(self) -> ListSettings:
        if (self.path is None) == (self.url is None):
            raise ValueError("a price list needs exactly one of `path` and `url`")
        return self

    @property
    def origin(self) -> str:
        """Where the list comes from, for logs and errors: the path, or the address
        without its query (which may carry a key)."""
        if self.path is not None:
            return self.path
        parts = urlsplit(str(self.url))
        return urlunsplit(parts._replace(query="...", fragment="") if parts.query else parts)


class PricesSettings(StrictModel):
    """The ``prices:`` section. ``store``: the reference price file (default: beside the
    ledger, ``<ledger>.prices.sqlite``); ``flush_every``: how often learned prices are
    written to it."""

    store: str | None = None
    flush_every: Duration = Field(60, ge=1, le=3_600)
    market: MarketSettings = MarketSettings()
    service: ServiceSettings = ServiceSettings()
    lists: dict[str, ListSettings] = Field(default_factory=dict)

    @field_validator("lists")
    @classmethod
    def _names(cls, value: dict[str, ListSettings]) -> dict[str, ListSettings]:
        for name in value:
            if (
                not name.replace("_", "").isalnum()
                or not name[:1].isalpha()
                or name != name.lower()
            ):
                raise ValueError(
                    f"list name {name!r} must be lower_snake_case (it becomes file.{name})"
                )
        return value


class ListSource(PriceSource):
    """The source ``file.NAME`` of the price list ``prices.lists.NAME``: its quotes are
    filled by the engine's reference hub (see :meth:`PriceSource.quote`)."""

    def __init__(self, list_name: str) -> None:
        self.name = f"file.{list_name}"
        self.description = f"the price list prices.lists.{list_name}"
        self.every = None  # fetched by the hub on prices.lists.NAME.every
