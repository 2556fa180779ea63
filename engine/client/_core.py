"""The client's machinery: one HTTP client, the key-injecting transport, the rate limiter,
the overall deadline, and the translation of every failure into the snipe error tree.

The endpoint methods (``_client.py``) build checked arguments and call :meth:`_call`.
"""

from __future__ import annotations

import logging
import re
import urllib.parse
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from contextlib import (
    AbstractAsyncContextManager,
    AbstractContextManager,
    asynccontextmanager,
    nullcontext,
    suppress,
)
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, Self, TypeVar

import anyio
import httpx

from .._clock import Clock, SystemClock, VirtualClock
from .._errors import APIError, ConfigError, RateLimited, Unavailable
from .._limiter import Lane
from ..models import ListingMemo, PerItem, Prefilter, Screen, SetAside, WireModel
from ..snapshot import CHANGES_EXTENSION, SnapshotChanges
from ._endpoints import ENDPOINT_BUCKETS, Endpoint
from ._responses import decode, http_error, transport_error
from ._secret import APIKey, Secret
from ._transport import AUTH_EXTENSION, SECRET_PARAMS_EXTENSION, KeyInjectingTransport
from ._urls import Addresses

if TYPE_CHECKING:
    from .._limiter import RateLimiter

__all__ = ["DEFAULT_TIMEOUT", "ClientCore", "SnapshotStream"]

M = TypeVar("M", bound=WireModel)

_log = logging.getLogger("engine.client")

DEFAULT_TIMEOUT: Final = 10.0
"""Seconds, for each phase of a request (httpx) and for the whole call (the clock)."""


class _EndpointBucket:
    """Sentinel: use the endpoint's own bucket."""


_ENDPOINT_BUCKET: Final = _EndpointBucket()

RequestObserver = Callable[[str, str], None]
"""(endpoint label, outcome) -> None: see :attr:`ClientCore.request_observer`."""
MalformedObserver = Callable[[str, SetAside], None]
"""(endpoint label, set-aside item) -> None: see :attr:`ClientCore.malformed_observer`."""
_NO_BODY: Final = object()


class _SetCookiesOnly(httpx.Cookies):
    """The client's cookies, read from an answer only when it sets one. httpx reads every
    answer through urllib's cookie machinery (two adapter objects and a jar pass per
    request, ~2% of a backtest's hour); an answer without ``Set-Cookie`` changes none."""

    def extract_cookies(self, response: httpx.Response) -> None:
        headers = response.headers
        if "set-cookie" in headers or "set-cookie2" in headers:
            super().extract_cookies(response)


class ClientCore:
    """Construction, lifetime and the one request path shared by every endpoint method."""

    def __init__(
        self,
        api_key: str | APIKey,
        *,
        base_url: str,
        image_base_url: str | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        limiter: RateLimiter | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        clock: Clock | None = None,
        catalogue_bucket: str | None = "search",
    ) -> None:
        self._key = _check_key(api_key)
        self._base_url = _check_base_url(base_url)
        self._image_base_url = image_base_url
        self._limiter = limiter
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
            raise ConfigError(f"timeout must be a positive number of seconds, got {timeout!r}")
        self._timeout = float(timeout)
        self._clock: Clock = clock if clock is not None else SystemClock()
        self._catalogue_bucket = catalogue_bucket
        self.request_observer: RequestObserver | None = None
        """Called with (endpoint label, outcome) after every request: ``"ok"``, or the snake
        case name of the error (``"rate_limited"``, ``"unavailable"``...). For metrics; it
        must not block, and one that raises is ignored."""
        self.malformed_observer: MalformedObserver | None = None
        """Called with (endpoint label, :class:`~engine.models.SetAside`) for every item an
        answer carried that could not be read and was set aside (the rest of the answer is
        used). For metrics and ``snipe status``; same rules as :attr:`request_observer`."""
        self._malformed_logged: set[tuple[str, str]] = set()
        self.listing_memo: ListingMemo | None = ListingMemo()
        """The v2 search's listings as last built (:class:`~engine.models.ListingMemo`): one
        sent again exactly as before is not built again (searches repeat most of their
        listings). ``None`` builds every listing of every answer."""
        if limiter is not None:
            _check_buckets(limiter, catalogue_bucket)
        inner = transport if transport is not None else httpx.AsyncHTTPTransport(retries=0)
        self._http = httpx.AsyncClient(
            base_url=self._base_url,
            transport=KeyInjectingTransport(inner, self._key),
            timeout=self._timeout,
            follow_redirects=False,  # a redirect would carry the key to another address
            headers={"User-Agent": "snipe"},
        )
        self._http._cookies = _SetCookiesOnly()  # (the ``cookies`` setter copies to a plain one)
        self._addresses = Addresses(self._base_url + "/")  # as httpx merges a path onto it

    # --- lifetime -----------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connections."""
        await self._http.aclose()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={self._base_url!r}, api_key={self._key!r})"

    @property
    def base_url(self) -> str:
        return self._base_url

    # --- the request path ---------------------------------------------------------------

    async def _call(
        self,
        endpoint: Endpoint,
        model: type[M],
        *,
        params: list[tuple[str, str]] | None = None,
        json_body: Any = _NO_BODY,
        secrets: Mapping[str, Secret] | None = None,
        bucket: str | _EndpointBucket | None = _ENDPOINT_BUCKET,
        lane: Lane = Lane.BACKGROUND,
        project_ids: tuple[str, ...] = (),
        prefilter: Prefilter | None = None,
        screen: Screen | None = None,
        memo: ListingMemo | None = None,
    ) -> M:
        """Send, check the status, and decode the answer as ``model`` (a search answer
        only as far as ``prefilter`` lets through, when given; its listings sent again as
        before from ``memo``)."""
        response = await self._send(
            endpoint,
            params=params,
            json_body=json_body,
            secrets=secrets,
            bucket=bucket,
            lane=lane,
            project_ids=project_ids,
        )
        try:
            parsed = decode(
                endpoint,
                model,
                response,
                image_base_url=self._image_base_url,
                project_ids=project_ids,
                prefilter=prefilter,
                screen=screen,
                memo=memo,
            )
        except APIError as exc:
            _log.debug("%s", exc)
            raise
        if isinstance(parsed, PerItem) and parsed.set_aside:
            self._report_set_aside(endpoint, parsed.set_aside)
        return parsed

    def _report_set_aside(self, endpoint: Endpoint, items: tuple[SetAside, ...]) -> None:
        """Log each kind (endpoint and field) once per client, with an example; tell the
        observer about every item."""
        for item in items:
            kind = (endpoint.label, item.field)
            if kind not in self._malformed_logged:
                self._malformed_logged.add(kind)
                _log.warning(
                    "%s: set aside an item that could not be read (field %s), kept the "
                    "rest; further ones of this kind are only counted: %s",
                    endpoint.label,
                    item.field,
                    item,
                )
            if self.malformed_observer is not None:
                try:
                    self.malformed_observer(endpoint.label, item)
                except Exception:  # metrics must never break a request
                    _log.exception("the malformed-item observer failed")

    async def _send(
        self,
        endpoint: Endpoint,
        *,
        params: list[tuple[str, str]] | None = None,
        json_body: Any = _NO_BODY,
        secrets: Mapping[str, Secret] | None = None,
        bucket: str | _EndpointBucket | None = _ENDPOINT_BUCKET,
        lane: Lane = Lane.BACKGROUND,
        project_ids: tuple[str, ...] = (),
    ) -> httpx.Response:
        """The answer of one call with a 2xx status; any failure raised as a snipe error."""
        chosen = endpoint.bucket if isinstance(bucket, _EndpointBucket) else bucket
        request = self._build(endpoint, params, json_body, secrets)
        failure: APIError | None = None
        # The limit's slot is held from sending until the answer arrived (see _limiter.py):
        # the service counts the call at its arrival, which lies in between.
        slot: AbstractAsyncContextManager[None] = (
            self._limiter.hold(chosen, lane)
            if chosen is not None and self._limiter is not None
            else nullcontext()
        )
        async with slot:
            try:
                response = await self._send_within_deadline(request)
            except httpx.HTTPError as exc:
                failure = transport_error(endpoint, exc, project_ids)
            else:
                _unbind(response)
        if failure is None:
            failure = http_error(endpoint, response, project_ids, self._clock.now())
        self._observe(endpoint, failure)
        if failure is not None:
            if isinstance(failure, RateLimited) and chosen is not None and self._limiter:
                self._limiter.pause(chosen, failure.retry_after)
            _log.debug("%s", failure)  # messages name the endpoint, never the URL
            # the error's traceback holds this frame until the cyclic collector frees it:
            # not the answer too
            response = _DROPPED
            # Raised outside the except block: no httpx error rides along as __context__.
            raise failure
        return response

    def _observe(self, endpoint: Endpoint, failure: APIError | None) -> None:
        if self.request_observer is None:
            return
        outcome = "ok" if failure is None else _snake(type(failure).__name__)
        try:
            self.request_observer(endpoint.label, outcome)
        except Exception:  # metrics must never break a request
            _log.exception("the request observer failed")

    def _build(
        self,
        endpoint: Endpoint,
        params: list[tuple[str, str]] | None,
        json_body: Any,
        secrets: Mapping[str, Secret] | None,
    ) -> httpx.Request:
        extensions: dict[str, Any] = {AUTH_EXTENSION: endpoint.auth}
        if secrets:
            extensions[SECRET_PARAMS_EXTENSION] = dict(secrets)
        return self._http.build_request(
            endpoint.method,
            self._url(endpoint.path, params),
            json=None if json_body is _NO_BODY else json_body,
            extensions=extensions,
        )

    def _url(self, path: str, params: list[tuple[str, str]] | None) -> httpx.URL:
        """The address of ``path`` with ``params``, the one httpx makes of them (the base
        address merged, the query form-encoded as ``urlencode`` does), made without
        parsing the query again (``_urls.py``: httpx would parse it three times, each a
        pass in Python over every character of a search's 50 names)."""
        return self._addresses.url(path, params)

    async def _send_within_deadline(self, request: httpx.Request) -> httpx.Response:
        """``send``, abandoned when ``timeout`` seconds of the injected clock have passed
        (httpx's own timeouts bound each phase; this bounds the whole call, and lets tests
        with a virtual clock reach the deadline without waiting)."""
        clock = self._clock
        # a cancel scope where the clock offers one (real time; a backtest's or a test's
        # virtual time), else a watchdog task: one per request was ~5% of a backtest
        deadline: AbstractContextManager[anyio.CancelScope]
        if isinstance(clock, SystemClock):
            deadline = anyio.move_on_after(self._timeout)
        elif isinstance(clock, VirtualClock):
            deadline = clock.move_on_after(self._timeout)
        else:
            return await self._send_with_watchdog(request)
        response: httpx.Response | None = None
        with deadline:
            response = await self._http.send(request)
        if response is None:
            raise httpx.TimeoutException(f"no answer within {self._timeout:g} s", request=request)
        return response

    async def _send_with_watchdog(self, request: httpx.Request) -> httpx.Response:
        """:meth:`_send_within_deadline` on any other clock: a task sleeps its time."""
        response: httpx.Response | None = None
        timed_out = False

        async def watchdog() -> None:
            nonlocal timed_out
            await self._clock.sleep(self._timeout)
            timed_out = True
            tg.cancel_scope.cancel()

        error: httpx.HTTPError | None = None
        async with anyio.create_task_group() as tg:
            tg.start_soon(watchdog)
            try:
                response = await self._http.send(request)
            except httpx.HTTPError as exc:
                error = exc  # kept out of the task group: trio would wrap it in a group
            finally:
                tg.cancel_scope.cancel()
        if error is not None:
            raise error
        if response is None:
            assert timed_out  # otherwise send() raised, or we were cancelled from outside
            raise httpx.TimeoutException(f"no answer within {self._timeout:g} s", request=request)
        return response

    @asynccontextmanager
    async def _stream(
        self, endpoint: Endpoint, params: list[tuple[str, str]]
    ) -> AsyncIterator[SnapshotStream]:
        """Open a streamed answer; errors before the body are raised on entry."""
        request = self._build(endpoint, params, _NO_BODY, None)
        failure: APIError | None = None
        try:
            response = await self._http.send(request, stream=True)
        except httpx.HTTPError as exc:
            failure = transport_error(endpoint, exc, ())
        if failure is not None:
            self._observe(endpoint, failure)
            raise failure
        try:
            if not 200 <= response.status_code < 300:
                with suppress(httpx.HTTPError):
                    await response.aread()
                failure = http_error(endpoint, response, (), self._clock.now())
            self._observe(endpoint, failure)
            if failure is not None:
                raise failure
            stream = SnapshotStream(endpoint, response)
            try:
                yield stream
            finally:
                await stream.aclose()
        finally:
            await response.aclose()
            response.stream = _NOTHING_MORE  # (see _unbind: its body is read or dropped)


class SnapshotStream:
    """A streamed answer body: iterate it (``async for chunk in stream``) for ``bytes``
    chunks, after HTTP content decoding. The CSV snapshot is a gzip file, so its chunks are
    usually still gzip-compressed (they start with ``1f 8b``); ``content_type`` and
    ``content_encoding`` tell what the service said. A failure while reading raises
    :class:`~engine.Unavailable`."""

    def __init__(self, endpoint: Endpoint, response: httpx.Response) -> None:
        self._endpoint = endpoint
        self._response = response
        self.content_type: str | None = response.headers.get("content-type")
        self.content_encoding: str | None = response.headers.get("content-encoding")
        self.changes: SnapshotChanges | None = response.extensions.get(CHANGES_EXTENSION)
        """The answer told as changes, when its source knows them (a backtest's replay,
        never the service): see :mod:`engine.snapshot._changes`."""
        self._iterators: list[AsyncGenerator[bytes, None]] = []

    def __aiter__(self) -> AsyncIterator[bytes]:
        iterator = self._chunks()
        self._iterators.append(iterator)
        return iterator

    async def aclose(self) -> None:
        """Close what iterated the body (a reader cancelled mid-body leaves its generator
        open: closed here, on the stream's exit, not by the garbage collector, which trio
        reports as a leak)."""
        for iterator in self._iterators:
            await iterator.aclose()
        self._iterators.clear()

    @property
    def bytes_downloaded(self) -> int:
        """Bytes of the body received so far, as they came over the wire (before any
        HTTP content decoding)."""
        return self._response.num_bytes_downloaded

    async def _chunks(self) -> AsyncGenerator[bytes, None]:
        iterator = self._response.aiter_bytes()
        try:
            while True:
                failure: APIError | None = None
                try:
                    chunk = await anext(iterator)
                except StopAsyncIteration:
                    return
                except httpx.HTTPError as exc:
                    failure = Unavailable(
                        f"the stream broke after it started ({type(exc).__name__})",
                        endpoint=self._endpoint.label,
                    )
                if failure is not None:
                    raise failure
                yield chunk
        finally:
            await iterator.aclose()  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        return f"<SnapshotStream {self._endpoint.label} [{self._response.status_code}]>"


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _check_key(api_key: object) -> APIKey:
    if isinstance(api_key, APIKey):
        return api_key
    if isinstance(api_key, Secret):
        return APIKey(api_key.reveal())
    if isinstance(api_key, str) and api_key.strip():
        if api_key != api_key.strip():
            raise ConfigError("the API key has leading or trailing whitespace", field="api_key")
        return APIKey(api_key)
    raise ConfigError("the API key must be a non-empty string", field="api_key")


def _check_base_url(base_url: object) -> str:
    if not isinstance(base_url, str):
        raise ConfigError("base_url must be a URL string", field="base_url")
    parts = urllib.parse.urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError("base_url must be an http(s) URL", field="base_url")
    if parts.query or parts.fragment:
        # Never accept a key smuggled into the address: it would be logged with every call.
        raise ConfigError("base_url must not carry a query or fragment", field="base_url")
    return base_url.rstrip("/")


def _check_buckets(limiter: RateLimiter, catalogue_bucket: str | None) -> None:
    """Every bucket the client will ask for exists (an unknown one would fail every call)."""
    wanted = set(ENDPOINT_BUCKETS)
    if catalogue_bucket is not None:
        wanted.add(catalogue_bucket)
    for bucket in sorted(wanted):
        try:
            limiter.usage(bucket)
        except ValueError:
            raise ConfigError(
                f"the rate limiter has no bucket {bucket!r}", field="limiter"
            ) from None


_NOTHING_MORE = httpx.ByteStream(b"")
_DROPPED = httpx.Response(204)


def _unbind(response: httpx.Response) -> None:
    """Free an answer read whole as soon as it is dropped. httpx leaves the read body's
    stream bound to its response, a reference cycle that only the cyclic garbage
    collector frees: a long run held hundreds of search answers (hundreds of KB each)
    between two full collections (a week's backtest peaked ~150 MB higher). The body is
    in ``content`` already; the stream that replaces the bound one only holds it."""
    response.stream = httpx.ByteStream(response.content)
