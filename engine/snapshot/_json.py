"""The JSON form of the prices snapshot (interface.md 2.13), into the same compact form.

Smaller markets and the sandbox answer with JSON: ``{"success": true, "timestamp": ...,
"items": [{"item_id": "...", "price": "27867", "name": "..."}]}``. It is small enough to be
read whole, and is checked item by item so an error can name ``items[i].field``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from ._origin import Origin
from ._store import Snapshot, _Builder, _parse_instant

__all__ = ["parse_json_snapshot"]


def parse_json_snapshot(
    body: bytes | str | Mapping[str, Any],
    *,
    source: str | os.PathLike[str] | None = None,
) -> Snapshot:
    """Parse a JSON snapshot answer (raw text or already decoded).

    ``success: false`` is a :class:`~engine.Refused` from the service (a recorded file: a
    :class:`~engine.ConfigError`); anything not shaped like a snapshot is a
    :class:`~engine.MalformedResponse` (file: ``ConfigError``). ``item_id`` may be a number
    or text; ``price`` a number or a numeric string, empty or ``null`` meaning unknown.
    """
    origin = Origin(source)
    data = _decode(body, origin)
    if data.get("success") is False:
        msg = data.get("msg")
        origin.refused(msg if isinstance(msg, str) else None)
    items = data.get("items")
    if not isinstance(items, list):
        origin.malformed("the snapshot has no items list", field="items")
    hold = any(
        isinstance(item, Mapping) and ("unlock_at" in item or "send_until" in item)
        for item in items
    )
    ids, names, prices, unlock, send = [], [], [], [], []
    for i, item in enumerate(items):
        if not isinstance(item, Mapping):
            origin.malformed("an item is not an object", field=f"items[{i}]")
        ids.append(_item_id(item.get("item_id"), origin, f"items[{i}].item_id"))
        names.append(_text(item.get("name"), origin, f"items[{i}].name"))
        prices.append(_price(item.get("price"), origin, f"items[{i}].price"))
        if hold:
            unlock.append(_instant(item.get("unlock_at"), origin, f"items[{i}].unlock_at"))
            send.append(_instant(item.get("send_until"), origin, f"items[{i}].send_until"))
    builder = _Builder(origin, hold=hold)
    if ids:
        builder.add(ids, names, prices, unlock or None, send or None, first_row=0)
    timestamp = _instant(data.get("timestamp"), origin, "timestamp")
    return builder.build(_parse_instant(timestamp) if timestamp else None)


def _decode(body: bytes | str | Mapping[str, Any], origin: Origin) -> Mapping[str, Any]:
    if isinstance(body, Mapping):
        return body
    try:
        data = json.loads(body)
    except ValueError as exc:
        origin.malformed(f"the snapshot is not JSON ({exc})")
    if not isinstance(data, dict):
        origin.malformed(f"the snapshot is a JSON {type(data).__name__}, not an object")
    return data


def _item_id(value: Any, origin: Origin, field: str) -> bytes:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return str(value).encode()
    if isinstance(value, str) and value:
        return value.encode()
    origin.malformed(f"item_id {value!r} is not an id", field=field)


def _text(value: Any, origin: Origin, field: str) -> bytes:
    if isinstance(value, str):
        return value.encode()
    origin.malformed(f"name {value!r} is not text", field=field)


def _price(value: Any, origin: Origin, field: str) -> bytes:
    if value is None or value == "":
        return b""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return str(value).encode()
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return value.encode()
    origin.malformed(f"price {value!r} is not a whole number of USD x 1000", field=field)


def _instant(value: Any, origin: Origin, field: str) -> bytes:
    if value is None or value == "":
        return b""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(int(value)).encode()
    if isinstance(value, str) and _parse_instant(value.encode()) is not None:
        return value.encode()
    origin.malformed(f"{value!r} is neither epoch seconds nor an RFC 3339 time", field=field)
