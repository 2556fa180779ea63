"""Every error snipe raises, in one tree.

Errors of dependencies (httpx, pydantic, sqlite, ruamel.yaml) are translated at the boundary
where they happen, so callers only ever catch these::

    SnipeError
    ├── ConfigError                 bad rules file, CLI argument or recorded data; names the place
    ├── InvalidRequest (ValueError) an argument breaks a documented limit; nothing was sent
    │   └── InvalidTradeLink        a trade URL without a usable partner and token
    ├── LedgerError                 the ledger cannot be read or written, or a move is illegal
    ├── IntentRefused               an intent would break a cap or rebuy a listing; ``reason``
    └── APIError                    the marketplace answered (or failed to answer) badly
        ├── KeyRejected             HTTP 403: wrong key or non-whitelisted IP; stop trading
        ├── RateLimited             HTTP 429; ``retry_after`` seconds to wait
        ├── Refused                 HTTP 200 with ``success: false``; ``msg`` says why
        │   └── PurchaseRefused     a purchase that certainly did not happen; typed ``reason``
        ├── Unavailable             5xx, non-JSON 200, connection error, timeout (not a purchase)
        │   └── MalformedResponse   JSON that does not have the documented shape
        └── OutcomeUnknown          a purchase request that may have reached the service

``OutcomeUnknown`` is deliberately *not* an ``Unavailable`` or a ``Refused``: a purchase
that may have happened must never be handled like one that certainly did not. It is resolved
through the ``project_id`` check, never by buying again.

No message in this tree ever contains the API key: the client never puts it in a URL that
it shows, and every message is built from redacted parts.
"""

from __future__ import annotations

import enum

__all__ = [
    "APIError",
    "ConfigError",
    "IntentRefusal",
    "IntentRefused",
    "InvalidRequest",
    "InvalidTradeLink",
    "KeyRejected",
    "LedgerError",
    "MalformedResponse",
    "OutcomeUnknown",
    "PurchaseRefusal",
    "PurchaseRefused",
    "RateLimited",
    "Refused",
    "SnipeError",
    "Unavailable",
]


class SnipeError(Exception):
    """The root of every error snipe raises."""


class ConfigError(SnipeError):
    """Bad configuration or input data.

    ``location`` names the place: ``file:line:column`` for a file, the option for a CLI
    argument. ``field`` is the dotted path of the offending key, when there is one.
    """

    def __init__(self, message: str, *, location: str | None = None, field: str | None = None):
        self.message = message
        self.location = location
        self.field = field
        parts = [p for p in (location, field) if p]
        prefix = ": ".join(parts)
        super().__init__(f"{prefix}: {message}" if prefix else message)


class InvalidRequest(SnipeError, ValueError):
    """An argument breaks a documented limit of the interface. No request was sent."""


class InvalidTradeLink(InvalidRequest):
    """A trade URL that does not carry a usable ``partner`` and ``token``."""


class LedgerError(SnipeError):
    """The ledger cannot be opened, migrated, read or written, or was asked for an illegal
    state transition (nothing is written then)."""


class IntentRefusal(enum.Enum):
    """Why the ledger would not record a purchase intent."""

    CAP = "cap"
    DUPLICATE_ITEM = "duplicate_item"
    DUPLICATE_PROJECT_ID = "duplicate_project_id"


class IntentRefused(SnipeError):
    """The ledger refused to record a purchase intent, so it must not be sent: it would
    break a cap (counting in-flight purchases), or buy a listing that already has a live
    purchase, or reuse a ``project_id``. Nothing was written.

    ``cap`` names the cap for ``CAP``, with ``committed`` (what the cap already counts) and
    ``limit``. Not a :class:`LedgerError`: the ledger is fine, the purchase is not allowed.
    """

    def __init__(
        self,
        message: str,
        *,
        reason: IntentRefusal,
        project_id: str,
        item_id: str,
        cap: str | None = None,
        committed: int | None = None,
        limit: int | None = None,
    ):
        self.reason = reason
        self.project_id = project_id
        self.item_id = item_id
        self.cap = cap
        self.committed = committed
        self.limit = limit
        super().__init__(message)


class APIError(SnipeError):
    """The marketplace answered badly or not at all.

    ``endpoint`` is the method and path (``GET /v1/buy-one-p2p``), never the full URL: the
    URL carries the API key.
    """

    def __init__(self, message: str, *, endpoint: str, status_code: int | None = None):
        self.message = message
        self.endpoint = endpoint
        self.status_code = status_code
        super().__init__(f"{endpoint}: {message}")


class KeyRejected(APIError):
    """HTTP 403: the key is wrong, revoked, or used from a non-whitelisted IP.

    A configuration problem: stop trading and tell the owner; never retry in a loop.
    """


class RateLimited(APIError):
    """HTTP 429. ``retry_after`` is the wait in seconds the service asked for."""

    def __init__(
        self, message: str, *, endpoint: str, retry_after: float, status_code: int | None = 429
    ):
        self.retry_after = retry_after
        super().__init__(message, endpoint=endpoint, status_code=status_code)


class Refused(APIError):
    """HTTP 200 with ``success: false``: the service understood and said no. ``msg`` is its
    reason, as sent (may be ``None``)."""

    def __init__(self, message: str, *, endpoint: str, msg: str | None, status_code: int = 200):
        self.msg = msg
        super().__init__(message, endpoint=endpoint, status_code=status_code)


class PurchaseRefusal(enum.Enum):
    """Why a purchase certainly did not happen."""

    SYSTEM_BUSY = "system_busy"
    GAME_DISABLED = "game_disabled"
    TRADE_LOCKED = "trade_locked"
    ITEM_SOLD = "item_sold"
    PRICE_CHANGED = "price_changed"
    INSUFFICIENT_BALANCE = "insufficient_balance"
    INVALID_TRADE_LINK = "invalid_trade_link"
    BATCH_FAILED = "batch_failed"
    """An item of an all-or-nothing bulk purchase, not bought because another failed."""
    OTHER = "other"
    """Not a reason snipe knows. On a purchase this is never taken as certain: the client
    raises :class:`OutcomeUnknown` instead (see ``engine.client.refusal_error``)."""


class PurchaseRefused(Refused):
    """A purchase the service refused: no money moved. ``reason`` is typed; for
    ``PRICE_CHANGED``, ``new_price`` is the price now asked (USD x 1000) when it was sent."""

    def __init__(
        self,
        message: str,
        *,
        endpoint: str,
        msg: str | None,
        reason: PurchaseRefusal,
        new_price: int | None = None,
        item_id: str | None = None,
    ):
        self.reason = reason
        self.new_price = new_price
        self.item_id = item_id
        super().__init__(message, endpoint=endpoint, msg=msg)


class Unavailable(APIError):
    """The service could not be reached or gave no usable answer: 5xx, a 200 that is not
    JSON (an HTML challenge page), a connection error, or a timeout on a call that is not a
    purchase. Safe to retry later."""


class MalformedResponse(Unavailable):
    """JSON that does not have the documented shape. ``field`` is the path of the first bad
    field."""

    def __init__(self, message: str, *, endpoint: str, field: str | None = None):
        self.field = field
        super().__init__(message, endpoint=endpoint, status_code=200)


class OutcomeUnknown(APIError):
    """A purchase request may have reached the service, and its answer was lost: a timeout,
    a dropped connection, a 5xx or an unreadable body after sending.

    The purchase may or may not have happened. Resolve it with the ``project_id`` check;
    never buy again to find out. ``project_ids`` lists the ids of the request."""

    def __init__(
        self,
        message: str,
        *,
        endpoint: str,
        project_ids: tuple[str, ...],
        status_code: int | None = None,
    ):
        self.project_ids = project_ids
        super().__init__(message, endpoint=endpoint, status_code=status_code)
