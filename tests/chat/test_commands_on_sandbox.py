"""Chat commands against a fake Bot API on 127.0.0.1 and an engine on the in-process
sandbox, on one virtual clock, on asyncio and trio: answered in the configured chat only,
/pause stops buying until /resume, a broken /reload is refused with its file:line:column
while the old rules keep buying, and the bot token is never in a log line or an answer."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import anyio
import httpx
import pytest
from sniper.harness import Rig, pick_item, plant, purchases_of, quiet_sandbox, rig, rules_text

from engine import VirtualClock
from engine.chat import BotSettings, CommandBot
from engine.notify import TelegramChannel, TelegramConfig, build_telegram
from engine.ops import OpsSettings, operations
from engine.rules import load_rules

from .fake_bot_api import BASE, CHAT, TOKEN, FakeBotAPI

pytestmark = pytest.mark.anyio


def channel(token: str = TOKEN) -> TelegramChannel:
    config = TelegramConfig(chat_id=CHAT, api_base=BASE, commands=True)
    return build_telegram(config, {"SNIPE_TELEGRAM_TOKEN": token})


async def run_with_bot(r: Rig, bot: CommandBot, duration: float) -> None:
    """The engine for ``duration`` (engine clock) with the command loop beside it."""
    async with r.clock.autojump(), anyio.create_task_group() as tg:
        tg.start_soon(bot.run)
        await r.engine.run(duration=duration)
        tg.cancel_scope.cancel()


async def test_status_is_answered_in_the_configured_chat_and_a_stranger_is_ignored(
    clock: VirtualClock,
) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    fake = FakeBotAPI(clock)
    start = clock.now()
    fake.say("/status", at=start + 30, chat="999", user="stranger")
    fake.say("/pause", at=start + 31, chat="999", user="stranger")
    fake.say("/status", at=start + 60)
    async with rig(clock, sandbox, rules_text(item.name)) as r:
        bot = CommandBot(r.engine, channel(), transport=fake.transport)
        await run_with_bot(r, bot, 120)
        assert r.engine.status.paused is None  # the stranger's /pause did nothing
        assert await r.ledger.control_events() == []
    assert [str(b["chat_id"]) for b in fake.sent] == [CHAT]
    (answer,) = fake.answers()
    assert answer.startswith("snipe running")
    assert "of $1,000.00 total" in answer
    assert bot.stats.ignored == 2
    assert bot.stats.answered == 1
    assert bot.offset == 1003  # past the three updates: each is read once


async def test_pause_stops_buying_until_resume(clock: VirtualClock) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    deal = plant(sandbox, item, price=item.reference // 2)
    fake = FakeBotAPI(clock)
    start = clock.now()
    fake.say("/pause")  # before the engine's first search
    fake.say("/resume", at=start + 300)
    async with rig(clock, sandbox, rules_text(item.name)) as r:
        bot = CommandBot(r.engine, channel(), transport=fake.transport)
        await run_with_bot(r, bot, 600)
        (purchase,) = await r.ledger.purchases()
        events = await r.ledger.control_events()
    assert purchase.created_at >= start + 300  # nothing bought while paused
    assert [str(p["item_id"]) for p in purchases_of(sandbox)] == [str(deal.item_id)]
    assert [(e.action, e.outcome) for e in events] == [("pause", "paused"), ("resume", "resumed")]
    assert all(e.actor == f"telegram chat {CHAT} user owner" for e in events)
    assert events[0].at == start
    paused, resumed = fake.answers()
    assert "buying paused" in paused
    assert resumed == "buying resumed"


async def test_a_paused_engine_searches_but_sends_no_purchase(clock: VirtualClock) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    plant(sandbox, item, price=item.reference // 2)
    fake = FakeBotAPI(clock)
    fake.say("/pause")
    fake.say("/status", at=clock.now() + 200)
    async with rig(clock, sandbox, rules_text(item.name)) as r:
        bot = CommandBot(r.engine, channel(), transport=fake.transport)
        await run_with_bot(r, bot, 400)
        assert await r.ledger.purchases() == []
        assert r.engine.status.searches > 0
    assert purchases_of(sandbox) == []
    status = fake.answers()[-1]
    assert status.startswith("snipe paused: paused from Telegram by owner")


async def test_a_broken_reload_is_refused_with_its_place_and_the_old_rules_keep_buying(
    clock: VirtualClock, tmp_path: Path
) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    path = tmp_path / "rules.yaml"
    path.write_text(rules_text(item.name))
    fake = FakeBotAPI(clock)
    fake.say("/reload")
    async with rig(clock, sandbox, rules_text(item.name)) as r:
        r.engine.replace_rules(load_rules(path, host=r.host))  # run from the file
        old = r.engine.ruleset
        path.write_text(rules_text(item.name) + "  - name: [unclosed\n")
        deal = plant(sandbox, item, price=item.reference // 2)
        bot = CommandBot(r.engine, channel(), transport=fake.transport)
        await run_with_bot(r, bot, 600)
        assert r.engine.ruleset is old
        (purchase,) = await r.ledger.purchases()
        (event,) = await r.ledger.control_events()
    assert purchase.item_id == str(deal.item_id)
    (answer,) = fake.answers()
    assert answer.startswith("reload refused, the running rules are kept:")
    assert re.search(rf"{re.escape(str(path))}:\d+:\d+", answer), answer
    assert (event.action, event.outcome) == ("reload", "refused")
    assert str(path) in event.details["error"]


async def test_a_valid_reload_runs_the_new_rules(clock: VirtualClock, tmp_path: Path) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    path = tmp_path / "rules.yaml"
    path.write_text(rules_text(item.name))
    fake = FakeBotAPI(clock)
    fake.say("/reload", at=clock.now() + 10)
    async with rig(clock, sandbox, rules_text(item.name)) as r:
        r.engine.replace_rules(load_rules(path, host=r.host))
        path.write_text(rules_text(item.name).replace("name: deals", "name: cheaper"))
        bot = CommandBot(r.engine, channel(), transport=fake.transport)
        await run_with_bot(r, bot, 60)
        assert [rule.name for rule in r.engine.ruleset.rules] == ["cheaper"]
    assert fake.answers() == ["rules reloaded (1): cheaper"]


async def test_commands_are_rate_limited_and_stale_ones_not_acted_upon(
    clock: VirtualClock,
) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    fake = FakeBotAPI(clock)
    now = clock.now()
    fake.say("/pause", at=now + 1, written=now - 3600)  # written while snipe was down
    for _ in range(5):
        fake.say("/status", at=now + 10)
    async with rig(clock, sandbox, rules_text(item.name)) as r:
        settings = BotSettings(max_commands=3, window=60.0)
        bot = CommandBot(r.engine, channel(), transport=fake.transport, settings=settings)
        await run_with_bot(r, bot, 30)
        assert r.engine.status.paused is None
    answers = fake.answers()
    assert len(answers) == 4
    assert answers[-1] == "too many commands: at most 3 a minute"
    assert (bot.stats.stale, bot.stats.rate_limited) == (1, 2)


async def test_the_token_is_never_logged_nor_answered(
    clock: VirtualClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    fake = FakeBotAPI(clock)
    url = f"{BASE}/bot{TOKEN}/getUpdates"
    fake.fail_next = [
        httpx.ConnectError(f"cannot reach {url}", request=httpx.Request("POST", url)),
        502,
        429,
    ]
    fake.say("/status", at=clock.now() + 100)
    fake.say("/nonsense", at=clock.now() + 100)
    fake.say("/daily", at=clock.now() + 100)
    fake.say("/profit", at=clock.now() + 100)
    async with rig(clock, sandbox, rules_text(item.name)) as r:
        bot = CommandBot(r.engine, channel(), transport=fake.transport)
        await run_with_bot(r, bot, 200)
        assert TOKEN not in repr(bot.channel)
    assert bot.stats.failures == 3
    assert fake.calls[:4] == ["getUpdates"] * 4  # asked again after each failure
    answers = fake.answers()
    assert len(answers) == 4
    assert answers[1].startswith("unknown command /nonsense")
    assert "daily summary" in answers[2]
    assert answers[3].startswith("snipe profit as of")
    assert "ConnectError" in caplog.text
    secret = TOKEN.split(":")[1]
    for text in [caplog.text, *answers, str(bot.stats)]:
        assert secret not in text


NOTIFY = f"""
notify:
  telegram:
    chat_id: {CHAT}
    api_base: "{BASE}"
    events: [halted]
"""


@pytest.mark.parametrize("enabled", [True, False])
async def test_snipe_run_operations_start_the_commands_only_when_enabled(
    clock: VirtualClock, enabled: bool
) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    fake = FakeBotAPI(clock)
    fake.say("/status", at=clock.now() + 5)
    notify = NOTIFY + ("    commands: true\n" if enabled else "")
    settings = OpsSettings(environ={"SNIPE_TELEGRAM_TOKEN": TOKEN}, notify_transport=fake.transport)
    async with rig(clock, sandbox, rules_text(item.name, extra=notify)) as r:
        async with clock.autojump(), operations(r.engine, settings) as ops:
            await r.engine.run(duration=60)
        assert (ops.chat is not None) is enabled
    if enabled:
        (answer,) = fake.answers()
        assert answer.startswith("snipe running")
    else:
        assert "getUpdates" not in fake.calls
        assert fake.sent == []
