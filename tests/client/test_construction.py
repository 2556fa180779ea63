"""Building a client, and the client working with the real rate limiter."""

from __future__ import annotations

import httpx
import pytest
from client_support import BASE_URL, KEY, Recorder

from engine import ConfigError, Lane, RateLimited, RateLimiter, VirtualClock
from engine._limiter import DEFAULT_LIMITS, Limit
from engine.client import APIKey, MarketClient


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"api_key": ""}, "non-empty"),
        ({"api_key": " key "}, "whitespace"),
        ({"api_key": None}, "non-empty"),
        ({"base_url": "market.test"}, "http(s) URL"),
        ({"base_url": f"{BASE_URL}/?api={KEY}"}, "query"),
        ({"timeout": 0}, "timeout"),
        ({"timeout": True}, "timeout"),
    ],
    ids=["empty-key", "spaced-key", "no-key", "no-scheme", "key-in-url", "zero-timeout", "bool"],
)
def test_bad_construction(kwargs: dict[str, object], says: str) -> None:
    args: dict[str, object] = {"api_key": KEY, "base_url": BASE_URL, **kwargs}
    key = args.pop("api_key")
    with pytest.raises(ConfigError) as info:
        MarketClient(key, **args)  # type: ignore[arg-type]
    assert says in str(info.value)
    assert KEY not in str(info.value)


def test_unknown_catalogue_bucket_is_a_config_error(clock: VirtualClock) -> None:
    limiter = RateLimiter(clock)
    with pytest.raises(ConfigError, match="no bucket 'catalogue'"):
        MarketClient(KEY, base_url=BASE_URL, limiter=limiter, catalogue_bucket="catalogue")


async def test_key_as_apikey(recorder: Recorder) -> None:
    async with MarketClient(APIKey(KEY), base_url=BASE_URL, transport=recorder.transport) as c:
        await c.get_user()
    assert recorder.last.url.params["api"] == KEY


async def test_searches_wait_for_the_shared_budget(recorder: Recorder) -> None:
    clock = VirtualClock()
    limiter = RateLimiter(clock, {**DEFAULT_LIMITS, "search": Limit(2, 60.0)})
    sent_at: list[float] = []

    def stamp(request: httpx.Request) -> httpx.Response:
        sent_at.append(clock.now())
        return httpx.Response(200, json={"success": True})

    recorder.reply(stamp)
    start = clock.now()
    async with (
        MarketClient(KEY, base_url=BASE_URL, transport=recorder.transport, limiter=limiter) as c,
        clock.autojump(),
    ):
        await c.search_items_by_name(["A"])
        await c.search_items_by_name_v1(["B"])  # v1 and v2 share the bucket
        await c.get_items_list()  # catalogue pages count against "search" by default
    assert [t - start for t in sent_at] == [0.0, 0.0, 60.0]


async def test_429_pauses_the_bucket(recorder: Recorder) -> None:
    clock = VirtualClock()
    limiter = RateLimiter(clock)
    sent_at: list[float] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent_at.append(clock.now())
        if len(sent_at) == 1:
            return httpx.Response(429, json={"success": False, "msBeforeNext": 30_000})
        return httpx.Response(200, json={"success": True, "items": {}})

    recorder.reply(answer)
    start = clock.now()
    async with (
        MarketClient(KEY, base_url=BASE_URL, transport=recorder.transport, limiter=limiter) as c,
        clock.autojump(),
    ):
        with pytest.raises(RateLimited):
            await c.search_items_by_name(["A"], lane=Lane.BUY)
        await c.search_items_by_name(["A"], lane=Lane.BUY)
    assert [t - start for t in sent_at] == [0.0, 30.0]


@pytest.mark.parametrize(
    "base", ["http://replay.invalid", "https://Host.example/api/", "http://h:8080/x"]
)
def test_a_request_address_is_the_one_httpx_makes(base: str) -> None:
    from engine.client import _endpoints as ep
    from engine.client._core import _NO_BODY

    client = MarketClient(KEY, base_url=base)
    params = [("game", "csgo"), ("name", "AK | x (FN) ★ 50% +&=#?/é"), ("name", "")]
    ours = client._build(ep.SEARCH_V2, params, _NO_BODY, None)
    theirs = client._http.build_request("GET", ep.SEARCH_V2.path, params=tuple(params))
    assert ours.url == theirs.url
    assert ours.url.raw_path == theirs.url.raw_path
    assert ours.headers == theirs.headers
