"""Telling the owner: purchases, refunds, HALTED and a daily summary, sent to Discord,
Telegram or any signed JSON webhook without ever slowing buying.

Configured in the rules file's ``notify:`` section; secrets come from the environment.
Channels are plugins (``snipe_register_notifiers``), the built-in ones included.
"""

from .._notifiers import Channel, ChannelConfig, NotifierKind, secret_from_env
from ._channels import (
    DiscordChannel,
    DiscordConfig,
    TelegramChannel,
    TelegramConfig,
    WebhookChannel,
    WebhookConfig,
    build_discord,
    build_telegram,
    build_webhook,
    sign,
    verify_signature,
)
from ._delivery import ChannelStats, Delivery, DeliverySettings
from ._events import (
    EVENT_KINDS,
    DailySummary,
    EventKind,
    Notice,
    halted_notice,
    purchase_notice,
    refund_notice,
    summary_notice,
    utc_day,
)
from ._hub import NotificationHub, build_channels, build_delivery, describe_channels

__all__ = [
    "EVENT_KINDS",
    "Channel",
    "ChannelConfig",
    "ChannelStats",
    "DailySummary",
    "Delivery",
    "DeliverySettings",
    "DiscordChannel",
    "DiscordConfig",
    "EventKind",
    "Notice",
    "NotificationHub",
    "NotifierKind",
    "TelegramChannel",
    "TelegramConfig",
    "WebhookChannel",
    "WebhookConfig",
    "build_channels",
    "build_delivery",
    "build_discord",
    "build_telegram",
    "build_webhook",
    "describe_channels",
    "halted_notice",
    "purchase_notice",
    "refund_notice",
    "secret_from_env",
    "sign",
    "summary_notice",
    "utc_day",
    "verify_signature",
]
