"""From an HTTP answer (or the lack of one) to a model or an error of the snipe tree.

Sans-I/O: every function here takes what arrived and decides. The rules, in order:

* a transport error on a purchase is an unknown outcome, unless nothing was sent (the
  connection was never made); elsewhere it is ``Unavailable``;
* 401/403 is ``KeyRejected``; 429 is ``RateLimited`` (wait from ``msBeforeNext``, else
  ``Retry-After``, else :data:`DEFAULT_RETRY_AFTER`);
* any other non-2xx, a body that is not JSON, or JSON of the wrong shape is ``Unavailable``
  (``MalformedResponse`` for the shape), and on a purchase ``OutcomeUnknown``;
* ``success: false`` (``status`` other than success/ok on merchant endpoints) is
  ``Refused``; on a purchase ``PurchaseRefused`` with a typed reason only when the reason
  is one that says no purchase was made (sold, price changed, busy, ...). A reason that may
  hide a purchase (``projectId already exists``: an earlier request with this id may have
  gone through) or one snipe does not recognise is ``OutcomeUnknown``, resolved by
  ``project_id``. The reason is ``msg``, or ``error_msg`` when ``msg`` is empty. A
  non-purchase refusal's ``info`` (the reason a person can act on, such as a trade ban) is
  kept in its message.

Answers with many items are decoded item by item (:func:`engine.models.decode_per_item`):
an unreadable listing or trade is set aside on the answer, and only a broken envelope is
``MalformedResponse``. Purchase answers are never decoded so: they stay whole and strict.
"""

from __future__ import annotations

import email.utils
import json
import math
import re
from typing import Any, TypeVar, cast

import httpx
import pydantic

from .._errors import (
    APIError,
    KeyRejected,
    MalformedResponse,
    OutcomeUnknown,
    PurchaseRefusal,
    PurchaseRefused,
    RateLimited,
    Refused,
    Unavailable,
)
from ..models import (
    ListingMemo,
    Prefilter,
    Screen,
    SearchResponse,
    WireModel,
    decode_per_item,
    decode_search,
)
from ._endpoints import Endpoint

__all__ = [
    "DEFAULT_RETRY_AFTER",
    "classify_refusal",
    "decode",
    "hides_purchase",
    "http_error",
    "parse_envelope",
    "refusal_error",
    "retry_after_seconds",
    "transport_error",
]

M = TypeVar("M", bound=WireModel)

DEFAULT_RETRY_AFTER = 10.0
"""Seconds to wait after a 429 that says neither ``msBeforeNext`` nor ``Retry-After``."""
MAX_RETRY_AFTER = 3600.0
"""The longest wait a 429 can ask for (an hour): a nonsense value such as ``inf`` or a
day must not stop the bot."""

_NOTHING_SENT = (
    httpx.ConnectError,
    httpx.ConnectTimeout,
    httpx.PoolTimeout,
    httpx.UnsupportedProtocol,
    httpx.ProxyError,
)
_OK_STATUSES = frozenset({"success", "ok", "true"})


class _Envelope(pydantic.BaseModel):
    """What every answer shares; parsed when the full model does not fit, to tell a
    refusal with odd fields from a broken answer."""

    model_config = pydantic.ConfigDict(extra="ignore", coerce_numbers_to_str=True)

    success: bool | None = None
    status: str | None = None
    msg: str | None = None
    info: str | None = None
    error_msg: str | None = None
    new_price: float | None = None
    msBeforeNext: float | None = None  # the wire's name

    @property
    def reason(self) -> str | None:
        """``msg``, or ``error_msg`` when ``msg`` is empty."""
        return self.msg or self.error_msg

    @pydantic.field_validator("msg", "error_msg", "status", "info", mode="before")
    @classmethod
    def _any_text(cls, value: Any) -> Any:
        if value is None or isinstance(value, str | int | float):
            return value
        return json.dumps(value)[:200]

    @pydantic.field_validator("new_price", "msBeforeNext", mode="before")
    @classmethod
    def _lenient_number(cls, value: Any) -> Any:
        try:
            return None if value in (None, "") else float(value)
        except (TypeError, ValueError):
            return None


def transport_error(
    endpoint: Endpoint, exc: httpx.HTTPError, project_ids: tuple[str, ...]
) -> APIError:
    """An httpx error (or our own deadline) as a snipe error. The message names the error
    type only: httpx messages may quote addresses."""
    kind = type(exc).__name__
    if endpoint.purchase and not isinstance(exc, _NOTHING_SENT):
        return OutcomeUnknown(
            f"{kind} after the purchase request may have been sent; resolve it by project_id",
            endpoint=endpoint.label,
            project_ids=project_ids,
        )
    what = "timed out" if isinstance(exc, httpx.TimeoutException) else "connection failed"
    return Unavailable(f"{what} ({kind})", endpoint=endpoint.label)


def http_error(
    endpoint: Endpoint, response: httpx.Response, project_ids: tuple[str, ...], now: float
) -> APIError | None:
    """The error for a non-2xx status, or ``None`` for 2xx."""
    code = response.status_code
    if 200 <= code < 300:
        return None
    if code in (401, 403):
        return KeyRejected(
            # callers say "the API key was rejected: ..." themselves: not twice in a line
            f"HTTP {code}: wrong key or non-whitelisted IP; "
            "stop trading and check the configuration",
            endpoint=endpoint.label,
            status_code=code,
        )
    if code == 429:
        wait = retry_after_seconds(response, now)
        return RateLimited(
            f"HTTP 429: rate limited; retry after {wait:g} s",
            endpoint=endpoint.label,
            retry_after=wait,
        )
    if endpoint.purchase:
        return OutcomeUnknown(
            f"HTTP {code} after the purchase request was sent; resolve it by project_id",
            endpoint=endpoint.label,
            project_ids=project_ids,
            status_code=code,
        )
    return Unavailable(f"HTTP {code}", endpoint=endpoint.label, status_code=code)


def retry_after_seconds(response: httpx.Response, now: float) -> float:
    """The wait a 429 asks for: body ``msBeforeNext`` (ms), else the ``Retry-After``
    header (seconds or an HTTP date), else :data:`DEFAULT_RETRY_AFTER`; never more than
    :data:`MAX_RETRY_AFTER` (a nonsense value such as ``inf`` must not stop the bot)."""
    wait = _asked_wait(response, now)
    return wait if math.isfinite(wait) and wait <= MAX_RETRY_AFTER else MAX_RETRY_AFTER


def _asked_wait(response: httpx.Response, now: float) -> float:
    envelope = parse_envelope(response.content)
    if envelope is not None and envelope.msBeforeNext is not None and envelope.msBeforeNext >= 0:
        return envelope.msBeforeNext / 1000.0
    header = response.headers.get("retry-after")
    if header:
        header = header.strip()
        try:
            return max(0.0, float(header))
        except ValueError:
            pass
        try:
            when = email.utils.parsedate_to_datetime(header)
        except (TypeError, ValueError):
            when = None
        if when is not None and when.tzinfo is not None:
            return max(0.0, when.timestamp() - now)
    return DEFAULT_RETRY_AFTER


def decode(
    endpoint: Endpoint,
    model: type[M],
    response: httpx.Response,
    *,
    image_base_url: str | None,
    project_ids: tuple[str, ...] = (),
    check_refusal: bool = True,
    prefilter: Prefilter | None = None,
    screen: Screen | None = None,
    memo: ListingMemo | None = None,
) -> M:
    """A 2xx answer as ``model``, or the error it means (raised).

    With ``check_refusal=False`` a well-formed ``success: false`` answer is returned as is
    (the bulk purchase reads its per-item results itself), and a badly shaped one is never
    read as a refusal. A ``prefilter`` (v2 search answers only) builds only the listings
    it lets through (:func:`~engine.models.decode_search`), a ``screen`` those some rule
    could accept; a ``memo`` (v2 search
    answers only) gives back the listings sent again as before without building them.
    """
    content = response.content
    context = {"image_base_url": image_base_url}
    try:
        if (prefilter or screen or memo) is not None and model is SearchResponse:
            parsed = cast(
                M, decode_search(content, prefilter, context=context, memo=memo, screen=screen)
            )
        else:
            parsed = decode_per_item(model, content, context=context)
    except pydantic.ValidationError as exc:
        failure = _undecodable(endpoint, content, exc, project_ids, check_refusal)
    else:
        refusal = _refusal_or_missing_flag(endpoint, parsed, project_ids, check_refusal)
        if refusal is None:
            return parsed
        failure = refusal
    raise failure  # outside the except block: the ValidationError does not ride along


def _undecodable(
    endpoint: Endpoint,
    content: bytes,
    exc: pydantic.ValidationError,
    project_ids: tuple[str, ...],
    check_refusal: bool,
) -> APIError:
    first = exc.errors(include_url=False, include_input=False)[0]
    path = ".".join(str(part) for part in first["loc"]) or "(body)"
    not_json = first["type"] == "json_invalid"
    if check_refusal and not not_json:
        # The shape is wrong, but it may still be a plain refusal with odd extra fields.
        envelope = parse_envelope(content)
        if envelope is not None and _refused(endpoint, envelope.success, envelope.status):
            refusal = refusal_error(
                endpoint,
                envelope.reason or envelope.status,
                envelope.new_price,
                project_ids=project_ids,
            )
            return _with_info(endpoint, refusal, envelope.info)
    if endpoint.purchase:
        what = "a body that is not JSON" if not_json else f"JSON with a bad field {path}"
        return OutcomeUnknown(
            f"{what} after the purchase request was sent; resolve it by project_id",
            endpoint=endpoint.label,
            project_ids=project_ids,
            status_code=200,
        )
    if not_json:
        return Unavailable(
            "the answer is not JSON (an HTML challenge page?)",
            endpoint=endpoint.label,
            status_code=200,
        )
    return MalformedResponse(f"field {path}: {first['msg']}", endpoint=endpoint.label, field=path)


def parse_envelope(content: bytes) -> _Envelope | None:
    """``success``/``status``/``msg`` of a JSON object answer, or ``None``."""
    try:
        return _Envelope.model_validate_json(content)
    except pydantic.ValidationError:
        return None


def _refusal_or_missing_flag(
    endpoint: Endpoint, parsed: WireModel, project_ids: tuple[str, ...], check_refusal: bool
) -> APIError | None:
    flag = "status" if endpoint.merchant else "success"
    if flag not in parsed.model_fields_set:
        # The models default ``success`` to False; an answer without the flag must not be
        # mistaken for a refusal (on a purchase that would hide a possible purchase).
        if endpoint.purchase:
            return OutcomeUnknown(
                "the answer has no success flag; resolve it by project_id",
                endpoint=endpoint.label,
                project_ids=project_ids,
                status_code=200,
            )
        return MalformedResponse(f"field {flag} is missing", endpoint=endpoint.label, field=flag)
    success = getattr(parsed, "success", None)
    status = getattr(parsed, "status", None)
    if not check_refusal or not _refused(endpoint, success, status):
        return None
    msg = getattr(parsed, "msg", None) or getattr(parsed, "error_msg", None)
    if endpoint.merchant and not msg:
        msg = status
    new_price = getattr(parsed, "new_price", None)
    return _with_info(
        endpoint,
        refusal_error(endpoint, msg, new_price, project_ids=project_ids),
        getattr(parsed, "info", None),
    )


def _with_info(
    endpoint: Endpoint, refusal: Refused | OutcomeUnknown, info: object
) -> Refused | OutcomeUnknown:
    """A non-purchase refusal with the answer's ``info`` added to its message (the check
    of a trade link puts the actionable reason there: "Inventory is private", a ban)."""
    if endpoint.purchase or not isinstance(refusal, Refused):
        return refusal
    if not isinstance(info, str) or not info.strip():
        return refusal
    info = info.strip()
    if refusal.msg and info in refusal.msg:
        return refusal
    shown = f"{refusal.msg} ({info})" if refusal.msg else info
    return Refused(f"refused: {shown}", endpoint=endpoint.label, msg=refusal.msg or info)


def _refused(endpoint: Endpoint, success: bool | None, status: str | None) -> bool:
    if endpoint.merchant:
        return status is not None and status.strip().lower() not in _OK_STATUSES
    return success is False


def refusal_error(
    endpoint: Endpoint,
    msg: str | None,
    new_price: float | int | None = None,
    *,
    item_id: str | None = None,
    project_ids: tuple[str, ...] = (),
) -> Refused | OutcomeUnknown:
    """``Refused`` for ``success: false``; on a purchase a typed ``PurchaseRefused`` when
    the reason proves nothing was bought, else ``OutcomeUnknown`` (:func:`hides_purchase`).
    """
    shown = msg if msg else "no reason given"
    if not endpoint.purchase:
        return Refused(f"refused: {shown}", endpoint=endpoint.label, msg=msg)
    reason = classify_refusal(msg, new_price)
    if hides_purchase(msg, reason):
        return OutcomeUnknown(
            f"the answer {shown!r} does not say the purchase was not made; resolve it by"
            " project_id",
            endpoint=endpoint.label,
            project_ids=project_ids,
            status_code=200,
        )
    price = math.ceil(new_price) if new_price is not None else None
    return PurchaseRefused(
        f"purchase refused ({reason.value}): {shown}",
        endpoint=endpoint.label,
        msg=msg,
        reason=reason,
        new_price=price if reason is PurchaseRefusal.PRICE_CHANGED else None,
        item_id=item_id,
    )


_PROJECT_ID_USED = re.compile(r"project[ _-]?id.*(?:already|exists|used|duplicate)")
_TRADE_LINK = re.compile(r"trade[ _-]?link")
_BATCH_FAILED = re.compile(r"all[ -]or[ -]nothing")
_GAME_DISABLED = re.compile(r"^buy_[a-z0-9]+$|disabled")
_TRADE_LOCKED = re.compile(r"allow_trade_locked|trade[ _-]?lock|on hold")
_ITEM_SOLD = re.compile(r"\bsold\b|no longer available|not found|not available")
_PRICE_CHANGED = re.compile(r"price (?:has )?changed|price (?:has )?increased|new_price")
_NO_BALANCE = re.compile(
    r"insufficient|not enough (?:money|balance|funds)|(?:low|no) balance|balance is too low"
)


def hides_purchase(msg: str | None, reason: PurchaseRefusal) -> bool:
    """May a purchase have happened despite this refusal? ``projectId already exists``
    (an earlier request with the id may have gone through), and any reason snipe does not
    recognise (including none at all)."""
    text = " ".join((msg or "").lower().split())
    return reason is PurchaseRefusal.OTHER or bool(_PROJECT_ID_USED.search(text))


def classify_refusal(msg: str | None, new_price: float | int | None = None) -> PurchaseRefusal:
    """The typed reason of a refused purchase, from its ``msg`` (loosely, ignoring case)."""
    text = " ".join((msg or "").lower().split())
    if "busy" in text:
        return PurchaseRefusal.SYSTEM_BUSY
    # Before "disabled": the trade-lock refusal may say the listing is disabled for you.
    if _TRADE_LOCKED.search(text):
        return PurchaseRefusal.TRADE_LOCKED
    if _GAME_DISABLED.search(text):
        return PurchaseRefusal.GAME_DISABLED
    if _PRICE_CHANGED.search(text) or (new_price is not None and not text):
        return PurchaseRefusal.PRICE_CHANGED
    if _NO_BALANCE.search(text):
        return PurchaseRefusal.INSUFFICIENT_BALANCE
    if _ITEM_SOLD.search(text):
        return PurchaseRefusal.ITEM_SOLD
    if _PROJECT_ID_USED.search(text):
        return PurchaseRefusal.OTHER
    if _TRADE_LINK.search(text):
        return PurchaseRefusal.INVALID_TRADE_LINK
    if _BATCH_FAILED.search(text):
        return PurchaseRefusal.BATCH_FAILED
    return PurchaseRefusal.OTHER
