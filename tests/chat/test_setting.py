"""``notify.telegram.commands``: off unless asked for, said by ``snipe check``, and the
only place the token goes into a URL is the channel's request builder."""

from __future__ import annotations

import json

import pytest

from engine._plugins import make_plugin_host
from engine.notify import TelegramConfig, build_telegram, describe_channels
from engine.rules import load_rules_text

from .fake_bot_api import TOKEN

RULES = """
version: 1
account:
  base_url: "http://127.0.0.1:9"
  trade_link: "https://steamcommunity.com/tradeoffer/new/?partner=123456789&token=AbCdEfGh"
budgets: {{per_day: "5.00", total: "10.00"}}
rules:
  - name: r
    match: {{names: ["AK-47 | Redline (Field-Tested)"]}}
    max_price: "1.00"
notify:
  telegram: {{chat_id: 42{extra}}}
"""


@pytest.mark.parametrize(
    ("extra", "commands", "said"),
    [
        ("", False, None),
        (", commands: false", False, None),
        (", commands: true", True, "answers chat commands in chat 42 only"),
    ],
)
def test_commands_are_off_unless_enabled(extra: str, commands: bool, said: str | None) -> None:
    host = make_plugin_host(load_entry_points=False)
    ruleset = load_rules_text(RULES.format(extra=extra), "n.yaml", host=host)
    assert ruleset.notify is not None
    (line,) = describe_channels(ruleset.notify, {"SNIPE_TELEGRAM_TOKEN": TOKEN})
    assert line.startswith("telegram (SNIPE_TELEGRAM_TOKEN set)")
    assert (said in line) if said else ("commands" not in line)
    channel = build_telegram(
        TelegramConfig(chat_id="42", commands=commands), {"SNIPE_TELEGRAM_TOKEN": TOKEN}
    )
    assert channel.commands is commands


def test_bot_requests_carry_the_token_in_the_path_only_and_redact_it() -> None:
    channel = build_telegram(TelegramConfig(chat_id="42"), {"SNIPE_TELEGRAM_TOKEN": TOKEN})
    request = channel.bot_request("getUpdates", {"offset": 5, "timeout": 50})
    assert request.url.path == f"/bot{TOKEN}/getUpdates"
    assert json.loads(request.content) == {"offset": 5, "timeout": 50}
    assert TOKEN not in request.content.decode()
    assert channel.redact(f"failed: {request.url}") == (
        "failed: https://api.telegram.org/bot<token>/getUpdates"
    )
    assert TOKEN not in repr(channel)
