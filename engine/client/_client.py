"""``MarketClient``: one async method per endpoint of the marketplace interface."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager
from typing import Any

from .._limiter import Lane
from ..models import (
    CataloguePage,
    DepositsPage,
    InventoryResponse,
    OwnListingsResponse,
    PlatformItemsResponse,
    PlatformTokenResult,
    Prefilter,
    Screen,
    SearchResponse,
    SearchResponseV1,
    SimpleResult,
    Snapshot,
    StatusResult,
    TradeLinkCheck,
    TronRentResult,
    UserCreated,
    UserResponse,
    WebhookPage,
    WebhookResponse,
)
from . import _endpoints as ep
from ._buying import BuyingAPI
from ._core import SnapshotStream
from ._params import (
    EXTERIORS,
    GAMES,
    MAX_DEPOSIT_ID,
    MAX_NAMES,
    ORDER_BYS,
    ORDERS,
    PAGE_LIMIT,
    SORTS,
    Exterior,
    Game,
    Order,
    OrderBy,
    Query,
    Sort,
    check_secret,
)
from ._prices import PriceListStream
from ._secret import Secret

__all__ = ["MarketClient"]


class MarketClient(BuyingAPI):
    """An async client of the marketplace.

    ::

        async with MarketClient(key, base_url="https://...") as client:
            found = await client.search_items_by_name(["AK-47 | Redline (Field-Tested)"])

    ``transport`` is the httpx transport to send through (tests pass
    ``httpx.MockTransport`` or ``httpx.ASGITransport``); the key is added to each request
    by a wrapper just before that transport, so nothing httpx logs or raises carries it.
    ``limiter`` (a :class:`~engine.RateLimiter`) is asked before every rate-limited call and
    told about every 429. ``timeout`` bounds each call, on ``clock``'s time.
    ``catalogue_bucket`` is the limiter bucket of catalogue pages (``None``: not limited).

    Every method checks its arguments against the documented limits first and raises
    :class:`~engine.InvalidRequest` without sending anything when one is broken.
    """

    # --- 4.1 account --------------------------------------------------------------------

    async def get_user(self) -> UserResponse:
        """The account: ``user.wallet`` is the balance (USD x 1000)."""
        return await self._call(ep.USER, UserResponse)

    async def update_account(self, fields: Mapping[str, object]) -> SimpleResult:
        """The unified account update (trade link, access token, proxy, platform key,
        webhook) in one call. Its payload is not documented: ``fields`` is sent as the JSON
        body; :class:`Secret` values are revealed only into that body."""
        q = Query(ep.UPDATE_ACCOUNT.label)
        if not isinstance(fields, Mapping) or not fields:
            raise q.fail("fields must be a non-empty mapping")
        body = {
            q.text("field name", name): value.reveal() if isinstance(value, Secret) else value
            for name, value in fields.items()
        }
        return await self._call(ep.UPDATE_ACCOUNT, SimpleResult, json_body=body)

    async def create_user(self, token: str | Secret) -> UserCreated:
        """Create a user (or get the key of an existing account) from its base64 access
        ``token``, authenticated by this client's key as the creator. The new key is in
        ``data.api``: a secret."""
        secret = check_secret(ep.CREATE_USER.label, "token", token)
        return await self._call(ep.CREATE_USER, UserCreated, json_body={"token": secret.reveal()})

    async def set_platform_token(self, token: str | Secret) -> PlatformTokenResult:
        """Send the account's base64 access token (hourly and after every refresh) to stay
        online for selling. A refusal means the account is not online."""
        secret = check_secret(ep.PLATFORM_TOKEN.label, "token", token)
        return await self._call(
            ep.PLATFORM_TOKEN, PlatformTokenResult, json_body={"token": secret.reveal()}
        )

    async def set_platform_api(
        self, platform_api: str | Secret, *, lane: Lane = Lane.BACKGROUND
    ) -> SimpleResult:
        """Store the platform API key (never shown). Uses the ``set_platform_api`` bucket."""
        secret = check_secret(ep.SET_PLATFORM_API.label, "platform_api", platform_api)
        return await self._call(
            ep.SET_PLATFORM_API, SimpleResult, secrets={"platform_api": secret}, lane=lane
        )

    async def check_tradelink(self, tradelink: str) -> TradeLinkCheck:
        """Validate a trade link with the service. A ``success: true`` answer may still
        name a problem (``info: "Inventory is private"``): see
        :attr:`~engine.models.TradeLinkCheck.problem`. A refusal raises
        :class:`~engine.Refused` whose message keeps the answer's ``info``."""
        q = Query(ep.CHECK_TRADELINK.label)
        body = {"tradelink": q.text("tradelink", tradelink)}
        return await self._call(ep.CHECK_TRADELINK, TradeLinkCheck, json_body=body)

    # --- 4.2 searching and listing ------------------------------------------------------

    async def search_items_by_name(
        self,
        name: Iterable[str],
        *,
        game: Game | None = None,
        minified: bool | None = None,
        delivery_details: bool = False,
        ignore_phase: bool = False,
        include_hold: bool = False,
        lane: Lane = Lane.BACKGROUND,
        prefilter: Prefilter | None = None,
        screen: Screen | None = None,
    ) -> SearchResponse:
        """Listings (at most 50 each, cheapest first) for up to 50 item names (v2; adds
        stickers and the reference price). Uses the ``search`` bucket at ``lane``.

        ``prefilter`` (item name -> the highest price any rule would pay, ``None`` when
        no rule watches it) builds only the listings that can be bought: the others are
        counted in :attr:`SearchResponse.passed_over`, unread
        (:func:`~engine.models.decode_search`). A ``screen`` (an engine's rules compiled
        over raw values: ``engine.rules.RawScreen``) builds only the listings some rule
        could accept, the others kept as stand-ins in
        :attr:`SearchResponse.judged_items`."""
        q = Query(ep.SEARCH_V2.label)
        q.choice("game", game, GAMES)
        q.repeated("name", name, max_count=MAX_NAMES)
        q.binary("minified", minified)
        q.flag("delivery_details", delivery_details)
        q.flag("ignore_phase", ignore_phase)
        q.flag("include_hold", include_hold)
        return await self._call(
            ep.SEARCH_V2,
            SearchResponse,
            params=q.items,
            lane=lane,
            prefilter=prefilter,
            screen=screen,
            memo=self.listing_memo,
        )

    async def search_items_by_name_v1(
        self,
        name: Iterable[str],
        *,
        game: Game | None = None,
        include_hold: bool = False,
        lane: Lane = Lane.BACKGROUND,
    ) -> SearchResponse:
        """The v1 search by name (no stickers, no reference price); shares the ``search``
        bucket with v2. The names go out as repeated ``names=`` (as public clients send
        them to v1); v1 answers one array of listings, returned grouped by name like v2."""
        q = Query(ep.SEARCH_V1.label)
        q.choice("game", game, GAMES)
        q.repeated("names", name, max_count=MAX_NAMES)
        q.flag("include_hold", include_hold)
        answer = await self._call(ep.SEARCH_V1, SearchResponseV1, params=q.items, lane=lane)
        return SearchResponse.from_v1(answer)

    async def get_items_list(
        self,
        *,
        game: Game | None = None,
        search: str | None = None,
        brand: str | None = None,
        order: Order | None = None,
        order_by: OrderBy | None = None,
        exterior: Exterior | None = None,
        min_price: int | None = None,
        max_price: int | None = None,
        limit: int | None = None,
        skip: int | None = None,
        cursor: str | None = None,
        cursor_price: int | None = None,
        cursor_item_id: str | None = None,
        sort: Sort | None = None,
        include_hold: bool = False,
        lane: Lane = Lane.BACKGROUND,
    ) -> CataloguePage:
        """One catalogue page (v2, cursor pagination). Pass the previous page's
        ``next_cursor`` as ``cursor`` while ``has_more``; ``cursor_price`` with
        ``cursor_item_id`` is the alternative. Uses the client's catalogue bucket."""
        q = self._catalogue_query(
            ep.ITEMS_LIST_V2, game, search, brand, order, order_by, exterior, min_price, max_price
        )
        q.integer("limit", limit, low=PAGE_LIMIT[0], high=PAGE_LIMIT[1])
        if cursor is not None and (cursor_price is not None or cursor_item_id is not None):
            raise q.fail("give cursor, or cursor_price with cursor_item_id, not both")
        if (cursor_price is None) != (cursor_item_id is None):
            raise q.fail("cursor_price and cursor_item_id go together")
        if skip is not None and (cursor is not None or cursor_price is not None):
            raise q.fail("skip is ignored with a cursor; give one or the other")
        q.skip(skip)
        q.optional_text("cursor", cursor)
        q.money("cursor_price", cursor_price)
        q.optional_text("cursor_item_id", cursor_item_id)
        if sort is not None and order is not None:
            raise q.fail("sort is an alias of order; give one of them")
        q.choice("sort", sort, SORTS)
        q.flag("include_hold", include_hold)
        return await self._call(
            ep.ITEMS_LIST_V2,
            CataloguePage,
            params=q.items,
            bucket=self._catalogue_bucket,
            lane=lane,
        )

    async def get_items_list_v1(
        self,
        *,
        game: Game | None = None,
        search: str | None = None,
        brand: str | None = None,
        order: Order | None = None,
        order_by: OrderBy | None = None,
        exterior: Exterior | None = None,
        min_price: int | None = None,
        max_price: int | None = None,
        skip: int | None = None,
        lane: Lane = Lane.BACKGROUND,
    ) -> CataloguePage:
        """One catalogue page (v1, offset pagination, at most 100 items)."""
        q = self._catalogue_query(
            ep.ITEMS_LIST_V1, game, search, brand, order, order_by, exterior, min_price, max_price
        )
        q.skip(skip)
        return await self._call(
            ep.ITEMS_LIST_V1,
            CataloguePage,
            params=q.items,
            bucket=self._catalogue_bucket,
            lane=lane,
        )

    @staticmethod
    def _catalogue_query(
        endpoint: ep.Endpoint,
        game: object,
        search: object,
        brand: object,
        order: object,
        order_by: object,
        exterior: object,
        min_price: object,
        max_price: object,
    ) -> Query:
        q = Query(endpoint.label)
        q.choice("game", game, GAMES)
        q.optional_text("search", search)
        q.optional_text("brand", brand)
        q.choice("order", order, ORDERS)
        q.choice("order_by", order_by, ORDER_BYS)
        q.choice("exterior", exterior, EXTERIORS)
        q.money("min_price", min_price)
        q.money("max_price", max_price)
        if isinstance(min_price, int) and isinstance(max_price, int) and min_price > max_price:
            raise q.fail(f"min_price {min_price} is above max_price {max_price}")
        return q

    async def list_items_platform(self, *, game: Game | None = None) -> OwnListingsResponse:
        """The account's own listings."""
        q = Query(ep.LIST_ITEMS_PLATFORM.label).choice("game", game, GAMES)
        return await self._call(ep.LIST_ITEMS_PLATFORM, OwnListingsResponse, params=q.items)

    async def get_platform_items(self, *, game: Game) -> PlatformItemsResponse:
        """Recommended prices of a game's items."""
        q = Query(ep.PLATFORM_ITEMS.label)
        q.add("game", q.check_choice("game", game, GAMES))
        return await self._call(ep.PLATFORM_ITEMS, PlatformItemsResponse, params=q.items)

    async def snapshot(
        self, *, game: Game | None = None, compact: bool = False, whitemarket: bool = False
    ) -> Snapshot:
        """The prices snapshot as JSON (refreshed every 10 s). Sent without the key."""
        q = Query(ep.SNAPSHOT.label).choice("game", game, GAMES)
        q.flag("compact", compact)
        q.flag("whitemarket", whitemarket)
        return await self._call(ep.SNAPSHOT, Snapshot, params=q.items)

    @asynccontextmanager
    async def snapshot_csv(
        self, *, game: Game | None = None, include_hold: bool = False
    ) -> AsyncIterator[SnapshotStream]:
        """The prices snapshot as CSV, streamed (it is large: never load it whole)::

            async with client.snapshot_csv(game="csgo") as stream:
                async for chunk in stream:  # bytes, usually still gzip (1f 8b ...)
                    parser.feed(chunk)

        A 429 or 503 (snapshot being built) raises on entry. Sent without the key.
        """
        q = Query(ep.SNAPSHOT.label).add("format", "csv").choice("game", game, GAMES)
        q.flag("include_hold", include_hold)
        async with self._stream(ep.SNAPSHOT, q.items) as stream:
            yield stream

    @asynccontextmanager
    async def prices(self, *, game: Game | None = None) -> AsyncIterator[PriceListStream]:
        """``GET /v1/prices``, the per-item price list (``min``, ``count``,
        ``platform_price`` per name), streamed and decoded one item at a time::

            async with client.prices(game="csgo") as stream:
                async for item in stream:  # PriceItem
                    ...
            stream.set_aside  # rows that could not be read, each with its place

        Outside the search budget. Errors before the body raise on entry; a broken
        envelope raises at the end of the iteration (docs/wire.md, "GET /v1/prices").
        """
        q = Query(ep.PRICES.label).choice("game", game, GAMES)
        async with self._stream(ep.PRICES, q.items) as stream:
            yield PriceListStream(
                stream, on_set_aside=lambda rows: self._report_set_aside(ep.PRICES, rows)
            )

    # --- 4.5 merchant -------------------------------------------------------------------

    async def merchant_platform_inventory(
        self, *, merchant: str, game: Game, platform_id: str, trade_url_token: str
    ) -> InventoryResponse:
        """A user's inventory with what the merchant would accept of it."""
        q = Query(ep.MERCHANT_INVENTORY.label)
        body = {
            "merchant": q.text("merchant", merchant),
            "game": q.check_choice("game", game, GAMES),
            "platform_id": q.check_platform_id(platform_id),
            "trade_url_token": q.check_trade_url_token(trade_url_token),
        }
        return await self._call(ep.MERCHANT_INVENTORY, InventoryResponse, json_body=body)

    async def merchant_deposits(
        self,
        *,
        merchant: str,
        start: str | dt.date,
        end: str | dt.date,
        platform_id: str | None = None,
        start_from: int | None = None,
    ) -> DepositsPage:
        """Deposits between ``start`` and ``end`` (dates), at most 200 a page; continue
        with ``start_from`` = the page's ``start_from``."""
        q = Query(ep.MERCHANT_DEPOSITS.label)
        q.required_text("merchant", merchant)
        q.platform_id(platform_id, required=False)
        q.date("start", start)
        q.date("end", end)
        q.integer("start_from", start_from, low=0)
        return await self._call(ep.MERCHANT_DEPOSITS, DepositsPage, params=q.items)

    async def merchant_webhooks(
        self, *, merchant: str, status: str | None = None, start_from: int | None = None
    ) -> WebhookPage:
        """Webhook delivery records, at most 200 a page (``status`` filters, e.g.
        ``"pending"``)."""
        q = Query(ep.MERCHANT_WEBHOOKS.label)
        q.required_text("merchant", merchant)
        q.optional_text("status", status)
        q.integer("start_from", start_from, low=0)
        return await self._call(ep.MERCHANT_WEBHOOKS, WebhookPage, params=q.items)

    async def merchant_webhook(
        self,
        *,
        merchant: str,
        deposit_id: str | None = None,
        transaction_id: int | None = None,
    ) -> WebhookResponse:
        """One webhook record, by exactly one of ``deposit_id`` or ``transaction_id``."""
        q = Query(ep.MERCHANT_WEBHOOK.label)
        q.required_text("merchant", merchant)
        self._deposit_or_transaction(q, deposit_id, transaction_id)
        return await self._call(ep.MERCHANT_WEBHOOK, WebhookResponse, params=q.items)

    async def merchant_webhook_resend(
        self,
        *,
        merchant: str,
        deposit_id: str | None = None,
        transaction_id: int | None = None,
    ) -> StatusResult:
        """Resend a webhook whose status is completed or failed (one attempt, no retry)."""
        q = Query(ep.MERCHANT_RESEND.label)
        body: dict[str, Any] = {"merchant": q.text("merchant", merchant)}
        self._deposit_or_transaction(q, deposit_id, transaction_id)
        body.update(q.items)
        if transaction_id is not None:
            body["transaction_id"] = transaction_id
        return await self._call(ep.MERCHANT_RESEND, StatusResult, json_body=body)

    @staticmethod
    def _deposit_or_transaction(
        q: Query, deposit_id: str | None, transaction_id: int | None
    ) -> None:
        if q.exactly_one(deposit_id=deposit_id, transaction_id=transaction_id) == "deposit_id":
            q.required_text("deposit_id", deposit_id, max_len=MAX_DEPOSIT_ID)
        else:
            q.integer("transaction_id", transaction_id, low=0)

    # --- 4.7 payments -------------------------------------------------------------------

    async def rent_tron_energy(self, address: str) -> TronRentResult:
        """Rent Tron energy for ``address``, paid from the account balance."""
        q = Query(ep.TRON_RENT.label)
        body = {"address": q.text("address", address)}
        return await self._call(ep.TRON_RENT, TronRentResult, json_body=body)
