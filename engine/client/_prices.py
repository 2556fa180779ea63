"""``GET /v1/prices`` read as it streams in: :class:`PricesDecoder` (sans-I/O) and
:class:`PriceListStream` (what :meth:`MarketClient.prices` yields).

Decoding is per item: one odd row is set aside with its index and reason, counted in
``set_aside``, and never sinks the others. Only a broken envelope fails the call. The
client reports the set-aside rows like those of any other answer (logged once per kind,
``snipe_malformed_items_total{endpoint,field}``, ``snipe status``).
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable
from typing import Any

from pydantic import ValidationError

from .._errors import MalformedResponse, Unavailable
from ..models import PriceItem, SetAside
from ._core import SnapshotStream

__all__ = ["PriceListStream", "PricesDecoder"]

ENDPOINT = "GET /v1/prices"
_ITEMS_KEY = re.compile(rb'"items"\s*:\s*\[')
_SPACE = b" \t\r\n"


class PricesDecoder:
    """Sans-I/O decoder of the ``GET /v1/prices`` body: :meth:`feed` bytes as they arrive,
    get back the items complete so far (as :class:`PriceItem`); :meth:`close` at the end.

    Accepted shapes (docs/wire.md): ``{"success": true, "items": [...]}`` with the
    envelope's other keys before or after the list, and a bare ``[...]``. Each item is
    found with the C-level JSON decoder (``raw_decode``), one at a time, so memory holds
    one chunk plus one item, not the whole list. ``set_aside`` lists each item that was not
    a readable price row, with its index and reason.
    """

    def __init__(self) -> None:
        self._buffer = b""
        self._head = b""
        self._in_list = False
        self._done = False
        self._tail = b""
        self._index = 0
        self._decoder = json.JSONDecoder()
        self.set_aside: list[str] = []
        self.set_aside_items: list[SetAside] = []
        """The same rows as :class:`~engine.models.SetAside`, for the client to report."""
        self.items = 0

    def feed(self, chunk: bytes) -> list[PriceItem]:
        if self._done:
            self._tail += chunk
            return []
        self._buffer += chunk
        if not self._in_list and not self._find_list():
            return []
        return self._items(final=False)

    def close(self) -> list[PriceItem]:
        """The last items; raises :class:`MalformedResponse` when the envelope is broken or
        says ``success: false``."""
        out = self._items(final=True) if self._in_list and not self._done else []
        if not self._in_list:
            self._head += self._buffer
            self._fail_or_empty()
            return []
        if not self._done:
            raise MalformedResponse("the item list is cut off", endpoint=ENDPOINT)
        envelope_text = self._head + b"[]" + self._tail
        try:
            envelope = json.loads(envelope_text)
        except ValueError as exc:
            raise MalformedResponse(f"not JSON: {exc}", endpoint=ENDPOINT) from None
        if isinstance(envelope, dict) and envelope.get("success") is False:
            msg = envelope.get("msg") or envelope.get("error_msg") or "no reason given"
            raise Unavailable(f"the service refused: {msg}", endpoint=ENDPOINT)
        return out

    def _fail_or_empty(self) -> None:
        text = self._head.strip()
        try:
            envelope = json.loads(text) if text else None
        except ValueError:
            envelope = None
        if not isinstance(envelope, dict):
            raise MalformedResponse("not a price list (no `items` array)", endpoint=ENDPOINT)
        if envelope.get("success") is False:
            msg = envelope.get("msg") or envelope.get("error_msg") or "no reason given"
            raise Unavailable(f"the service refused: {msg}", endpoint=ENDPOINT)
        raise MalformedResponse("the answer has no `items` array", endpoint=ENDPOINT)

    def _find_list(self) -> bool:
        stripped = self._buffer.lstrip(_SPACE)
        if stripped[:1] == b"[":
            self._head, self._buffer = b"", stripped[1:]
            self._in_list = True
            return True
        match = _ITEMS_KEY.search(self._buffer)
        if match is None:
            return False
        self._head = self._buffer[: match.start()] + b'"items":'
        self._buffer = self._buffer[match.end() :]
        self._in_list = True
        return True

    def _items(self, *, final: bool) -> list[PriceItem]:
        out: list[PriceItem] = []
        buffer = self._buffer
        # raw_decode works on text: cut the bytes at a character boundary
        if not final:
            cut = len(buffer)
            while cut and (buffer[cut - 1] & 0xC0) == 0x80:
                cut -= 1
            if cut and buffer[cut - 1] >= 0xC0:
                cut -= 1
            text = buffer[:cut].decode("utf-8", errors="replace")
            rest = buffer[cut:]
        else:
            text, rest = buffer.decode("utf-8", errors="replace"), b""
        at = 0
        size = len(text)
        while True:
            while at < size and text[at] in " \t\r\n,":
                at += 1
            if at >= size:
                break
            if text[at] == "]":
                self._done = True
                self._tail = text[at + 1 :].encode() + rest
                self._buffer = b""
                return out
            try:
                value, end = self._decoder.raw_decode(text, at)
            except ValueError:
                if not final:
                    break  # the item is not complete yet
                raise MalformedResponse(
                    f"item {self._index} is not JSON", endpoint=ENDPOINT
                ) from None
            if end >= size and not final and not isinstance(value, dict | list | str):
                break  # a number may go on in the next chunk
            at = end
            item = self._item(value)
            if item is not None:
                out.append(item)
        self._buffer = text[at:].encode() + rest
        return out

    def _item(self, value: Any) -> PriceItem | None:
        index = self._index
        self._index += 1
        if not isinstance(value, dict):
            self.set_aside.append(f"items[{index}]: not an object")
            self.set_aside_items.append(SetAside(f"items.{index}", "(item)", "not an object"))
            return None
        try:
            item = PriceItem.model_validate(value)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "item"
            self.set_aside.append(f"items[{index}].{where}: {first['msg']}")
            name = value.get("name")
            key = f"name={name[:80]}" if isinstance(name, str) and name else None
            self.set_aside_items.append(SetAside(f"items.{index}", where, first["msg"], key))
            return None
        self.items += 1
        return item


class PriceListStream:
    """The items of ``GET /v1/prices`` as they arrive::

        async with client.prices() as stream:
            async for item in stream:  # PriceItem
                ...
        stream.set_aside  # ["items[17].min: not a number: 'abc'", ...]

    A broken envelope (not JSON, no ``items`` array, cut off, ``success: false``) raises
    :class:`~engine.Unavailable` (or its :class:`~engine.MalformedResponse`) at the end.
    """

    def __init__(
        self,
        stream: SnapshotStream,
        *,
        on_set_aside: Callable[[tuple[SetAside, ...]], None] | None = None,
    ) -> None:
        self._stream = stream
        self._decoder = PricesDecoder()
        self._on_set_aside = on_set_aside

    @property
    def set_aside(self) -> list[str]:
        return self._decoder.set_aside

    @property
    def bytes_downloaded(self) -> int:
        """Bytes of the answer received so far, as sent (gzip when the service sends it)."""
        return self._stream.bytes_downloaded

    def __aiter__(self) -> AsyncIterator[PriceItem]:
        return self._items()

    async def _items(self) -> AsyncIterator[PriceItem]:
        decoder = self._decoder
        async for chunk in self._stream:
            for item in decoder.feed(chunk):
                yield item
        for item in decoder.close():
            yield item
        if self._on_set_aside is not None and decoder.set_aside_items:
            self._on_set_aside(tuple(decoder.set_aside_items))
