"""The valuation core: purchases + a reference lookup + sales -> a :class:`Portfolio`.

Sans-I/O and synchronous: the CLI feeds it a ledger read from disk and the reference file
beside it, the backtest report the replay's in-memory ledger and reference book; both get
the same figures from the same function, :func:`value_portfolio`.

**What is held.** A purchase whose money certainly left and did not come back: BOUGHT (the
trade is under way), RESERVED (trade-locked, waiting for its lock to end) and COMPLETED.
INTENT/UNKNOWN may not have happened (they are counted by the budgets, not here);
FAILED, RELEASED and REFUNDED are not ours. A held purchase with a known sale is *sold*
(its result is realised) and no longer a holding.

**Cost.** What the service charged; the ceiling sent with the request while the charge is
not known (the row says so).

**Value.** The reference named by ``portfolio.value_by`` for the item's (base name, phase),
if it passes the guards (``min_observations`` for ``market.*``, which count observations;
``max_age`` for every source). Otherwise the holding has *no value*: it is listed with the
reason and left out of every value and margin total (its cost is shown apart). A Doppler
phase is only valued by that phase's reference, never by the name over all phases.

**Fees.** ``sale_fee`` in basis points of the gross price; the fee of one sale is rounded
*up* to the unit (USD x 1000), so a rounded figure never flatters the trader. Without a
fee set, values are before any fee and the portfolio says so.

**Groups.** By the purchase: its item (market name), rule, and the UTC day and ISO week
it was bought; a sale's realised result counts in its purchase's groups.

**Liquidity.** A holding whose ``unlock_at`` is after ``now`` is *illiquid* (trade-locked:
it cannot be sold yet); RESERVED without a known unlock time is illiquid too. Illiquid
holdings are valued like the others and their value is also totalled apart.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from .._errors import ConfigError
from .._money import Money
from ..ledger import SPENT_STATES, Purchase, PurchaseState
from ..rules import PortfolioSettings, format_duration, format_percent, split_name

__all__ = [
    "GROUPINGS",
    "Group",
    "Holding",
    "Lookup",
    "Portfolio",
    "Realised",
    "Reference",
    "Sale",
    "fee_for",
    "group_key",
    "value_portfolio",
]

BASIS_POINTS = 10_000

Grouping = Literal["item", "rule", "day", "week"]
GROUPINGS: tuple[Grouping, ...] = ("item", "rule", "day", "week")


@dataclass(frozen=True, slots=True)
class Reference:
    """One source's price for an item: USD x 1000, its observation count (``None`` for a
    price list, which does not count them) and when its latest data is from."""

    source: str
    price: Money
    observations: int | None
    as_of: float | None


Lookup = Callable[[str, str | None], Reference | None]
"""(base name, phase or ``None``) -> the valuation source's reference, or ``None``."""


@dataclass(frozen=True, slots=True)
class Sale:
    """A sale of a purchase made elsewhere (or on the service): the gross ``price``, when,
    and where it was read (``file:line``). ``fee`` overrides the configured fee."""

    project_id: str
    price: Money
    sold_at: float
    origin: str
    fee: Money | None = None
    channel: str | None = None


def fee_for(gross: Money, fee_bps: int | None) -> Money:
    """The fee of selling at ``gross``: ``fee_bps`` basis points, rounded up to the unit
    (against the trader). ``None`` (no fee set) is no fee."""
    if not fee_bps or gross <= 0:
        return 0
    return -(-gross * fee_bps // BASIS_POINTS)


@dataclass(frozen=True, slots=True)
class Holding:
    """One held purchase, valued."""

    purchase: Purchase
    base_name: str
    phase: str | None
    cost: Money
    cost_is_ceiling: bool
    illiquid: bool
    reference: Reference | None
    """The reference used (``None``: no value)."""
    no_value: str | None
    """Why there is no value (``None`` when valued)."""
    gross: Money | None
    fee: Money | None
    value: Money | None
    """``gross - fee``: what selling at the reference would bring."""

    @property
    def margin(self) -> Money | None:
        return None if self.value is None else self.value - self.cost

    def to_json(self, now: float) -> dict[str, Any]:
        p, ref = self.purchase, self.reference
        return {
            "project_id": p.project_id,
            "item_id": p.item_id,
            "name": p.name,
            "phase": self.phase,
            "rule": p.rule,
            "state": p.state.value,
            "bought_at": p.created_at,
            "cost": self.cost,
            "cost_is_ceiling": self.cost_is_ceiling,
            "illiquid": self.illiquid,
            "unlock_at": p.unlock_at,
            "reference": None
            if ref is None
            else {
                "source": ref.source,
                "price": ref.price,
                "observations": ref.observations,
                "age_seconds": None if ref.as_of is None else round(now - ref.as_of, 3),
            },
            "no_value": self.no_value,
            "gross": self.gross,
            "fee": self.fee,
            "value": self.value,
            "margin": self.margin,
        }


@dataclass(frozen=True, slots=True)
class Realised:
    """One sold purchase: what it cost, what it sold for, the fee, the result."""

    purchase: Purchase
    sale: Sale
    cost: Money
    fee: Money

    @property
    def net(self) -> Money:
        return self.sale.price - self.fee

    @property
    def result(self) -> Money:
        return self.net - self.cost

    def to_json(self) -> dict[str, Any]:
        return {
            "project_id": self.purchase.project_id,
            "name": self.purchase.name,
            "rule": self.purchase.rule,
            "cost": self.cost,
            "sold_at": self.sale.sold_at,
            "price": self.sale.price,
            "fee": self.fee,
            "net": self.net,
            "realised": self.result,
            "channel": self.sale.channel,
            "origin": self.sale.origin,
        }


@dataclass(slots=True)
class Group:
    """The figures of one item, rule, day or week."""

    key: str
    holdings: int = 0
    cost: Money = 0
    valued: int = 0
    valued_cost: Money = 0
    value: Money = 0
    unvalued: int = 0
    unvalued_cost: Money = 0
    illiquid: int = 0
    illiquid_value: Money = 0
    sold: int = 0
    realised: Money = 0

    @property
    def margin(self) -> Money:
        """Unrealised margin over the valued holdings only."""
        return self.value - self.valued_cost

    def add_holding(self, h: Holding) -> None:
        self.holdings += 1
        self.cost += h.cost
        if h.value is None:
            self.unvalued += 1
            self.unvalued_cost += h.cost
        else:
            self.valued += 1
            self.valued_cost += h.cost
            self.value += h.value
        if h.illiquid:
            self.illiquid += 1
            self.illiquid_value += h.value or 0

    def add_sale(self, r: Realised) -> None:
        self.sold += 1
        self.realised += r.result

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "holdings": self.holdings,
            "cost": self.cost,
            "valued": self.valued,
            "valued_cost": self.valued_cost,
            "value": self.value,
            "margin": self.margin,
            "unvalued": self.unvalued,
            "unvalued_cost": self.unvalued_cost,
            "illiquid": self.illiquid,
            "illiquid_value": self.illiquid_value,
            "sold": self.sold,
            "realised": self.realised,
        }


@dataclass(frozen=True, slots=True)
class Portfolio:
    """Everything ``snipe portfolio`` shows; build with :func:`value_portfolio`."""

    now: float
    settings: PortfolioSettings
    holdings: tuple[Holding, ...]
    realised: tuple[Realised, ...]
    totals: Group
    by: Mapping[Grouping, tuple[Group, ...]]
    notes: tuple[str, ...] = field(default=())

    @property
    def fee_text(self) -> str:
        """The fee used, as the output states it."""
        fee = self.settings.sale_fee
        channel = f" ({self.settings.channel})" if self.settings.channel else ""
        if fee is None:
            return "no sale fee set (portfolio.sale_fee): values are before any fee"
        return f"sale fee {format_percent(fee)}{channel}, rounded up to $0.001 per sale"

    def to_json(self) -> dict[str, Any]:
        s = self.settings
        return {
            "money_unit": "USD x 1000",
            "now": self.now,
            "settings": {
                "value_by": s.value_by,
                "min_observations": s.min_observations,
                "max_age_seconds": s.max_age,
                "sale_fee_bps": s.sale_fee,
                "channel": s.channel,
            },
            "fee": self.fee_text,
            "totals": self.totals.to_json(),
            "holdings": [h.to_json(self.now) for h in self.holdings],
            "realised": [r.to_json() for r in self.realised],
            "by": {k: [g.to_json() for g in groups] for k, groups in self.by.items()},
            "notes": list(self.notes),
        }


def group_key(purchase: Purchase, grouping: Grouping) -> str:
    """The group a purchase falls in: its name, rule, UTC day (``2026-11-24``) or ISO week
    (``2026-W48``) of the purchase."""
    if grouping == "item":
        return purchase.name
    if grouping == "rule":
        return purchase.rule
    day = dt.datetime.fromtimestamp(purchase.created_at, dt.UTC).date()
    if grouping == "day":
        return day.isoformat()
    year, week, _ = day.isocalendar()
    return f"{year}-W{week:02d}"


def _guard(ref: Reference, settings: PortfolioSettings, now: float) -> str | None:
    if ref.price <= 0:
        return f"{ref.source} has no price"
    if ref.observations is not None and ref.observations < settings.min_observations:
        return (
            f"{ref.source} fails min_observations {settings.min_observations}:"
            f" {ref.observations} observations"
        )
    if ref.as_of is None:
        return f"{ref.source} fails max_age: its age is unknown"
    age = now - ref.as_of
    if age > settings.max_age:
        return (
            f"{ref.source} fails max_age {format_duration(settings.max_age)}:"
            f" {format_duration(age)} old"
        )
    return None


def _holding(
    purchase: Purchase, lookup: Lookup, settings: PortfolioSettings, now: float
) -> Holding:
    parts = split_name(purchase.name)
    base, phase = parts.base_name, parts.phase
    locked = purchase.unlock_at is not None and purchase.unlock_at > now
    illiquid = locked or (purchase.state is PurchaseState.RESERVED and purchase.unlock_at is None)
    ref = lookup(base, phase)
    reason = f"no {settings.value_by} reference" if ref is None else _guard(ref, settings, now)
    gross = fee = value = None
    if ref is not None and reason is None:
        gross = ref.price
        fee = fee_for(gross, settings.sale_fee)
        value = gross - fee
    return Holding(
        purchase=purchase,
        base_name=base,
        phase=phase,
        cost=purchase.amount,
        cost_is_ceiling=purchase.charged_price is None,
        illiquid=illiquid,
        reference=ref,
        no_value=reason,
        gross=gross,
        fee=fee,
        value=value,
    )


def _match_sales(
    held: Mapping[str, Purchase], every: Mapping[str, Purchase], sales: Iterable[Sale]
) -> dict[str, Sale]:
    """project id -> its sale; a sale of an unknown, unheld or twice-sold purchase is bad
    input, named by its place."""
    out: dict[str, Sale] = {}
    for sale in sales:
        if sale.project_id not in every:
            raise ConfigError(
                f"sale of {sale.project_id!r}: no such purchase in the ledger",
                location=sale.origin,
            )
        if sale.project_id not in held:
            state = every[sale.project_id].state.value
            raise ConfigError(
                f"sale of {sale.project_id!r}: the purchase is {state}, not held",
                location=sale.origin,
            )
        if sale.sold_at < held[sale.project_id].created_at:
            raise ConfigError(
                f"sale of {sale.project_id!r} is dated before the purchase was made",
                location=sale.origin,
            )
        first = out.get(sale.project_id)
        if first is not None:
            raise ConfigError(
                f"sale of {sale.project_id!r} is also given at {first.origin}",
                location=sale.origin,
            )
        out[sale.project_id] = sale
    return out


def value_portfolio(
    purchases: Sequence[Purchase],
    lookup: Lookup,
    settings: PortfolioSettings,
    *,
    now: float,
    sales: Iterable[Sale] = (),
) -> Portfolio:
    """Value ``purchases`` at ``now``; see the module docstring. Raises
    :class:`ConfigError` (naming the sale's place) for a sale that matches no held
    purchase or is given twice."""
    every = {p.project_id: p for p in purchases}
    held = {p.project_id: p for p in purchases if p.state in SPENT_STATES}
    sold = _match_sales(held, every, sales)
    holdings: list[Holding] = []
    realised: list[Realised] = []
    for purchase in held.values():
        sale = sold.get(purchase.project_id)
        if sale is None:
            holdings.append(_holding(purchase, lookup, settings, now))
        else:
            fee = sale.fee if sale.fee is not None else fee_for(sale.price, settings.sale_fee)
            realised.append(Realised(purchase, sale, purchase.amount, fee))
    totals = Group("all")
    groups: dict[Grouping, dict[str, Group]] = {g: {} for g in GROUPINGS}
    for h in holdings:
        totals.add_holding(h)
        for g in GROUPINGS:
            key = group_key(h.purchase, g)
            groups[g].setdefault(key, Group(key)).add_holding(h)
    for r in realised:
        totals.add_sale(r)
        for g in GROUPINGS:
            key = group_key(r.purchase, g)
            groups[g].setdefault(key, Group(key)).add_sale(r)
    portfolio = Portfolio(
        now=now,
        settings=settings,
        holdings=tuple(holdings),
        realised=tuple(realised),
        totals=totals,
        by={g: tuple(groups[g][k] for k in sorted(groups[g])) for g in GROUPINGS},
    )
    return _with_notes(portfolio)


def _with_notes(p: Portfolio) -> Portfolio:
    notes = [p.fee_text]
    t = p.totals
    if t.unvalued:
        notes.append(
            f"{t.unvalued} holding(s) have no value ({p.settings.value_by} missing or failing"
            " its guards) and are left out of the value and margin totals"
        )
    if t.illiquid:
        notes.append(f"{t.illiquid} holding(s) are trade-locked: illiquid until they unlock")
    ceiling = sum(1 for h in p.holdings if h.cost_is_ceiling)
    if ceiling:
        notes.append(f"{ceiling} holding(s) cost the ceiling sent (the charge is not known yet)")
    return Portfolio(p.now, p.settings, p.holdings, p.realised, p.totals, p.by, tuple(notes))
