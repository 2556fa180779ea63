"""A request's address made without parsing its query (engine/client/_urls.py) is the one
httpx parses from the same text, and this httpx still lets it be made so."""

from __future__ import annotations

import urllib.parse

import httpx
import pytest

from engine.client import _urls
from engine.client._urls import Addresses

NAMES = [
    "AK-47 | Redline (Field-Tested)",
    "★ Karambit | Doppler (Factory New)",
    "StatTrak™ M4A4 | 龍王 (Dragon King) (Minimal Wear)",
    "a+b&c=d%20e#f?g",
    "  spaces  ",
    "",
    "~tilde_under.dot-dash",
    "Sticker | Team Spirit (Holo) | Paris 2023",
]

CASES = [
    ("http://127.0.0.1:8000/", "/v2/search", [("name", n) for n in NAMES] + [("game", "csgo")]),
    ("https://market.test/api/", "v2/search", [("name", NAMES[0])]),
    ("https://market.test/", "/v1/items", [("limit", "100"), ("cursor", "eyJ4IjoxfQ==")]),
    ("https://market.test/", "/v1/user", None),
    ("https://market.test/", "/v1/user", []),
]


def test_this_httpx_lets_the_query_be_set() -> None:
    # Fails when a httpx upgrade changes how a URL is held: then every address is parsed
    # (correct, only slower) and _urls.py must be looked at again.
    assert _urls._SETTABLE


@pytest.mark.parametrize(("base", "path", "params"), CASES)
def test_the_address_is_the_one_httpx_parses(
    base: str, path: str, params: list[tuple[str, str]] | None
) -> None:
    made = Addresses(base).url(path, params)
    text = base + path.lstrip("/")
    if params:
        text += "?" + urllib.parse.urlencode(params)
    parsed = httpx.URL(text)
    assert made == parsed
    assert str(made) == str(parsed)
    assert made.raw_path == parsed.raw_path
    assert made.params == parsed.params
    assert list(made.params.multi_items()) == list(params or [])
    assert (made.scheme, made.host, made.port, made.path) == (
        parsed.scheme,
        parsed.host,
        parsed.port,
        parsed.path,
    )


def test_an_address_asked_again_is_made_again_alike() -> None:
    addresses = Addresses("https://market.test/")
    first = addresses.url("/v2/search", [("name", "a b")])
    again = addresses.url("/v2/search", [("name", "c d")])
    assert str(first) == "https://market.test/v2/search?name=a+b"
    assert str(again) == "https://market.test/v2/search?name=c+d"


@pytest.mark.parametrize(
    "query", ["a=b c", "a=b#c", "a=%zz", "a=%2f", "a=%2", "a=%", "a=\u00e9", "a=b\n", "a=<"]
)
def test_only_the_client_s_own_form_is_set_unparsed(query: str) -> None:
    assert not _urls._plain(query)


def test_the_client_s_own_form_is_plain() -> None:
    assert _urls._plain(_urls.query_text([("name", n) for n in NAMES]))


def test_a_query_of_another_form_is_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_urls, "query_text", lambda params: "name=a b")  # not the client's
    made = Addresses("https://market.test/").url("/v2/search", [("name", "a b")])
    assert str(made) == str(httpx.URL("https://market.test/v2/search?name=a b"))
    assert str(made) == "https://market.test/v2/search?name=a%20b"
