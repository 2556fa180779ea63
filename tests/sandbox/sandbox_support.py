"""Helpers of the sandbox tests."""

from __future__ import annotations

from typing import Any

import httpx

from engine.sandbox import Listing, Sandbox


class Api:
    """Raw requests as the default account: ``await api.get("/v1/user")`` -> the JSON body
    (the last response is kept in ``last``)."""

    def __init__(self, http: httpx.AsyncClient, sandbox: Sandbox) -> None:
        self.http = http
        self.sandbox = sandbox
        self.key = sandbox.api_key
        self.last: httpx.Response | None = None

    @property
    def link(self) -> dict[str, str]:
        account = self.sandbox.default_account
        return {"partner": account.partner, "token": account.token}

    async def get(self, path: str, **params: Any) -> Any:
        params.setdefault("api", self.key)
        self.last = await self.http.get(path, params=params)
        return self.last.json()

    async def post(self, path: str, body: Any = None, **params: Any) -> Any:
        params.setdefault("api", self.key)
        self.last = await self.http.post(path, params=params, json=body if body is not None else {})
        return self.last.json()

    async def buy(self, listing: Listing, price: int | None = None, **extra: Any) -> Any:
        return await self.get(
            "/v1/buy-one-p2p",
            item_id=str(listing.item_id),
            price=listing.price if price is None else price,
            **self.link,
            **extra,
        )


def regular_listing(sandbox: Sandbox, *, min_price: int = 0) -> Listing:
    """A listing that is not trade-locked, cheapest first above ``min_price``."""
    now = sandbox.now()
    found = sorted(
        (
            li
            for li in sandbox.market.listings.values()
            if not li.locked(now) and li.price >= min_price
        ),
        key=lambda li: (li.price, li.item_id),
    )
    return found[0]


def locked_listing(sandbox: Sandbox) -> Listing:
    now = sandbox.now()
    return min(
        (li for li in sandbox.market.listings.values() if li.locked(now)),
        key=lambda li: (li.unlock_at or 0, li.item_id),
    )


def busiest_name(sandbox: Sandbox) -> str:
    return max(sandbox.market.by_name, key=lambda name: len(sandbox.market.by_name[name]))
