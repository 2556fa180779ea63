"""Sending notices to a local receiver: delivery, signatures, retries, and a receiver that
is down (offer never waits, drops and failures are counted, secrets stay out of logs)."""

from __future__ import annotations

import logging

import anyio
import pytest

from engine import VirtualClock
from engine.client._secret import Secret
from engine.notify import (
    Delivery,
    DeliverySettings,
    TelegramChannel,
    WebhookChannel,
    halted_notice,
    verify_signature,
)

from .receiver import closed_port, receiver

TOKEN = "987654:TOKEN-THAT-MUST-NOT-LEAK"


async def test_a_webhook_notice_arrives_signed(clock: VirtualClock) -> None:
    async with receiver() as r:
        channel = WebhookChannel(f"{r.url}/hook", Secret("s3cret"), events=("halted",))
        delivery = Delivery([channel], clock=clock)
        async with anyio.create_task_group() as tg:
            tg.start_soon(delivery.run)
            delivery.offer(halted_notice("kill file exists", clock.now()))
            with anyio.fail_after(5):
                (got,) = await r.wait_for(1)
                await delivery.flush()
            tg.cancel_scope.cancel()
    assert (got.method, got.path) == ("POST", "/hook")
    assert got.json()["data"] == {"reason": "kill file exists"}
    assert verify_signature(
        b"s3cret",
        body=got.body,
        timestamp=got.headers["x-snipe-timestamp"],
        signature=got.headers["x-snipe-signature"],
        now=clock.now(),
    )
    assert delivery.stats["webhook"].sent == 1


async def test_events_a_channel_did_not_ask_for_are_not_sent(clock: VirtualClock) -> None:
    channel = WebhookChannel("http://127.0.0.1:9/x", Secret("s"), events=("purchase",))
    delivery = Delivery([channel], clock=clock, settings=DeliverySettings(queue_size=1))
    for _ in range(3):  # were they queued, the queue of one would drop two
        delivery.offer(halted_notice("x", clock.now()))
    delivery.close()
    stats = delivery.stats["webhook"]
    assert (stats.sent, stats.dropped, stats.failed) == (0, 0, 0)


@pytest.mark.parametrize(
    ("statuses", "requests", "sent", "failed"),
    [
        ((500, 503), 3, 1, 0),  # server errors are retried, with backoff
        ((429,), 2, 1, 0),  # so is "too many requests"
        ((400,), 1, 0, 1),  # a refusal is not: it would fail again
        ((500, 500, 500), 3, 0, 1),  # given up after the retries
    ],
)
async def test_retries_with_backoff_on_the_clock(
    clock: VirtualClock, statuses: tuple[int, ...], requests: int, sent: int, failed: int
) -> None:
    settings = DeliverySettings(retries=2, backoff=30.0)
    async with receiver(statuses=statuses) as r:
        channel = WebhookChannel(r.url, Secret("s"), events=("halted",))
        delivery = Delivery([channel], clock=clock, settings=settings)
        start = clock.now()
        async with clock.autojump(), anyio.create_task_group() as tg:
            tg.start_soon(delivery.run)
            delivery.offer(halted_notice("x", clock.now()))
            with anyio.fail_after(5):
                await delivery.flush()
            tg.cancel_scope.cancel()
    stats = delivery.stats["webhook"]
    assert len(r.received) == requests
    assert (stats.sent, stats.failed) == (sent, failed)
    retried = requests - 1
    assert clock.now() - start >= sum(30.0 * 2**i for i in range(retried))


async def test_a_receiver_that_is_down_costs_nothing_and_drops_are_counted(
    clock: VirtualClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    port = await closed_port()
    channel = TelegramChannel(
        Secret(TOKEN), chat_id="1", api_base=f"http://127.0.0.1:{port}", events=("halted",)
    )
    delivery = Delivery(
        [channel], clock=clock, settings=DeliverySettings(queue_size=2, retries=3, backoff=1.0)
    )
    for n in range(10):  # offer never waits, whatever the receiver does
        delivery.offer(halted_notice(f"problem {n}", clock.now()))
    stats = delivery.stats["telegram"]
    assert stats.dropped == 8
    async with clock.autojump(), anyio.create_task_group() as tg:
        tg.start_soon(delivery.run)
        with anyio.fail_after(5):
            await delivery.flush()
        tg.cancel_scope.cancel()
    assert (stats.sent, stats.failed, stats.dropped) == (0, 2, 8)
    assert stats.retries == 6
    assert stats.last_error == "ConnectError"
    assert caplog.text.count("being dropped") == 1  # once per outage, not per notice
    assert "failed" in caplog.text
    assert TOKEN not in caplog.text
    assert TOKEN.split(":")[1] not in caplog.text


async def test_a_telegram_message_is_sent_without_its_token_in_any_log(
    clock: VirtualClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with receiver() as r:
        channel = TelegramChannel(Secret(TOKEN), chat_id="-5", api_base=r.url, events=("halted",))
        delivery = Delivery([channel], clock=clock)
        async with anyio.create_task_group() as tg:
            tg.start_soon(delivery.run)
            delivery.offer(halted_notice("x", clock.now()))
            with anyio.fail_after(5):
                await delivery.flush()
            tg.cancel_scope.cancel()
    (got,) = r.received
    assert got.path == f"/bot{TOKEN}/sendMessage"
    assert got.json()["chat_id"] == "-5"
    assert delivery.stats["telegram"].sent == 1
    assert TOKEN.split(":")[1] not in caplog.text


async def test_a_channel_that_cannot_build_its_request_fails_that_notice_only(
    clock: VirtualClock,
) -> None:
    class Broken:
        name = "broken"
        events = ("halted",)

        def request(self, notice: object, now: float) -> object:
            raise KeyError("a bug in a plugin")

    async with receiver() as r:
        good = WebhookChannel(r.url, Secret("s"), events=("halted",))
        delivery = Delivery([Broken(), good], clock=clock)  # type: ignore[list-item]
        async with anyio.create_task_group() as tg:
            tg.start_soon(delivery.run)
            for _ in range(2):
                delivery.offer(halted_notice("x", clock.now()))
            with anyio.fail_after(5):
                await delivery.flush()
            tg.cancel_scope.cancel()
    broken = delivery.stats["broken"]
    assert (broken.sent, broken.failed, broken.retries) == (0, 2, 0)
    assert broken.last_error == "could not build the request (KeyError)"
    assert delivery.stats["webhook"].sent == 2
    assert len(r.received) == 2


async def test_a_discord_channel_built_from_the_rules_posts_its_embed(clock: VirtualClock) -> None:
    from engine._plugins import make_plugin_host
    from engine.notify import build_channels, purchase_notice
    from engine.rules import load_rules_text

    from .test_notify_messages import RULES, decision

    host = make_plugin_host(load_entry_points=False)
    rules = RULES.format(notify="  discord: {url_env: HOOK_URL, events: [purchase]}")
    ruleset = load_rules_text(rules, host=host)
    async with receiver() as r:
        env = {"HOOK_URL": f"{r.url}/api/webhooks/1/SECRET-PART"}
        (channel,) = build_channels(ruleset.notify, host.notifiers(), env)
        delivery = Delivery([channel], clock=clock)
        async with anyio.create_task_group() as tg:
            tg.start_soon(delivery.run)
            delivery.offer(purchase_notice(decision(image="https://img/x.png"), "bought", None, 0))
            with anyio.fail_after(5):
                await delivery.flush()
            tg.cancel_scope.cancel()
    (got,) = r.received
    assert got.path == "/api/webhooks/1/SECRET-PART"
    (embed,) = got.json()["embeds"]
    assert embed["title"] == "Bought AK-47 | Redline (FT) for $7.50"
    assert embed["image"] == {"url": "https://img/x.png"}
    assert "SECRET-PART" not in repr(channel)
