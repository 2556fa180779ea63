"""Price lists: ``GET /v1/prices`` decoded as it streams in, and ``file``/``url`` lists.

Both end as ``{(base name, phase): price}`` (USD x 1000), a phase written into a name taken
out of it, so a list keyed ``"★ Karambit | Doppler Ruby (Factory New)"`` serves a listing
of ``"★ Karambit | Doppler (Factory New)"`` with ``phase: Ruby``.

Decoding is per item, as everywhere in snipe: one odd row is set aside with its place and
reason, counted, and never sinks the others. The call fails (:class:`MalformedResponse`
for the service, :class:`ConfigError` for a list file) only when the whole is unreadable.
"""

from __future__ import annotations

import codecs
import csv
import io
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any, Literal

from .._errors import ConfigError
from .._money import Money
from ..models import PriceItem
from ..rules import split_name
from ._book import MarketKey

__all__ = [
    "ListRows",
    "parse_price_list",
    "service_tables",
]


@dataclass
class ListRows:
    """Rows read from a list: the prices, and each row set aside (``where: why``)."""

    prices: dict[MarketKey, Money] = field(default_factory=dict)
    set_aside: list[str] = field(default_factory=list)


def _key(name: str, phase: str | None = None) -> MarketKey:
    parts = split_name(name)
    return (parts.base_name, phase or parts.phase)


def service_tables(items: Iterable[PriceItem]) -> dict[str, dict[MarketKey, Money]]:
    """The ``service.platform_price`` and ``service.min`` tables of a price list (a zero or
    absent price is no price)."""
    platform: dict[MarketKey, Money] = {}
    lowest: dict[MarketKey, Money] = {}
    for item in items:
        key = _key(item.name)
        if item.platform_price:
            platform[key] = item.platform_price
        if item.min:
            lowest[key] = item.min
    return {"service.platform_price": platform, "service.min": lowest}


Unit = Literal["usd", "usd1000"]


def _money(value: Any, unit: Unit) -> Money:
    if isinstance(value, bool) or value is None or value == "":
        raise ValueError("no price")
    try:
        number = Decimal(str(value).strip().lstrip("$"))
    except InvalidOperation:
        raise ValueError(f"price {str(value)[:40]!r} is not a number") from None
    if not number.is_finite() or number <= 0:
        raise ValueError(f"price {value!r} is not a positive number")
    scaled = number * 1000 if unit == "usd" else number
    return int(scaled.to_integral_value())


def parse_price_list(
    data: bytes, *, origin: str, fmt: Literal["json", "csv"] | None = None, unit: Unit = "usd"
) -> ListRows:
    """A price list: JSON ``{name: price}`` or ``[{market_hash_name, price, phase?}]``
    (``{"items": [...]}`` too), or CSV with a header naming ``market_hash_name`` (or
    ``name``), ``price`` and optionally ``phase``. ``unit`` says what the prices are:
    dollars (``"12.50"``, the default) or USD x 1000. ``fmt`` ``None``: JSON when the text
    starts with ``{`` or ``[``. Rows that cannot be read are set aside, each with its place;
    an unreadable whole raises :class:`ConfigError` naming ``origin``."""
    try:
        text = codecs.decode(data, "utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"the price list is not UTF-8 text ({exc})", location=origin) from None
    if fmt is None:
        fmt = "json" if text.lstrip()[:1] in ("{", "[") else "csv"
    if fmt == "json":
        return _json_list(text, origin, unit)
    return _csv_list(text, origin, unit)


def _json_list(text: str, origin: str, unit: Unit) -> ListRows:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"the price list is not JSON: {exc}", location=origin) from None
    if isinstance(data, dict) and isinstance(data.get("items"), list):
        data = data["items"]
    rows = ListRows()
    if isinstance(data, Mapping):
        for name, value in data.items():
            _add(rows, f"{origin}: {name!r}", str(name), None, value, unit)
        return rows
    if not isinstance(data, list):
        raise ConfigError(
            "the price list must be an object {name: price} or a list of rows", location=origin
        )
    for index, row in enumerate(data):
        where = f"{origin}: row {index}"
        if not isinstance(row, Mapping):
            rows.set_aside.append(f"{where}: not an object")
            continue
        name = row.get("market_hash_name", row.get("name"))
        if not isinstance(name, str) or not name.strip():
            rows.set_aside.append(f"{where}: no market_hash_name")
            continue
        phase = row.get("phase")
        _add(rows, where, name, phase if isinstance(phase, str) else None, row.get("price"), unit)
    return rows


def _csv_list(text: str, origin: str, unit: Unit) -> ListRows:
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if header is None:
        raise ConfigError("the price list is empty", location=origin)
    columns = {h.strip().lower(): i for i, h in enumerate(header)}
    name_at = columns.get("market_hash_name", columns.get("name"))
    price_at = columns.get("price")
    if name_at is None or price_at is None:
        raise ConfigError(
            f"the CSV header must name market_hash_name (or name) and price, not {header!r}",
            location=f"{origin}:1",
        )
    phase_at = columns.get("phase")
    rows = ListRows()
    for line, record in enumerate(reader, start=2):
        if not record:
            continue
        where = f"{origin}:{line}"
        if len(record) < len(header):
            rows.set_aside.append(f"{where}: {len(record)} cells, the header has {len(header)}")
            continue
        phase = record[phase_at].strip() if phase_at is not None else None
        _add(rows, where, record[name_at], phase or None, record[price_at], unit)
    return rows


def _add(rows: ListRows, where: str, name: str, phase: str | None, value: Any, unit: Unit) -> None:
    name = name.strip()
    if not name:
        rows.set_aside.append(f"{where}: empty name")
        return
    try:
        price = _money(value, unit)
    except ValueError as exc:
        rows.set_aside.append(f"{where}: {exc}")
        return
    rows.prices[_key(name, phase)] = price
