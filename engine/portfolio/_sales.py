"""Sales made elsewhere, as a CSV file: ``snipe portfolio LEDGER --sales FILE``.

The file is read on every run and nothing is stored (the ledger stays read-only). A header
row names the columns, in any order:

- ``project_id`` (required): the purchase sold, as ``snipe ledger`` shows it;
- ``price`` (required): the gross sale price in dollars (``12.50``, at most 3 decimals);
- ``sold_at`` (required): an ISO 8601 date or date-time (``2026-11-24``,
  ``2026-11-24T15:30:00Z``; UTC when no zone is written) or epoch seconds;
- ``fee`` (optional): the fee actually taken, in dollars; empty or absent: the configured
  ``portfolio.sale_fee`` applies;
- ``channel`` (optional): where it was sold, a label.

A bad row (a missing or bad value, an unknown column) is an error naming ``file:line``;
a row naming a purchase the ledger does not hold is named the same way by the valuation.
"""

from __future__ import annotations

import csv
import datetime as dt
import io

from .._errors import ConfigError
from .._money import parse_usd
from ._value import Sale

__all__ = ["SALE_COLUMNS", "parse_sales"]

SALE_COLUMNS = ("project_id", "price", "sold_at", "fee", "channel")
_REQUIRED = ("project_id", "price", "sold_at")


def _when(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        pass
    value = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    return value.timestamp()


def parse_sales(text: str, *, origin: str) -> list[Sale]:
    """The sales of a CSV text read from ``origin``; raises :class:`ConfigError` naming
    ``origin:line`` at the first bad row."""
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, None)
    if header is None:
        raise ConfigError("empty file: expected a header row", location=f"{origin}:1")
    columns = [c.strip().lower() for c in header]
    for column in columns:
        if column not in SALE_COLUMNS:
            raise ConfigError(
                f"unknown column {column!r}; the columns are {', '.join(SALE_COLUMNS)}",
                location=f"{origin}:1",
            )
    for column in _REQUIRED:
        if column not in columns:
            raise ConfigError(f"the column {column!r} is missing", location=f"{origin}:1")
    sales = []
    for row in reader:
        line = reader.line_num
        if not any(cell.strip() for cell in row):
            continue
        where = f"{origin}:{line}"
        if len(row) != len(columns):
            raise ConfigError(f"expected {len(columns)} cells, got {len(row)}", location=where)
        cells = {c: v.strip() for c, v in zip(columns, row, strict=True)}
        sales.append(_sale(cells, where))
    return sales


def _sale(cells: dict[str, str], where: str) -> Sale:
    for column in _REQUIRED:
        if not cells.get(column):
            raise ConfigError(f"{column} is empty", location=where)
    try:
        price = parse_usd(cells["price"])
        fee = parse_usd(cells["fee"]) if cells.get("fee") else None
    except ValueError as exc:
        raise ConfigError(f"bad dollar amount: {exc}", location=where) from None
    try:
        sold_at = _when(cells["sold_at"])
    except ValueError:
        raise ConfigError(
            f"sold_at {cells['sold_at']!r} is not an ISO 8601 date or time, nor epoch seconds",
            location=where,
        ) from None
    if fee is not None and fee > price:
        raise ConfigError("the fee is above the price", location=where)
    return Sale(
        project_id=cells["project_id"],
        price=price,
        sold_at=sold_at,
        origin=where,
        fee=fee,
        channel=cells.get("channel") or None,
    )
