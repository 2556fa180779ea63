"""The built-in notifiers, registered through ``snipe_register_notifiers`` exactly like a
third-party plugin (see :data:`engine.builtin.BUILTIN_PLUGINS`)."""

from __future__ import annotations

from ..hookspecs import hookimpl
from ..notify import (
    DiscordConfig,
    NotifierKind,
    TelegramConfig,
    WebhookConfig,
    build_discord,
    build_telegram,
    build_webhook,
)

__all__ = ["snipe_register_notifiers"]


@hookimpl
def snipe_register_notifiers() -> list[NotifierKind]:
    return [
        NotifierKind(
            "discord", DiscordConfig, build_discord, "a Discord channel, through its webhook"
        ),
        NotifierKind("telegram", TelegramConfig, build_telegram, "a Telegram chat, through a bot"),
        NotifierKind(
            "webhook", WebhookConfig, build_webhook, "any HTTP receiver: JSON signed with HMAC"
        ),
    ]
