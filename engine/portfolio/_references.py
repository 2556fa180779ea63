"""The valuation's reference lookup, read from a :class:`~engine.reference.ReferenceHub`:
the live engine's, the backtest's, or one restored read-only from the file beside a
ledger. The guards are applied by the core, not here: this only says what the source
says, with its observation count and age."""

from __future__ import annotations

from collections.abc import Iterable

from ..ledger import Ledger
from ..reference import ReferenceHub
from ..rules import PortfolioSettings
from ._value import Lookup, Portfolio, Reference, Sale, value_portfolio

__all__ = ["hub_lookup", "value_ledger"]


async def value_ledger(
    ledger: Ledger,
    hub: ReferenceHub,
    settings: PortfolioSettings,
    *,
    now: float,
    sales: Iterable[Sale] = (),
) -> Portfolio:
    """The portfolio of an open ledger against a hub's references at ``now``: what a
    running engine (its ``ledger`` and ``references``) or a control plane shows."""
    purchases = await ledger.purchases()
    lookup = hub_lookup(hub, settings.value_by, now)
    return value_portfolio(purchases, lookup, settings, now=now, sales=sales)


def hub_lookup(hub: ReferenceHub, source: str, now: float) -> Lookup:
    """The lookup of ``source`` (``market.p25``, ``service.min``, ``file.NAME``...) in
    ``hub`` at ``now``. A phase is looked up as itself only: a Doppler phase is never
    valued by another phase's price, nor by the name's price over every phase."""
    if source.startswith("market."):
        statistic = source.removeprefix("market.")

        def market(base: str, phase: str | None) -> Reference | None:
            stats = hub.book.stats(base, phase, now)
            if stats is None:
                return None
            return Reference(source, stats.value(statistic), stats.observations, stats.as_of)

        return market

    def listed(base: str, phase: str | None) -> Reference | None:
        price_list = hub.lists.get(source)
        if price_list is None:
            return None
        price = price_list.prices.get((base, phase))
        if not price:
            return None
        return Reference(source, price, None, price_list.fetched_at)

    return listed
