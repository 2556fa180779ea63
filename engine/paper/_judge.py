"""Would a paper purchase have gone through? The judgement, pure: no I/O, no clock.

A paper purchase (``snipe run --paper``) is written to its ledger as an INTENT at
``decided_at`` and its request, never sent, is taken to arrive at ``arrival``
(``decided_at`` + the paper latency). It counts only if the listing was still there, at
most at the price offered, when that request would have arrived. What the engine sees of
the market afterwards is a :class:`Sighting` of the item: listed at a price, or gone.
The first sighting that settles the question gives the :class:`Verdict`; until then the
purchase stays pending (an INTENT, across restarts).

Two kinds of sighting:

- **exact** (the live feed): the change happened when it was told. A removal or a
  price rise told *after* the arrival means the listing was still there, at the price
  offered, when the request came: bought. Told at or before it: missed.
- **a look** (a search, a catalogue page, a snapshot): the market as it was at ``at``,
  with nothing said about when it changed. Listed at most at the price offered at or
  after the arrival: bought (listed at the decision and after the arrival is taken as
  listed throughout). Gone, or dearer, at any look after the decision: missed, even when
  it may have gone after the arrival: the look cannot tell, and paper mode never counts
  a purchase it cannot show.

A sighting from before the intent (the answer the decision came from) proves nothing.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from .._money import format_usd

__all__ = ["Judged", "Pending", "Sighting", "Verdict", "judge"]


class Judged(enum.StrEnum):
    """How a paper purchase ended. The value is the word the ledger's reason starts with."""

    BOUGHT = "bought"
    GONE = "gone"
    """The listing left the market (sold to another buyer or withdrawn by its seller: the
    service does not say which) before the request would have arrived."""
    PRICE_CHANGED = "price changed"
    """The listing was still there, dearer than the price the request offered."""


@dataclass(frozen=True, slots=True)
class Pending:
    """A paper purchase waiting for its judgement. Money in USD x 1000; times on the
    engine's clock."""

    project_id: str
    item_id: str
    name: str
    game: str | None
    price: int
    decided_at: float
    arrival: float
    unlock_at: int | None = None


@dataclass(frozen=True, slots=True)
class Sighting:
    """The item ``item_id`` seen at ``at``: listed at ``price``, or gone (``price`` is
    ``None``). ``exact``: the change happened at ``at`` (a feed event); otherwise the
    market was so at ``at`` (a look). ``source`` names what saw it (``search``...)."""

    item_id: str
    at: float
    price: int | None
    source: str
    exact: bool = False


@dataclass(frozen=True, slots=True)
class Verdict:
    judged: Judged
    reason: str
    """What the ledger records: ``bought: ...``, ``missed: gone: ...``, ``missed: price
    changed: ...``."""
    sighting: Sighting

    @property
    def bought(self) -> bool:
        return self.judged is Judged.BOUGHT


def judge(pending: Pending, sighting: Sighting) -> Verdict | None:
    """The verdict ``sighting`` gives ``pending``, or ``None`` when it settles nothing
    (see the module docstring)."""
    if sighting.item_id != pending.item_id or sighting.at <= pending.decided_at:
        return None
    after = sighting.at - pending.decided_at
    # a change told at the arrival itself came first; a look at the arrival saw it then
    late = sighting.at > pending.arrival if sighting.exact else sighting.at >= pending.arrival
    offered = pending.price
    where = f"the {sighting.source} {after:.1f}s after the decision"
    if sighting.price is None:
        if sighting.exact and late:
            return _bought(sighting, f"it left the market ({where}) after the request came")
        if sighting.exact:
            return _missed(
                Judged.GONE,
                sighting,
                f"{where} said it left the market before the request would have arrived"
                " (sold to another buyer or withdrawn)",
            )
        return _missed(
            Judged.GONE,
            sighting,
            f"{where} no longer shows it at or below {format_usd(offered)}"
            " (sold to another buyer, withdrawn or repriced)",
        )
    price = sighting.price
    if price <= offered:
        if late:
            return _bought(sighting, f"{where} still shows it at {format_usd(price)}")
        return None  # still there before the arrival: the next sighting decides
    if sighting.exact and late:
        return _bought(
            sighting, f"its price rose to {format_usd(price)} ({where}) after the request came"
        )
    return _missed(
        Judged.PRICE_CHANGED,
        sighting,
        f"{where} shows it at {format_usd(price)}, above the {format_usd(offered)} offered",
    )


def _bought(sighting: Sighting, why: str) -> Verdict:
    return Verdict(Judged.BOUGHT, f"bought: {why}", sighting)


def _missed(judged: Judged, sighting: Sighting, why: str) -> Verdict:
    return Verdict(judged, f"missed: {judged.value}: {why}", sighting)
