"""Plugins that peek at the future, planted for the look-ahead check's tests.

Each does what a strategy author could do by mistake: ``prophet`` quotes a statistic of
the whole recording (the last price it shows), ``hoard`` vetoes by a lowest price it
keeps in a module-level table from one run to the next. ``PROPHET`` and ``HOARD`` are
the plugin objects (an entry point can name them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from engine.backtest import read_records, replayed_recording
from engine.hookspecs import hookimpl
from engine.rules import Decision, EvalContext, PriceSource

LOWEST: dict[str, int] = {}
"""``hoard``'s table: the lowest price of each name it was ever told about."""


class LastPrice(PriceSource):
    """``prophet.last``: each name at the last price the replayed recording shows for
    it, read from the recording's search answers, the future included."""

    name = "prophet.last"
    description = "the last recorded price (reads the whole recording: look-ahead)"
    every = 60.0

    async def fetch(self, names: Sequence[str]) -> Mapping[str, int]:
        path = replayed_recording()
        if path is None:
            return {}
        last: dict[str, int] = {}
        for record in read_records(path):
            if record.k == "search":
                for name, entries in record.body["items"].items():
                    for entry in entries:
                        last[name] = int(entry["price"])
        return {name: last[name] for name in names if name in last}


class Prophet:
    @hookimpl
    def snipe_register_price_sources(self) -> Sequence[PriceSource]:
        return [LastPrice()]


class Hoard:
    """Vetoes a purchase above the lowest price of its name ever seen: in one run that
    is the past only, but the table outlives the run."""

    @hookimpl
    def snipe_decisions(self, decisions: Sequence[Decision], context: EvalContext) -> None:
        for decision in decisions:
            name, price = decision.name, decision.listing.price
            LOWEST[name] = min(price, LOWEST.get(name, price))

    @hookimpl
    def snipe_veto_purchase(self, decision: Decision, context: EvalContext) -> bool | None:
        return decision.price <= LOWEST.get(decision.name, decision.price)


PROPHET = Prophet()
HOARD = Hoard()
