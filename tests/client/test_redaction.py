"""The API key (and the other secrets) never show: not in logs at DEBUG (httpx, httpcore
included), not in exceptions or their chains, not in reprs, not in requests we expose."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.abc
import httpx
import pytest
from client_support import BASE_URL, KEY, Recorder

from engine import APIError, VirtualClock
from engine.client import APIKey, BulkItem, KeyInjectingTransport, MarketClient, Secret

PLATFORM_KEY = "PLATFORM-SECRET-0987654321"
TRADE_TOKEN = "TkN9xY2q"
SECRETS = (KEY, PLATFORM_KEY, TRADE_TOKEN)

Call = Callable[[MarketClient], Awaitable[Any]]


def leaks(text: str) -> list[str]:
    return [s for s in SECRETS if s in text]


def assert_clean_exception(exc: BaseException | None, depth: int = 0) -> None:
    """No secret in the exception, its chain, or the request/response it carries."""
    if exc is None or depth > 10:
        return
    assert not leaks(str(exc)), f"secret in str({type(exc).__name__})"
    assert not leaks(repr(exc)), f"secret in repr({type(exc).__name__})"
    for attr in ("request", "response"):
        try:
            value = getattr(exc, attr, None)
        except RuntimeError:  # httpx: ``.request`` not set
            value = None
        if value is not None:
            assert not leaks(str(getattr(value, "url", ""))), f"secret in {attr}.url"
            assert not leaks(repr(value))
    for inner in getattr(exc, "exceptions", ()):
        assert_clean_exception(inner, depth + 1)
    assert_clean_exception(exc.__cause__, depth + 1)
    assert_clean_exception(exc.__context__, depth + 1)


@pytest.fixture
def debug_logs(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.DEBUG)
    for name in ("httpx", "httpcore", "engine"):
        caplog.set_level(logging.DEBUG, logger=name)
    return caplog


def assert_clean_logs(caplog: pytest.LogCaptureFixture) -> None:
    assert caplog.records, "expected log lines (is httpx logging?)"
    for record in caplog.records:
        assert not leaks(record.getMessage()), f"secret in log line of {record.name}"
    assert not leaks(caplog.text)


def purchase(c: MarketClient) -> Awaitable[Any]:
    return c.buy_one_p2p(item_id="1", price=1, partner="1", token=TRADE_TOKEN, project_id="p")


def bulk(c: MarketClient) -> Awaitable[Any]:
    return c.buy([BulkItem("1", 1, "p")], partner="1", token=TRADE_TOKEN)


CALLS: list[tuple[str, Call]] = [
    ("search", lambda c: c.search_items_by_name(["AK"])),
    ("purchase", purchase),
    ("bulk", bulk),
    ("set_platform_api", lambda c: c.set_platform_api(PLATFORM_KEY)),
    ("ready_to_transfer", lambda c: c.ready_to_transfer_p2p(Secret(PLATFORM_KEY))),
    ("create_user", lambda c: c.create_user(PLATFORM_KEY)),
]


def keyed_failure(request: httpx.Request) -> httpx.Response:
    # A hostile inner transport: an error whose message and request carry the keyed URL.
    raise httpx.ReadError(f"reset while talking to {request.url}", request=request)


def keyed_connect_failure(request: httpx.Request) -> httpx.Response:
    raise httpx.ConnectError(f"cannot reach {request.url}", request=request)


ANSWERS: list[tuple[str, Any]] = [
    ("ok", httpx.Response(200, json={"success": True, "id": 1, "items": {}})),
    ("refused", httpx.Response(200, json={"success": False, "msg": "Item sold"})),
    ("403", httpx.Response(403, json={"success": False})),
    ("429", httpx.Response(429, json={"msBeforeNext": 10})),
    ("500", httpx.Response(500, text="down")),
    ("html", httpx.Response(200, text="<html></html>")),
    ("malformed", httpx.Response(200, json={"success": True, "items": [], "id": "x"})),
    ("read error", keyed_failure),
    ("connect error", keyed_connect_failure),
]


@pytest.mark.parametrize("answer", [a for _, a in ANSWERS], ids=[i for i, _ in ANSWERS])
@pytest.mark.parametrize("call", [c for _, c in CALLS], ids=[i for i, _ in CALLS])
async def test_no_secret_in_logs_or_errors(
    call: Call, answer: Any, recorder: Recorder, debug_logs: pytest.LogCaptureFixture
) -> None:
    recorder.reply(answer)
    async with MarketClient(KEY, base_url=BASE_URL, transport=recorder.transport) as client:
        assert not leaks(repr(client))
        assert not leaks(str(client))
        try:
            result = await call(client)
        except APIError as exc:
            assert_clean_exception(exc)
            if isinstance(exc.__context__, httpx.HTTPError):
                pytest.fail("an httpx error rides along as __context__")
        else:
            assert not leaks(repr(result))
    assert_clean_logs(debug_logs)
    # The key did go out, on the private copy only.
    sent = str(recorder.last.url)
    if call is not CALLS[4][1]:  # ready-to-transfer is authenticated by platform_api alone
        assert f"api={KEY}" in sent


async def test_timeout_on_a_purchase_is_clean(
    recorder: Recorder, debug_logs: pytest.LogCaptureFixture
) -> None:
    async def hang(request: httpx.Request) -> httpx.Response:
        await anyio.Event().wait()
        raise AssertionError

    clock = VirtualClock()
    recorder.reply(hang)
    async with (
        MarketClient(KEY, base_url=BASE_URL, transport=recorder.transport, clock=clock) as client,
        clock.autojump(),
    ):
        with pytest.raises(APIError) as info:
            await purchase(client)
    assert_clean_exception(info.value)
    for record in debug_logs.records:
        assert not leaks(record.getMessage())


async def test_transport_scrubs_errors_of_the_inner_transport() -> None:
    inner = httpx.MockTransport(keyed_failure)
    async with httpx.AsyncClient(
        base_url=BASE_URL, transport=KeyInjectingTransport(inner, APIKey(KEY))
    ) as http:
        with pytest.raises(httpx.ReadError) as info:
            await http.get("/v1/user", extensions={"snipe.auth": True})
    assert_clean_exception(info.value)
    assert "api=***" in str(info.value)
    assert str(info.value.request.url) == f"{BASE_URL}/v1/user"


async def test_requests_and_responses_seen_by_httpx_carry_no_key(recorder: Recorder) -> None:
    seen: list[httpx.Response] = []

    async def hook(response: httpx.Response) -> None:
        seen.append(response)

    transport = KeyInjectingTransport(recorder.transport, APIKey(KEY))
    async with httpx.AsyncClient(
        base_url=BASE_URL, transport=transport, event_hooks={"response": [hook]}
    ) as http:
        response = await http.get("/v1/user", extensions={"snipe.auth": True})
    assert seen == [response]
    for text in (str(response), repr(response), str(response.request), repr(response.request)):
        assert not leaks(text)
    assert not leaks(str(response.url))
    assert not leaks(repr(transport))
    assert f"api={KEY}" in str(recorder.last.url)


@pytest.mark.parametrize(
    "value",
    [APIKey(KEY), Secret(KEY)],
)
def test_secret_never_prints(value: Secret) -> None:
    for text in (repr(value), str(value), f"{value}", f"{value!r}", "%s" % value):  # noqa: UP031
        assert KEY not in text
    assert value.reveal() == KEY
    assert value == Secret(KEY)
    with pytest.raises(TypeError):
        __import__("pickle").dumps(value)


# --- through a real socket on 127.0.0.1, so httpcore's DEBUG lines are captured too --------


@asynccontextmanager
async def local_server(behaviour: str) -> AsyncIterator[tuple[str, list[bytes]]]:
    """A one-route HTTP server on 127.0.0.1. ``behaviour``: ``ok`` answers JSON, ``drop``
    closes the connection after reading the request."""
    heads: list[bytes] = []
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")

    async def serve(stream: anyio.abc.SocketStream) -> None:
        async with stream:
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = await stream.receive()
                data += chunk
            heads.append(data.split(b"\r\n", 1)[0])
            if behaviour == "ok":
                body = b'{"success": true, "id": 1}'
                await stream.send(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    b"Content-Length: " + str(len(body)).encode() + b"\r\n"
                    b"Connection: close\r\n\r\n" + body
                )

    async with anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, serve)
        port = listener.extra(anyio.abc.SocketAttribute.local_port)
        try:
            yield f"http://127.0.0.1:{port}", heads
        finally:
            tg.cancel_scope.cancel()
    await listener.aclose()


@pytest.mark.parametrize("behaviour", ["ok", "drop"])
@pytest.mark.parametrize("call", [c for _, c in CALLS[:3]], ids=[i for i, _ in CALLS[:3]])
async def test_real_socket_debug_logs_are_clean(
    behaviour: str, call: Call, debug_logs: pytest.LogCaptureFixture
) -> None:
    async with (
        local_server(behaviour) as (url, heads),
        MarketClient(KEY, base_url=url, timeout=5.0) as client,
    ):
        try:
            await call(client)
        except APIError as exc:
            assert behaviour == "drop"
            assert_clean_exception(exc)
    assert heads
    assert f"api={KEY}".encode() in heads[0]
    assert any(r.name.startswith("httpcore") for r in debug_logs.records)
    assert_clean_logs(debug_logs)


async def test_connection_refused_is_clean(debug_logs: pytest.LogCaptureFixture) -> None:
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    await listener.aclose()
    async with MarketClient(KEY, base_url=f"http://127.0.0.1:{port}", timeout=5.0) as client:
        with pytest.raises(APIError) as info:
            await purchase(client)
    assert type(info.value).__name__ == "Unavailable"  # nothing was sent: certain
    assert_clean_exception(info.value)
    for record in debug_logs.records:
        assert not leaks(record.getMessage())


async def test_an_inner_transport_that_reads_no_secret_gets_the_keyless_request() -> None:
    seen: list[httpx.Request] = []

    class Replay(httpx.AsyncBaseTransport):
        secrets_unread = True

        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            seen.append(request)
            return httpx.Response(200, json={"success": True, "user": {"wallet": 0}})

    async with MarketClient(KEY, base_url=BASE_URL, transport=Replay()) as client:
        await client.get_user()
    assert [leaks(str(r.url)) for r in seen] == [[]]
    assert seen[0].url.path == "/v1/user"
