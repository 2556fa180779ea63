"""Every endpoint the client calls, with what the error mapping needs to know about it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = ["Endpoint"]


@dataclass(frozen=True)
class Endpoint:
    """One endpoint. ``label`` (``GET /v1/buy-one-p2p``) is what errors name: never the URL.

    ``purchase``: anything that goes wrong after the request may have been sent is an
    unknown outcome, not a failure. ``merchant``: the answer carries ``status`` instead of
    ``success``. ``auth``: the API key is added by the transport. ``bucket``: the rate-limit
    bucket (``None`` = not limited).
    """

    method: str
    path: str
    purchase: bool = False
    merchant: bool = False
    auth: bool = True
    bucket: str | None = None

    @property
    def label(self) -> str:
        return f"{self.method} {self.path}"


def _get(
    path: str,
    *,
    purchase: bool = False,
    merchant: bool = False,
    auth: bool = True,
    bucket: str | None = None,
) -> Endpoint:
    return Endpoint("GET", path, purchase, merchant, auth, bucket)


def _post(
    path: str,
    *,
    purchase: bool = False,
    merchant: bool = False,
    bucket: str | None = None,
) -> Endpoint:
    return Endpoint("POST", path, purchase, merchant, True, bucket)


# 4.1 account
USER: Final = _get("/v1/user")
UPDATE_ACCOUNT: Final = _post("/v1/update-account")
CREATE_USER: Final = _post("/v1/user")
PLATFORM_TOKEN: Final = _post("/v1/user/platform-token")
SET_PLATFORM_API: Final = _get("/v1/set-my-platformapi", bucket="set_platform_api")
CHECK_TRADELINK: Final = _post("/v1/check-tradelink")
# 4.2 searching and listing (the catalogue bucket is chosen per client)
SEARCH_V2: Final = _get("/v2/search-items-by-name", bucket="search")
SEARCH_V1: Final = _get("/v1/search-items-by-name", bucket="search")
ITEMS_LIST_V2: Final = _get("/v2/get-items-list")
ITEMS_LIST_V1: Final = _get("/v1/get-items-list")
LIST_ITEMS_PLATFORM: Final = _get("/v1/list-items-platform")
PLATFORM_ITEMS: Final = _get("/v1/get-platform-items")
SNAPSHOT: Final = _get("/v1/prices/snapshot", auth=False)
PRICES: Final = _get("/v1/prices")  # 4.8: the per-item price list (docs/wire.md)
# 4.3 buying
BUY_ONE: Final = _get("/v1/buy-one-p2p", purchase=True)
BUY_ONE_BY_NAME: Final = _get("/v1/buy-one-p2p-name", purchase=True)
BULK_BUY: Final = _post("/v1/buy", purchase=True)
CREATE_BUY_ORDER: Final = _post("/v1/create-buy-order", bucket="buy_order")
REMOVE_BUY_ORDER: Final = _get("/v1/remove-buy-order")
BUY_ORDERS: Final = _get("/v1/buy-orders")
REMOVE_ALL: Final = _get("/v1/remove-all")
CHECK_PROJECT_IDS: Final = _get("/v1/check-many-project-id")
HISTORY: Final = _post("/v2/my-history")
FORCE_CHECK: Final = _post("/v1/force-check-trade")
# 4.4 deprecated polling: authenticated by platform_api only
READY_TO_TRANSFER: Final = _get("/v1/ready-to-transfer-p2p", auth=False)
# 4.5 merchant
MERCHANT_INVENTORY: Final = _post("/v2/merchant/platform-inventory", merchant=True)
MERCHANT_DEPOSITS: Final = _get("/v2/merchant/deposits", merchant=True)
MERCHANT_WEBHOOKS: Final = _get("/v2/merchant/webhooks", merchant=True)
MERCHANT_WEBHOOK: Final = _get("/v2/merchant/webhook", merchant=True)
MERCHANT_RESEND: Final = _post("/v2/merchant/webhook/resend", merchant=True)
# 4.7 payments
TRON_RENT: Final = _post("/v1/payment/tron-energy/rent")

ENDPOINT_BUCKETS: Final = frozenset(
    e.bucket for e in (SEARCH_V2, SEARCH_V1, CREATE_BUY_ORDER, SET_PLATFORM_API) if e.bucket
)
"""The rate-limit buckets endpoints use (besides the client's catalogue bucket)."""
