"""Portfolio and P&L: what was bought, what it is worth, what came of it.

- :func:`value_portfolio`: held purchases + a reference lookup + known sales ->
  :class:`Portfolio` (sans-I/O; the same code for ``snipe portfolio`` and the backtest
  report's "Portfolio at the end");
- :func:`hub_lookup`: the lookup of one source in a :class:`~engine.reference.ReferenceHub`;
- :func:`value_ledger`: the portfolio of an open ledger against a hub (a running engine's);
- :func:`parse_sales`: sales made elsewhere, from a CSV file.
"""

from ._references import hub_lookup, value_ledger
from ._sales import SALE_COLUMNS, parse_sales
from ._value import (
    GROUPINGS,
    Group,
    Holding,
    Lookup,
    Portfolio,
    Realised,
    Reference,
    Sale,
    fee_for,
    group_key,
    value_portfolio,
)

__all__ = [
    "GROUPINGS",
    "SALE_COLUMNS",
    "Group",
    "Holding",
    "Lookup",
    "Portfolio",
    "Realised",
    "Reference",
    "Sale",
    "fee_for",
    "group_key",
    "hub_lookup",
    "parse_sales",
    "value_ledger",
    "value_portfolio",
]
