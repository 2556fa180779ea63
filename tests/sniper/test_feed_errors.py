"""An error the feed's client did not plan for (found from outside: it made the feed
"unavailable" for the rest of the run, the snapshot polling alone for good): it is
logged once per kind with the error named and no key, counted, the snapshot stands in,
and the client is run again after its own backoff on the engine's clock; the new
connection is healed as after any reconnection. ``auto`` still gives up a feed that
never answers (both backends, the sandbox served on 127.0.0.1, a virtual clock)."""

from __future__ import annotations

import logging

import anyio
import httpx
import pytest

from engine import VirtualClock
from engine.client import Backoff, FeedClient, FeedEvent
from engine.sandbox import served
from engine.sniper import EngineSettings, FeedSettings
from engine.sniper._view import feed_words

from .harness import pick_item, plant, rig, rules_text
from .test_feed_live import SETTINGS, bought_ids, drive, feed_sandbox

KEY = "sk-live-0123456789abcdef"


class FailingOnce(FeedClient):
    """A client whose reading fails with an unexpected error (its text holding a key, as
    another library's message might) the first time ``armed`` is set."""

    armed = False
    failed = 0

    def _event(
        self, name: str, payload: str | None, now: float, generation: int
    ) -> FeedEvent | None:
        if self.armed and not self.failed:
            self.failed += 1
            raise RuntimeError(f"a bug nobody planned for, near {KEY}")
        return super()._event(name, payload, now, generation)


async def test_an_unexpected_error_is_retried_and_the_new_connection_healed(
    clock: VirtualClock, caplog: pytest.LogCaptureFixture
) -> None:
    sandbox = feed_sandbox(clock)
    item = pick_item(sandbox)
    caplog.set_level(logging.INFO)
    async with (
        served(sandbox) as url,
        rig(clock, sandbox, rules_text(item.name), settings=SETTINGS) as r,
    ):
        watch = r.engine.feedwatch
        client = FailingOnce(
            url, games=["csgo"], clock=clock, api_key=KEY, backoff=Backoff(initial=0.5, cap=1.0)
        )
        watch.client = client
        async with anyio.create_task_group() as tg:
            tg.start_soon(r.engine.run)
            await drive(clock, lambda: watch.trusted, step=0.5)
            snapshots = r.engine.status.snapshots
            client.armed = True
            first = plant(sandbox, item, price=item.reference // 2)  # its event fails
            await drive(clock, lambda: watch.errors == 1)
            # down, not unavailable: the snapshot stands in at once (the clock stood still)
            view = await r.engine.view()
            assert view.feed is not None
            assert (view.feed.state, view.feed.connected) == ("down", False)
            await drive(clock, lambda: r.engine.status.snapshots > snapshots)
            # the client waits its backoff on the engine's clock, which stands still
            await anyio.sleep(0.05)
            assert (watch.connected, watch.generation) == (False, 1)
            # the deal whose event failed is found without the feed and bought (by the
            # fallback snapshot, or, when the service's snapshot was built before it and the
            # feed is back meanwhile, by the audit after the heal, as after any reconnection)
            await drive(clock, lambda: bought_ids(sandbox) == [str(first.item_id)], step=1.0)
            # the client runs again after its backoff: a new generation, healed
            await drive(clock, lambda: watch.trusted and watch.generation == 2, step=0.5)
            assert watch.gaps_healed == 2
            # after the client's backoff (Backoff(0.5): 0.25-0.5 s), on the engine's clock
            back, down = client.health().connected_since, watch.down_at
            assert back is not None
            assert down is not None
            assert back - down >= 0.25
            # and the feed is the engine's eyes again: a deal bought on its event
            second = plant(sandbox, item, price=item.reference // 2)
            await drive(clock, lambda: watch.bought_items == {str(second.item_id)})
            view = await r.engine.view()
            tg.cancel_scope.cancel()
    feed = view.feed
    assert feed is not None
    assert (feed.state, feed.errors, feed.reconnects, feed.gaps_healed) == ("trusted", 1, 1, 2)
    # named, the key redacted (another library's message might hold it)
    assert feed.last_error == "FeedClientError: RuntimeError: a bug nobody planned for, near ***"
    assert "1 errors (last FeedClientError: RuntimeError" in feed_words(feed)
    assert client.health().disconnects == {"error": 1}
    assert r.engine.status.unexpected["feed"] == 1
    assert sorted(bought_ids(sandbox)) == sorted([str(first.item_id), str(second.item_id)])
    told = [rec for rec in caplog.records if "unexpected error" in rec.getMessage()]
    assert len(told) == 1  # once, with its traceback
    assert told[0].exc_info is not None
    assert KEY not in caplog.text  # nor in the log, traceback included
    assert "feed down (error)" in caplog.text


class Raising(httpx.AsyncBaseTransport):
    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        raise RuntimeError("not a network error")


# the feed's last failure makes a snapshot due at once, and the test cancels the engine as
# soon as the feed is given up: under load that lands mid-body of the snapshot's answer, and
# httpx's own nested body generators (beyond SnapshotStream.aclose's reach) are left to
# trio's garbage-collector hook, which warns; nothing of the engine's is left open
@pytest.mark.filterwarnings(r"ignore:Async generator 'httpx\.:ResourceWarning")
async def test_auto_still_gives_up_a_feed_that_fails_before_any_handshake(
    clock: VirtualClock,
) -> None:
    sandbox = feed_sandbox(clock)
    item = pick_item(sandbox)
    settings = EngineSettings(feed=FeedSettings(mode="auto"))
    async with rig(clock, sandbox, rules_text(item.name), settings=settings) as r:
        watch = r.engine.feedwatch
        client = FeedClient(
            "http://127.0.0.1:9",
            games=["csgo"],
            clock=clock,
            transport=Raising(),
            backoff=Backoff(0.5, cap=1.0),
        )
        watch.client = client
        async with anyio.create_task_group() as tg:
            tg.start_soon(r.engine.run)
            await drive(clock, lambda: watch.unavailable, step=0.5)
            tg.cancel_scope.cancel()
        view = await r.engine.view()
    assert view.feed is not None
    assert view.feed.state == "unavailable"
    assert (view.feed.errors, client.health().attempts) == (3, 3)
    assert client.health().disconnects == {"error": 3}
