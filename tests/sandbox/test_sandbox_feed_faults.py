"""The feed's faults on demand (``feed:`` in a scenario file, or ``Sandbox.inject_feed``),
each seen from a client over a real socket, on both backends, with permessage-deflate
negotiated and with plain frames."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from httpx_ws import WebSocketDisconnect
from sandbox_feed_support import advance_until, feed

from engine import ConfigError, VirtualClock
from engine.sandbox import (
    FeedConfig,
    FeedFault,
    MarketConfig,
    Sandbox,
    SandboxConfig,
    load_scenario,
    served,
)
from engine.sandbox._feed import MALFORMED, change_frame

QUIET = FeedConfig(ping_interval=1e6, ping_timeout=1e6)


@pytest.fixture(params=[True, False], ids=["deflate", "plain"])
def deflate(request: pytest.FixtureRequest) -> bool:
    """Whether the client offers permessage-deflate (hypercorn accepts it when offered)."""
    return bool(request.param)


def _sandbox(clock: VirtualClock, feed_config: FeedConfig = QUIET) -> Sandbox:
    config = SandboxConfig(seed=3, market=MarketConfig(size=800), feed=feed_config)
    return Sandbox(config, clock=clock)


async def _frames_for(sandbox: Sandbox, clock: VirtualClock, seconds: float) -> list[str]:
    """What the feed should send to a csgo subscriber over the next ``seconds``, the
    market being played in one go."""
    start = sandbox.market.changes.cursor
    clock.advance(seconds)
    sandbox.advance()
    changes, _, _ = sandbox.market.changes.read(start)
    return [change_frame(c) for c in changes if c.listing.game == "csgo"]


async def test_duplicated_events_come_twice(clock: VirtualClock, deflate: bool) -> None:
    sandbox = _sandbox(clock)
    sandbox.inject_feed("duplicate", probability=1.0)
    async with served(sandbox) as url, feed(url, deflate=deflate) as client:
        await client.join("csgo")
        wanted = await _frames_for(sandbox, clock, 900.0)
        got = [await client.frame() for _ in range(2 * len(wanted))]
    assert len(wanted) > 2
    assert got == [frame for frame in wanted for _ in range(2)]


async def test_an_event_held_back_comes_after_the_next(clock: VirtualClock, deflate: bool) -> None:
    sandbox = _sandbox(clock)
    sandbox.inject_feed("out_of_order", count=1)
    async with served(sandbox) as url, feed(url, deflate=deflate) as client:
        await client.join("csgo")
        wanted = await _frames_for(sandbox, clock, 900.0)
        got = [await client.frame() for _ in wanted]
    assert len(wanted) > 2
    assert got == [wanted[1], wanted[0], *wanted[2:]]


async def test_malformed_frames_come_between_the_good_ones(
    clock: VirtualClock, deflate: bool
) -> None:
    sandbox = _sandbox(clock)
    sandbox.inject_feed("malformed", count=len(MALFORMED))
    async with served(sandbox) as url, feed(url, deflate=deflate) as client:
        await client.join("csgo")
        wanted = await _frames_for(sandbox, clock, 1800.0)
        got = [await client.frame() for _ in range(len(wanted) + len(MALFORMED))]
    assert len(wanted) > len(MALFORMED)
    interleaved = [f for pair in zip(MALFORMED, wanted, strict=False) for f in pair]
    assert got == interleaved + wanted[len(MALFORMED) :]
    for bad in MALFORMED:  # each is broken in a way a decoder must survive
        try:
            name, payload = json.loads(bad[2:]) if bad.startswith("42") else (None, None)
        except ValueError:
            continue
        assert not (isinstance(payload, dict) and isinstance(payload.get("price"), int))
        del name


async def test_an_abrupt_disconnect_says_no_goodbye(clock: VirtualClock, deflate: bool) -> None:
    sandbox = _sandbox(clock)
    sandbox.inject_feed("disconnect", count=1)
    async with served(sandbox) as url, feed(url, deflate=deflate) as client:
        await client.join("csgo")
        await advance_until(clock, lambda: bool(sandbox.feed.faults_fired))
        with pytest.raises(WebSocketDisconnect) as closed:
            await client.frame()  # no "41" or "1" first: the socket just ends
    assert closed.value.code == 1011
    assert sandbox.feed.connections == 0


def _handshake_time(payload: dict[str, str]) -> float:
    when = datetime.strptime(payload["server_time"], "%Y-%m-%dT%H:%M:%SZ")
    return when.replace(tzinfo=UTC).timestamp()


async def test_a_stall_sends_nothing_not_even_pings_and_keeps_the_socket(
    clock: VirtualClock,
    deflate: bool,
) -> None:
    sandbox = _sandbox(clock, FeedConfig(ping_interval=10.0, ping_timeout=1e6))
    sandbox.inject_feed("stall", count=1, seconds=120.0)
    async with served(sandbox) as url, feed(url, deflate=deflate) as client:
        await client.join("csgo")
        await advance_until(clock, lambda: bool(sandbox.feed.faults_fired), step=1.0)
        stalled_at = sandbox.feed.faults_fired[0]["at"]
        await client.ws.send_text('42["sub",{"name":"rust"}]')  # answered only after
        await advance_until(clock, lambda: clock.now() >= stalled_at + 119.0, step=1.0)
        assert sandbox.feed.connections == 1  # silent, yet open
        clock.advance(5.0)
        event = await client.event()
        while event[0] != "handshake":
            event = await client.event()
        assert event[1]["game"] == "rust"
    assert _handshake_time(event[1]) >= stalled_at + 120.0 - 1.0
    assert client.pings_answered <= 2  # not one every 10 s while stalled


async def test_a_burst_sends_thousands_of_events_per_second(
    clock: VirtualClock, deflate: bool
) -> None:
    sandbox = _sandbox(clock)
    sandbox.inject_feed("burst", count=1, rate=3000, seconds=0.2)  # 600 events
    async with served(sandbox) as url, feed(url, deflate=deflate) as client:
        await client.join("csgo")
        await advance_until(clock, lambda: bool(sandbox.feed.faults_fired))
        burst_at = clock.now()
        first = await client.event()
        clock.advance(0.2)
        burst = await client.events(600)
    assert first[0] in ("new", "update", "removed")
    assert {name for name, _ in burst} == {"update"}
    assert {payload["game"] for _, payload in burst} == {"csgo"}
    assert clock.now() - burst_at <= 0.2 + 1e-6  # 600 events in 0.2 market seconds


async def test_a_departed_listing_comes_back_but_a_bought_one_does_not(
    clock: VirtualClock,
    deflate: bool,
) -> None:
    sandbox = _sandbox(clock)
    sandbox.inject_feed("relist", probability=1.0, seconds=30.0)
    on_sale = sandbox.market.listings.values()
    bought = min(
        (li for li in on_sale if li.game == "csgo" and not li.locked(clock.now())),
        key=lambda li: li.price,
    )
    account = sandbox.default_account
    async with served(sandbox) as url, feed(url, deflate=deflate) as client:
        await client.join("csgo")
        async with httpx.AsyncClient(base_url=url) as http:
            answer = await http.get(
                "/v1/buy-one-p2p",
                params={
                    "api": sandbox.api_key, "item_id": str(bought.item_id),
                    "price": bought.price, "partner": account.partner,
                    "token": account.token, "project_id": "relist-1",
                },
            )  # fmt: skip
            assert answer.json()["success"] is True
        assert (await client.event())[0] == "removed"
        wanted = await _frames_for(sandbox, clock, 3600.0)
        got = [await client.frame() for _ in wanted]
    assert got == wanted
    events = [json.loads(frame[2:]) for frame in got]
    gone = {p["item_id"]: p["price"] for name, p in events if name == "removed"}
    back = {
        p["item_id"]: p["price"] for name, p in events if name == "new" and p["item_id"] in gone
    }
    assert back  # removals are not sales: they come back under the same id
    assert all(0.9 * gone[i] - 1 <= price <= 1.1 * gone[i] + 1 for i, price in back.items())
    assert str(bought.item_id) not in back


def test_feed_faults_and_heartbeat_come_from_the_scenario_file(tmp_path: Path) -> None:
    path = tmp_path / "feed.yaml"
    path.write_text(
        "feed:\n"
        "  ping_interval: 5\n"
        "  ping_timeout: 2\n"
        "  faults:\n"
        "    - {kind: stall, after: 100, count: 1, seconds: 120}\n"
        "    - {kind: burst, count: 1, rate: 3000}\n"
    )
    sandbox = Sandbox(SandboxConfig(market=MarketConfig(size=10)), scenario=path)
    assert (sandbox.config.feed.ping_interval, sandbox.config.feed.ping_timeout) == (5.0, 2.0)
    assert len(sandbox.feed_faults) == 2
    assert load_scenario(path).feed.faults[1].delay == 1.0


def test_a_bad_feed_fault_is_named_with_its_place(tmp_path: Path) -> None:
    path = tmp_path / "feed.yaml"
    path.write_text("feed:\n  faults:\n    - kind: stall\n      count: 1\n    - kind: explode\n")
    with pytest.raises(ConfigError) as error:
        load_scenario(path)
    assert f"{path}:5:" in str(error.value)
    assert "kind" in str(error.value)


def test_the_shipped_feed_scenario_has_one_fault_of_each_kind() -> None:
    example = Path(__file__).parents[2] / "docs" / "feed-faults.example.yaml"
    kinds = [fault.kind for fault in load_scenario(example).feed.faults]
    assert sorted(kinds) == sorted(FeedFault.model_fields["kind"].annotation.__args__)


async def test_feed_faults_can_be_armed_and_disarmed_over_http(
    clock: VirtualClock, deflate: bool
) -> None:
    sandbox = _sandbox(clock)
    transport = httpx.ASGITransport(app=sandbox.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://sandbox") as http:
        armed = await http.post(
            "/_sandbox/feed-faults", json={"kind": "stall", "count": 1, "seconds": 120}
        )
        refused = await http.post("/_sandbox/feed-faults", json={"kind": "stall"})
        assert len(sandbox.feed_faults) == 1
        assert len(sandbox.faults) == 0
        disarmed = await http.delete("/_sandbox/feed-faults")
    assert armed.json()["armed"] == {
        "kind": "stall", "count": 1, "after": 0, "seconds": 120.0, "rate": 3000
    }  # fmt: skip
    assert refused.status_code == 400
    assert "count" in refused.json()["msg"]
    assert disarmed.json() == {"success": True, "disarmed": 1}
    assert len(sandbox.feed_faults) == 0
