"""A request's address, made from the pieces the client quoted itself without parsing it.

httpx parses and checks every address it is handed (``httpx.URL(text)``): a pass in Python
over each character, and again over each ``%XX`` escape of the query. A search's address
carries 50 item names, ~2,500 characters with ~200 escapes, and that parse was most of the
cost of making a backtest's request. The query the client writes is ``urllib.parse``'s
form encoding of each name and value (``quote_plus``): letters, digits, ``_.~-``, ``+``
and ``%XX`` only, joined by ``=`` and ``&``, which httpx's parser keeps exactly as it is.
So the address of each endpoint's path is parsed once, and a request's address is that
one with the query set to the client's text.

Setting the query relies on how httpx 0.28 holds a URL (``URL._uri_reference``, a named
tuple with a ``query`` field), which is not its public API: :func:`_settable` checks once
per process that an address made so equals the one httpx parses from the same text, for
texts of every kind the client writes, and when it does not (another httpx), every
address is parsed as before. tests/client/test_urls.py holds the same check, so a httpx
that changes this fails the suite rather than only slowing the client down. A query of
any other form (not what the client writes) is always parsed.
"""

from __future__ import annotations

import functools
import re
import urllib.parse
from collections.abc import Sequence

import httpx

__all__ = ["Addresses", "query_text"]

_PLAIN_CHARS = re.compile(r"[A-Za-z0-9_.~+=&%-]*")
_ODD_ESCAPE = re.compile(r"%(?![0-9A-F]{2})")

_BOUND = 256
"""Addresses of paths kept at most (an endpoint's path rarely varies; cleared when full)."""


def _plain(query: str) -> bool:
    """Whether ``query`` is made only of ``quote_plus``'s output, ``=`` and ``&``: what
    httpx keeps as it is (each ``%`` starting an escape of two upper-case hex digits)."""
    return _PLAIN_CHARS.fullmatch(query) is not None and _ODD_ESCAPE.search(query) is None


@functools.lru_cache(maxsize=65_536)
def _field(name: str, value: str) -> str:
    return f"{urllib.parse.quote_plus(name)}={urllib.parse.quote_plus(value)}"


def query_text(params: Sequence[tuple[str, str]]) -> str:
    """``params`` form-encoded, as ``urllib.parse.urlencode`` encodes them (each field's
    encoding is kept: an engine asks for the same names again and again)."""
    return "&".join([_field(k, v) for k, v in params])


class Addresses:
    """The addresses of the paths under one base address (``base_text``, ending in
    ``/``, as httpx merges a path onto a client's base)."""

    __slots__ = ("_base_text", "_paths")

    def __init__(self, base_text: str) -> None:
        self._base_text = base_text
        self._paths: dict[str, httpx.URL] = {}

    def url(self, path: str, params: Sequence[tuple[str, str]] | None) -> httpx.URL:
        """The address of ``path`` with ``params`` (form-encoded): the one httpx makes of
        ``base_text + path + "?" + query``."""
        text = self._base_text + path.lstrip("/")
        base = self._paths.get(text)
        if base is None:
            if len(self._paths) >= _BOUND:
                self._paths.clear()
            base = self._paths[text] = httpx.URL(text)
        if not params:  # (a URL is immutable: one for every call without a query)
            return base
        query = query_text(params)
        if base.query or base.fragment or not _SETTABLE or not _plain(query):
            return httpx.URL(f"{text}?{query}")
        return _with_query(base, query)


def _with_query(url: httpx.URL, query: str) -> httpx.URL:
    """``url`` (without a query) with ``query``, which httpx would keep as it is, set
    without parsing (see the module's docstring)."""
    made = httpx.URL.__new__(httpx.URL)
    made._uri_reference = url._uri_reference._replace(query=query)
    return made


_SAMPLES = (
    ("http://127.0.0.1:8000/", "v2/search", [("name", "AK-47 | Redline (Field-Tested)")]),
    (
        "https://market.test/api/",
        "v1/items",
        [("game", "csgo"), ("name", "★ Karambit | Doppler (Factory New)"), ("x", "a&b=c+d%")],
    ),
    ("https://market.test/", "v2/search", [("name", "~tilde_under.dot-dash"), ("empty", "")]),
)


def _settable() -> bool:
    """Whether this httpx holds a URL so that :func:`_with_query` makes the very
    address it parses from the same text (its public view of it, every part)."""
    try:
        for base, path, params in _SAMPLES:
            text = base + path
            query = query_text(params)
            parsed = httpx.URL(f"{text}?{query}")
            made = _with_query(httpx.URL(text), query)
            if not _plain(query) or not _alike(made, parsed):
                return False
    except Exception:  # another httpx: parse every address
        return False
    return True


def _alike(a: httpx.URL, b: httpx.URL) -> bool:
    return (
        a == b
        and str(a) == str(b)
        and a.raw_path == b.raw_path
        and a.query == b.query
        and a.params == b.params
        and a.scheme == b.scheme
        and a.host == b.host
        and a.port == b.port
        and a.path == b.path
        and a.netloc == b.netloc
        and a.is_absolute_url == b.is_absolute_url
    )


_SETTABLE = _settable()
