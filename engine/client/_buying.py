"""Purchases, buy orders, and following trades (interface.md 4.3, 4.4, 4.8).

A purchase goes out once. Anything that goes wrong after it may have been sent raises
:class:`~engine.OutcomeUnknown` carrying its ``project_id``s; only a refusal the service
stated (or a failure before anything was sent) is certain.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from typing import Any

import httpx

from .._errors import OutcomeUnknown
from .._limiter import Lane
from ..models import (
    BulkBuyResponse,
    BuyOrderResult,
    BuyOrdersResponse,
    BuyResult,
    ForceCheckResult,
    HistoryPage,
    ProjectTradesResponse,
    RemoveAllResult,
    RemoveBuyOrderResult,
    TradesResponse,
)
from . import _endpoints as ep
from ._bulk import BulkItem, BulkPurchase, bulk_body, bulk_results, check_items
from ._core import ClientCore
from ._params import (
    GAMES,
    MAX_PROJECT_ID,
    MAX_PROJECT_IDS_PER_CHECK,
    SORTS,
    Game,
    Query,
    Sort,
    check_secret,
)
from ._responses import decode
from ._secret import Secret

__all__ = ["BuyingAPI"]


def _force_check_body(trade_id: int) -> dict[str, Any]:
    # interface.md names the endpoint only; the body is this project's assumption.
    return {"id": trade_id}


class BuyingAPI(ClientCore):
    """Buying and what follows it."""

    async def buy_one_p2p(
        self,
        *,
        item_id: str,
        price: int,
        partner: str,
        token: str | Secret,
        project_id: str,
        allow_trade_locked: bool = False,
    ) -> BuyResult:
        """Buy one listing by ``item_id`` at most at ``price`` (USD x 1000), sending it to
        the trade link ``partner``/``token``. ``BuyResult.price`` is what was charged.

        Raises :class:`~engine.PurchaseRefused` (certain; typed ``reason``),
        :class:`~engine.OutcomeUnknown` (resolve by ``project_id``; never buy again),
        :class:`~engine.Unavailable` only when nothing was sent.
        """
        q = Query(ep.BUY_ONE.label)
        q.required_text("item_id", item_id)
        q.money("price", price, required=True)
        q.add("partner", q.check_partner(partner))
        secret_token = q.check_token(token)
        pid = q.text("project_id", project_id, max_len=MAX_PROJECT_ID)
        q.add("project_id", pid)
        q.flag("allow_trade_locked", allow_trade_locked)
        return await self._call(
            ep.BUY_ONE,
            BuyResult,
            params=q.items,
            secrets={"token": secret_token},
            project_ids=(pid,),
        )

    async def buy_one_p2p_name(
        self,
        *,
        name: str,
        price: int,
        partner: str,
        token: str | Secret,
        project_id: str,
        game: Game | None = None,
    ) -> BuyResult:
        """Buy the cheapest listing called ``name`` at most at ``price`` (never a
        trade-locked one). Errors as :meth:`buy_one_p2p`."""
        q = Query(ep.BUY_ONE_BY_NAME.label)
        q.required_text("name", name)
        q.money("price", price, required=True)
        q.add("partner", q.check_partner(partner))
        secret_token = q.check_token(token)
        pid = q.text("project_id", project_id, max_len=MAX_PROJECT_ID)
        q.add("project_id", pid)
        q.choice("game", game, GAMES)
        return await self._call(
            ep.BUY_ONE_BY_NAME,
            BuyResult,
            params=q.items,
            secrets={"token": secret_token},
            project_ids=(pid,),
        )

    async def buy(
        self,
        items: Sequence[BulkItem],
        *,
        partner: str,
        token: str | Secret,
        all_or_none: bool = False,
        allow_trade_locked: bool = False,
    ) -> BulkPurchase:
        """Buy several listings in one request (``POST /v1/buy``; body flag ``all`` is
        ``all_or_none``). Returns a result per item: BOUGHT, REFUSED, or UNKNOWN when the
        answer does not mention it.

        Raises :class:`~engine.OutcomeUnknown` (every ``project_id``) when the answer was
        lost or unreadable, and when the whole request was refused with no per-item answer:
        with ``all: false`` some items may have been bought before the refusal, so only an
        answer that refuses each item proves none was.
        """
        q = Query(ep.BULK_BUY.label)
        checked = check_items(q, items)
        partner_text = q.check_partner(partner)
        token_text = q.check_token(token).reveal()
        q.check_bool("all_or_none", all_or_none)
        q.check_bool("allow_trade_locked", allow_trade_locked)
        body = bulk_body(
            checked,
            partner=partner_text,
            token=token_text,
            all_or_none=all_or_none,
            allow_trade_locked=allow_trade_locked,
        )
        pids = tuple(item.project_id for item in checked)
        response = await self._send(ep.BULK_BUY, json_body=body, project_ids=pids)
        answer = self._decode(ep.BULK_BUY, BulkBuyResponse, response, pids)
        if not answer.success and not answer.items:
            said = answer.msg or answer.error_msg or "no reason given"
            raise OutcomeUnknown(
                f"the bulk purchase was refused as a whole ({said!r}) without a word per item;"
                " some may have been bought: resolve each by project_id",
                endpoint=ep.BULK_BUY.label,
                project_ids=pids,
                status_code=response.status_code,
            )
        return bulk_results(checked, answer)

    async def check_many_project_id(
        self, ids: Iterable[str], *, lane: Lane = Lane.RECONCILE
    ) -> ProjectTradesResponse:
        """The trades of up to 100 ``project_id``s. An id the service never saw is absent
        from ``trades`` (soon after the request that means "nothing yet")."""
        q = Query(ep.CHECK_PROJECT_IDS.label)
        q.repeated("id", ids, max_count=MAX_PROJECT_IDS_PER_CHECK, max_len=MAX_PROJECT_ID)
        return await self._call(ep.CHECK_PROJECT_IDS, ProjectTradesResponse, params=q.items)

    async def my_history(
        self,
        *,
        skip: int = 0,
        start: str | dt.date | None = None,
        end: str | dt.date | None = None,
        sort: Sort = "DESC",
    ) -> HistoryPage:
        """One page (at most 100 rows) of the account's trade history, ordered by trade
        id. On buy rows ``price`` is the amount paid."""
        q = Query(ep.HISTORY.label)
        body: dict[str, Any] = {"skip": q.check_int("skip", skip, low=0, high=5000)}
        for name, value in (("start", start), ("end", end)):
            if isinstance(value, dt.date):
                body[name] = value.isoformat()
            elif value is not None:
                body[name] = q.text(name, value)
        body["sort"] = q.check_choice("sort", sort, SORTS)
        return await self._call(ep.HISTORY, HistoryPage, json_body=body)

    async def force_check_trade(self, trade_id: int) -> ForceCheckResult:
        """Ask the service to re-check a trade's status (at most once an hour per trade,
        counted from its ``last_updated``)."""
        q = Query(ep.FORCE_CHECK.label)
        checked = q.check_int("trade_id", trade_id, low=1)
        return await self._call(
            ep.FORCE_CHECK, ForceCheckResult, json_body=_force_check_body(checked)
        )

    async def create_buy_order(
        self, *, name: str, amount: int, price: int, game: Game, lane: Lane = Lane.BACKGROUND
    ) -> BuyOrderResult:
        """Create (or edit: one order per name) a buy order for ``amount`` of ``name`` at
        most at ``price``. Uses the ``buy_order`` rate-limit bucket."""
        q = Query(ep.CREATE_BUY_ORDER.label)
        q.required_text("name", name)
        q.integer("amount", amount, low=1)
        q.money("price", price, required=True)
        q.add("game", q.check_choice("game", game, GAMES))
        # The live service takes the fields as query parameters with an empty JSON body.
        return await self._call(
            ep.CREATE_BUY_ORDER, BuyOrderResult, params=q.items, json_body={}, lane=lane
        )

    async def remove_buy_order(self, ids: Iterable[str | int]) -> RemoveBuyOrderResult:
        """Remove buy orders by id (several ids are sent as repeated ``id``)."""
        q = Query(ep.REMOVE_BUY_ORDER.label)
        q.repeated("id", ids, max_count=10_000)
        return await self._call(ep.REMOVE_BUY_ORDER, RemoveBuyOrderResult, params=q.items)

    async def buy_orders(self, *, game: Game | None = None) -> BuyOrdersResponse:
        """The account's active buy orders."""
        q = Query(ep.BUY_ORDERS.label).choice("game", game, GAMES)
        return await self._call(ep.BUY_ORDERS, BuyOrdersResponse, params=q.items)

    async def remove_all(self, *, game: Game | None = None) -> RemoveAllResult:
        """Remove all of the account's listings (of one game, or of every game)."""
        q = Query(ep.REMOVE_ALL.label).choice("game", game, GAMES)
        return await self._call(ep.REMOVE_ALL, RemoveAllResult, params=q.items)

    async def ready_to_transfer_p2p(self, platform_api: str | Secret) -> TradesResponse:
        """Deprecated polling: trades the account must send. Authenticated by
        ``platform_api`` alone (sent like the key: never shown)."""
        secret = check_secret(ep.READY_TO_TRANSFER.label, "platform_api", platform_api)
        return await self._call(
            ep.READY_TO_TRANSFER, TradesResponse, secrets={"platform_api": secret}
        )

    def _decode(
        self,
        endpoint: ep.Endpoint,
        model: type[BulkBuyResponse],
        response: httpx.Response,
        pids: tuple[str, ...],
    ) -> BulkBuyResponse:
        return decode(
            endpoint,
            model,
            response,
            image_base_url=self._image_base_url,
            project_ids=pids,
            check_refusal=False,
        )
