"""Pure pieces of the client, tested synchronously: refusal reasons, 429 waits, secrets,
trade-link round trips."""

from __future__ import annotations

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine import PurchaseRefusal
from engine.client import Secret, TradeLink, classify_refusal
from engine.client._responses import retry_after_seconds


@pytest.mark.parametrize(
    ("msg", "new_price", "reason"),
    [
        ("System busy", None, PurchaseRefusal.SYSTEM_BUSY),
        ("  SYSTEM   BUSY ", None, PurchaseRefusal.SYSTEM_BUSY),
        ("buy_csgo", None, PurchaseRefusal.GAME_DISABLED),
        ("buy_dota2", None, PurchaseRefusal.GAME_DISABLED),
        ("Buying is disabled for this game", None, PurchaseRefusal.GAME_DISABLED),
        ("Item is trade locked, use allow_trade_locked=1", None, PurchaseRefusal.TRADE_LOCKED),
        (
            "trade-locked listings are disabled without allow_trade_locked",
            None,
            PurchaseRefusal.TRADE_LOCKED,
        ),
        ("Item sold", None, PurchaseRefusal.ITEM_SOLD),
        ("Item not found", None, PurchaseRefusal.ITEM_SOLD),
        ("Price changed", 5100, PurchaseRefusal.PRICE_CHANGED),
        (None, 5100, PurchaseRefusal.PRICE_CHANGED),
        ("", 5100, PurchaseRefusal.PRICE_CHANGED),
        ("Insufficient balance", None, PurchaseRefusal.INSUFFICIENT_BALANCE),
        ("not enough money", None, PurchaseRefusal.INSUFFICIENT_BALANCE),
        ("Your balance is too low", None, PurchaseRefusal.INSUFFICIENT_BALANCE),
        ("Invalid trade link: partner must be digits", None, PurchaseRefusal.INVALID_TRADE_LINK),
        ("projectId already exists", None, PurchaseRefusal.OTHER),
        ("Unexpected", None, PurchaseRefusal.OTHER),
        (None, None, PurchaseRefusal.OTHER),
    ],
)
def test_classify_refusal(msg: str | None, new_price: int | None, reason: PurchaseRefusal) -> None:
    assert classify_refusal(msg, new_price) is reason


@pytest.mark.parametrize(
    ("response", "wait"),
    [
        (httpx.Response(429, json={"msBeforeNext": 0}), 0.0),
        (httpx.Response(429, json={"msBeforeNext": -5}, headers={"Retry-After": "2"}), 2.0),
        (httpx.Response(429, json={"msBeforeNext": None}), 10.0),  # no hint: 10 s
        (httpx.Response(429, headers={"Retry-After": "-3"}), 0.0),
        (httpx.Response(429, headers={"Retry-After": "1.5"}), 1.5),
        (httpx.Response(429, text="<html>"), 10.0),
    ],
)
def test_retry_after(response: httpx.Response, wait: float) -> None:
    assert retry_after_seconds(response, now=0.0) == pytest.approx(wait)


def test_secret_rejects_empty() -> None:
    with pytest.raises(TypeError):
        Secret("")


def test_secret_redacts_text() -> None:
    secret = Secret("abc123")
    assert secret.redact("x abc123 y abc123") == "x *** y ***"
    assert secret.redact("nothing") == "nothing"


@given(
    partner=st.integers(min_value=0, max_value=10**12),
    token=st.text(
        alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
        min_size=8,
        max_size=8,
    ),
)
def test_trade_link_round_trip(partner: int, token: str) -> None:
    url = f"https://platform.example/tradeoffer/new/?partner={partner}&token={token}"
    link = TradeLink.parse(url)
    assert (link.partner, link.token) == (str(partner), token)
