"""The reference hub: the file beside the ledger survives a restart, price lists from a
path, an address (127.0.0.1) and GET /v1/prices are refreshed on their period with their
age known, and a failed fetch keeps the last list."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import httpx
import pytest

from engine import RateLimiter, VirtualClock
from engine.client import MarketClient
from engine.reference import ReferenceHub, store_path_for
from engine.rules._prices import ListSettings, PricesSettings
from engine.sandbox import Sandbox, SandboxConfig
from engine.testing import make_listing, rules_for

NAME = "AK-47 | Redline (Field-Tested)"
RUBY = "★ Karambit | Doppler Ruby (Factory New)"
KARAMBIT = "★ Karambit | Doppler (Factory New)"


def _view(name: str):  # type: ignore[no-untyped-def]
    return rules_for(
        f'rules:\n  - name: r\n    match: {{names: ["{NAME}"]}}\n    max_price: "1.00"\n'
    ).view(name)


async def test_learned_prices_survive_a_restart(tmp_path: Path, clock: VirtualClock) -> None:
    ledger = tmp_path / "ledger.sqlite"
    async with ReferenceHub.open(None, clock=clock, ledger=ledger) as hub:
        for i in range(30):
            hub.book.record((NAME, None), 10_000 + i * 100, clock.now() - i * 60)
            hub.book.record((KARAMBIT, "Ruby"), 900_000, clock.now() - i * 60)
        before = hub.book.stats(NAME, None, clock.now())
        ruby = hub.book.stats(KARAMBIT, "Ruby", clock.now())
    assert store_path_for(ledger) == tmp_path / "ledger.sqlite.prices.sqlite"
    assert (tmp_path / "ledger.sqlite.prices.sqlite").exists()
    clock.advance(3600)
    async with ReferenceHub.open(None, clock=clock, ledger=ledger) as again:
        assert again.book.stats(NAME, None, clock.now()) == before
        assert again.book.stats(KARAMBIT, "Ruby", clock.now()) == ruby
        # learning goes on from where it was
        again.book.record((NAME, None), 1_000, clock.now())
        stats = again.book.stats(NAME, None, clock.now())
        assert stats is not None
        assert stats.observations == 31
    async with ReferenceHub.open(None, clock=clock, ledger=ledger) as third:
        stats = third.book.stats(NAME, None, clock.now())
        assert stats is not None
        assert (stats.observations, stats.floor) == (31, 1_000)


async def test_an_in_memory_ledger_keeps_no_file(tmp_path: Path, clock: VirtualClock) -> None:
    async with ReferenceHub.open(None, clock=clock, ledger=":memory:") as hub:
        assert hub.store is None
    assert [p async for p in anyio.Path(tmp_path).iterdir()] == []


async def test_a_dry_run_reads_the_store_and_a_backtest_ignores_it(
    tmp_path: Path, clock: VirtualClock
) -> None:
    """A dry run (read-only) starts from what live runs learned but never changes the
    file; a backtest (none) neither reads it (prices learned later would reach earlier
    decisions) nor creates one."""
    ledger = tmp_path / "ledger.sqlite"
    async with ReferenceHub.open(None, clock=clock, ledger=ledger) as hub:
        for i in range(5):
            hub.book.record((NAME, None), 10_000 + i * 100, clock.now() - i * 60)
    clock.advance(60)
    async with ReferenceHub.open(None, clock=clock, ledger=ledger, store_mode="read-only") as dry:
        stats = dry.book.stats(NAME, None, clock.now())
        assert stats is not None
        assert stats.observations == 5
        dry.book.record((NAME, None), 1_000, clock.now())
    async with ReferenceHub.open(None, clock=clock, ledger=ledger, store_mode="none") as replay:
        assert replay.book.stats(NAME, None, clock.now()) is None
        replay.book.record((NAME, None), 1_000, clock.now())
    async with ReferenceHub.open(None, clock=clock, ledger=ledger) as live:
        stats = live.book.stats(NAME, None, clock.now())
        assert stats is not None
        assert (stats.observations, stats.floor) == (5, 10_000)  # nothing of the $1 kept
    elsewhere = tmp_path / "other.sqlite"
    async with ReferenceHub.open(None, clock=clock, ledger=elsewhere, store_mode="none"):
        pass
    async with ReferenceHub.open(None, clock=clock, ledger=elsewhere, store_mode="read-only"):
        pass
    assert not store_path_for(elsewhere).exists()


async def test_a_file_list_is_refreshed_on_its_period_and_its_age_known(
    tmp_path: Path, clock: VirtualClock
) -> None:
    path = tmp_path / "buff.csv"
    path.write_text(f'market_hash_name,price,phase\n"{NAME}",12.50,\n{KARAMBIT},900,Ruby\n')
    settings = PricesSettings(lists={"buff": ListSettings(path=str(path), every=3600)})
    hub = ReferenceHub(settings, clock=clock)
    start = clock.now()
    await hub.refresh_due(None, start)
    listing = make_listing(name=NAME, price=1)
    quotes = hub.quotes([listing], _view, start)
    assert quotes["file.buff"][(NAME, None)].price == 12_500
    assert quotes["file.buff"][(NAME, None)].as_of == start
    ruby = make_listing(name=RUBY, price=1, float=0.01)
    assert hub.quotes([ruby], _view, start)["file.buff"][(KARAMBIT, "Ruby")].price == 900_000
    path.write_text(f'market_hash_name,price\n"{NAME}",13\n')
    clock.advance(1800)
    await hub.refresh_due(None, clock.now())  # not due yet
    assert hub.lists["file.buff"].prices[(NAME, None)] == 12_500
    clock.advance(1800)
    await hub.refresh_due(None, clock.now())
    assert hub.lists["file.buff"].prices[(NAME, None)] == 13_000
    assert hub.lists["file.buff"].fetched_at == clock.now()


async def test_a_list_from_an_address_with_odd_rows_set_aside(clock: VirtualClock) -> None:
    body = json.dumps(
        [
            {"market_hash_name": NAME, "price": 11_000},
            {"market_hash_name": "Broken", "price": "free"},
            {"price": 5},
        ]
    )
    seen: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        return httpx.Response(200, content=body)

    url = "http://127.0.0.1:8765/prices.json"
    settings = PricesSettings(lists={"mine": ListSettings(url=url, unit="usd1000")})
    async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as http:
        hub = ReferenceHub(settings, clock=clock, http=http)
        await hub.refresh_due(None, clock.now())
    assert seen == [url]
    assert hub.lists["file.mine"].prices == {(NAME, None): 11_000}
    assert hub.set_aside["file.mine"] == 2


async def test_a_failed_fetch_keeps_the_last_list_and_says_why(
    tmp_path: Path, clock: VirtualClock
) -> None:
    path = tmp_path / "list.json"
    path.write_text(json.dumps({NAME: "10.00"}))
    settings = PricesSettings(lists={"x": ListSettings(path=str(path), every=600)})
    hub = ReferenceHub(settings, clock=clock)
    await hub.refresh_due(None, clock.now())
    fetched = hub.lists["file.x"].fetched_at
    path.write_text("{not json")
    clock.advance(600)
    await hub.refresh_due(None, clock.now())
    assert hub.lists["file.x"].prices == {(NAME, None): 10_000}
    assert hub.lists["file.x"].fetched_at == fetched  # its age keeps growing
    assert "not JSON" in hub.errors["file.x"]


async def test_the_service_list_is_fetched_when_a_rule_names_it(clock: VirtualClock) -> None:
    sandbox = Sandbox(SandboxConfig(seed=3), clock=clock)
    limiter = RateLimiter(clock)
    async with MarketClient(
        sandbox.api_key,
        base_url="http://sandbox",
        transport=httpx.ASGITransport(app=sandbox.app),
        limiter=limiter,
        clock=clock,
    ) as client:
        idle = ReferenceHub(None, clock=clock, wanted=["market.p25"])
        await idle.refresh_due(client, clock.now())
        assert idle.lists == {}
        hub = ReferenceHub(None, clock=clock, wanted=["service.platform_price"])
        await hub.refresh_due(client, clock.now())
    listing = next(iter(sandbox.market.listings.values()))
    table = hub.lists["service.platform_price"].prices
    key = (listing.name, listing.phase)
    assert table[key] == listing.platform_price
    assert hub.lists["service.min"].prices[key] <= listing.price
    assert limiter.usage("search")[0] == 0


async def test_an_unexpected_failure_of_a_list_never_stops_the_hub(clock: VirtualClock) -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        raise RuntimeError("a bug somewhere below")

    settings = PricesSettings(lists={"x": ListSettings(url="http://127.0.0.1:1/p.json")})
    async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as http:
        hub = ReferenceHub(settings, clock=clock, http=http)
        await hub.refresh_due(None, clock.now())
    assert "a bug somewhere below" in hub.errors["file.x"]
    assert hub.lists == {}


async def test_a_key_in_a_list_address_stays_out_of_logs_and_errors(
    clock: VirtualClock, caplog: pytest.LogCaptureFixture
) -> None:
    answers = [httpx.Response(200, content=b"{broken"), httpx.Response(503)]

    def answer(request: httpx.Request) -> httpx.Response:
        if not answers:
            raise httpx.ConnectError(f"cannot reach {request.url}", request=request)
        return answers.pop(0)

    url = "http://127.0.0.1:8765/prices.json?key=s3cret-token"
    settings = PricesSettings(lists={"x": ListSettings(url=url, every=600)})
    async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as http:
        hub = ReferenceHub(settings, clock=clock, http=http)
        for words in ("not JSON", "HTTP 503", "ConnectError"):
            await hub.refresh_due(None, clock.now())
            assert words in hub.errors["file.x"]
            assert "s3cret" not in hub.errors["file.x"]
            assert "127.0.0.1:8765/prices.json?..." in hub.errors["file.x"]
            clock.advance(600)
    assert "s3cret" not in caplog.text
