"""The built-in reference price sources beyond ``platform_price``, registered like any
plugin's: ``market.p10``, ``market.p25``, ``market.median``, ``market.floor`` (learned from
the snapshot, :mod:`engine.reference`) and ``service.platform_price``, ``service.min``
(``GET /v1/prices``). The ``file.NAME`` sources come from the rules file's
``prices.lists``.

These sources do no I/O of their own: the engine's :class:`~engine.reference.ReferenceHub`
learns and fetches, and puts a quote per (name, phase) with its observation count and age
into :attr:`~engine.rules.EvalContext.references`, which :meth:`PriceSource.quote` reads.
"""

from __future__ import annotations

from ..hookspecs import hookimpl
from ..rules import PriceSource

__all__ = ["MARKET_STATISTICS", "SERVICE_FIELDS", "HubSource"]

MARKET_STATISTICS: dict[str, str] = {
    "p10": "10th percentile of prices that stayed listed (market.hold), over market.window",
    "p25": "25th percentile of prices that stayed listed, over the window",
    "median": "median of prices that stayed listed, over the window",
    "floor": "lowest price that stayed listed at least market.hold, over the window",
}
SERVICE_FIELDS: dict[str, str] = {
    "platform_price": "platform_price of GET /v1/prices (the service's reference)",
    "min": "lowest listed price of GET /v1/prices when it was fetched",
}


class HubSource(PriceSource):
    """A source whose quotes the engine's reference hub provides."""

    def __init__(self, name: str, description: str) -> None:
        self.name = name
        self.description = description
        self.every = None  # the hub learns and fetches these itself


@hookimpl
def snipe_register_price_sources() -> list[PriceSource]:
    return [
        *(HubSource(f"market.{k}", v) for k, v in MARKET_STATISTICS.items()),
        *(HubSource(f"service.{k}", v) for k, v in SERVICE_FIELDS.items()),
    ]
