"""Trade links: the partner and token of a full URL, or a clear error saying what is wrong."""

from __future__ import annotations

import pytest

from engine import InvalidRequest, InvalidTradeLink
from engine.client import TradeLink

GOOD = [
    (
        "https://platform.example/tradeoffer/new/?partner=123456&token=AbCdEfGh",
        ("123456", "AbCdEfGh"),
    ),
    ("http://x.example/tradeoffer/new/?token=a-b_c1D2&partner=1", ("1", "a-b_c1D2")),
    ("  https://x.example/t?partner=99&token=ZZZZZZZZ&extra=1  ", ("99", "ZZZZZZZZ")),
]


@pytest.mark.parametrize(("url", "parts"), GOOD)
def test_parse(url: str, parts: tuple[str, str]) -> None:
    link = TradeLink.parse(url)
    assert (link.partner, link.token) == parts


BAD = [
    ("not a url", "not an http(s) URL"),
    ("ftp://x.example/?partner=1&token=AbCdEfGh", "not an http(s) URL"),
    ("https://x.example/tradeoffer/new/?token=AbCdEfGh", "no partner"),
    ("https://x.example/tradeoffer/new/?partner=&token=AbCdEfGh", "partner is not a number"),
    ("https://x.example/tradeoffer/new/?partner=12a4&token=AbCdEfGh", "partner is not a number"),
    ("https://x.example/tradeoffer/new/?partner=-1&token=AbCdEfGh", "partner is not a number"),
    ("https://x.example/tradeoffer/new/?partner=1", "no token"),
    ("https://x.example/tradeoffer/new/?partner=1&token=AbCdEfG", "got 7 characters"),
    ("https://x.example/tradeoffer/new/?partner=1&token=AbCdEfGhI", "got 9 characters"),
    ("https://x.example/tradeoffer/new/?partner=1&token=AbCd%20fGh", "8 letters or digits"),
    ("https://x.example/?partner=1&partner=2&token=AbCdEfGh", "2 partner parameters"),
    ("", "not an http(s) URL"),
]


@pytest.mark.parametrize(("url", "says"), BAD)
def test_malformed_link_says_what_is_wrong(url: str, says: str) -> None:
    with pytest.raises(InvalidTradeLink) as info:
        TradeLink.parse(url)
    assert says in str(info.value)
    assert isinstance(info.value, InvalidRequest)
    assert "AbCdEfG" not in str(info.value)  # the message never quotes the token


def test_not_text() -> None:
    with pytest.raises(InvalidTradeLink, match="must be text"):
        TradeLink.parse(12345)  # type: ignore[arg-type]


def test_repr_masks_the_token() -> None:
    link = TradeLink.parse("https://x.example/?partner=1&token=AbCdEfGh")
    assert "AbCdEfGh" not in repr(link)
    assert "AbCdEfGh" not in str(link)
    assert "partner='1'" in repr(link)


def test_direct_construction_is_checked() -> None:
    with pytest.raises(InvalidTradeLink):
        TradeLink(partner="x", token="AbCdEfGh")
    with pytest.raises(InvalidTradeLink):
        TradeLink(partner="1", token="short")
