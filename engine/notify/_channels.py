"""The built-in channels: Discord webhook, Telegram bot, and a generic JSON webhook signed
with HMAC-SHA256. Each lays a :class:`Notice` out as one HTTP request (no I/O here).

Generic webhook signature: the body is signed together with a timestamp, so a captured
request cannot be replayed later::

    X-Snipe-Timestamp: 1767225600
    X-Snipe-Signature: sha256=<hex HMAC-SHA256 of b"1767225600." + body, key = the secret>

:func:`verify_signature` is what a receiver runs.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import httpx
from pydantic import Field, field_validator, model_validator

from .._errors import ConfigError
from .._notifiers import ChannelConfig, secret_from_env
from ..client import Secret
from ._events import EventKind, Notice

__all__ = [
    "DiscordChannel",
    "DiscordConfig",
    "TelegramChannel",
    "TelegramConfig",
    "WebhookChannel",
    "WebhookConfig",
    "sign",
    "verify_signature",
]

SIGNATURE_HEADER = "X-Snipe-Signature"
TIMESTAMP_HEADER = "X-Snipe-Timestamp"
EVENT_HEADER = "X-Snipe-Event"

_COLOURS = {"purchase": 0x2ECC71, "refund": 0xE67E22, "halted": 0xE74C3C, "daily_summary": 0x3498DB}


def _no_inline(data: Any, key: str, env_key: str, what: str) -> Any:
    if isinstance(data, dict) and key in data:
        raise ValueError(
            f"{what} is a secret and is never written in the rules file: remove `{key}` and "
            f"put it in an environment variable named by `{env_key}`"
        )
    return data


def _json(data: object) -> bytes:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode()


def _post(url: str, body: bytes, headers: Mapping[str, str] | None = None) -> httpx.Request:
    return httpx.Request(
        "POST",
        url,
        content=body,
        headers={"Content-Type": "application/json", "User-Agent": "snipe", **(headers or {})},
    )


def _http_url(value: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"expected an http(s) address such as 'https://host', got {value!r}")
    return value


# ---------------------------------------------------------------- Discord


class DiscordConfig(ChannelConfig):
    """``notify.discord``: the webhook address (it carries its token) is read from the
    environment variable ``url_env``."""

    url_env: str = "SNIPE_DISCORD_WEBHOOK"
    username: str = Field("snipe", min_length=1, max_length=80)

    @model_validator(mode="before")
    @classmethod
    def _secret_not_inline(cls, data: Any) -> Any:
        return _no_inline(data, "url", "url_env", "the Discord webhook address")


class DiscordChannel:
    """Posts an embed (title, lines, image) to a Discord webhook."""

    def __init__(self, url: Secret, *, username: str, events: tuple[EventKind, ...]) -> None:
        self._url = url
        self.username = username
        self.events = events
        self.name = "discord"

    def request(self, notice: Notice, now: float) -> httpx.Request:
        embed: dict[str, Any] = {
            "title": notice.title[:256],
            "description": notice.text[:4000],
            "color": _COLOURS.get(notice.kind, 0),
            "timestamp": dt.datetime.fromtimestamp(notice.at, dt.UTC).isoformat(),
        }
        if notice.image:
            embed["image"] = {"url": notice.image}
        body = {"username": self.username, "embeds": [embed], "allowed_mentions": {"parse": []}}
        return _post(self._url.reveal(), _json(body))

    def __repr__(self) -> str:
        return f"DiscordChannel(url={self._url!r})"


def build_discord(config: DiscordConfig, environ: Mapping[str, str]) -> DiscordChannel:
    url = secret_from_env(environ, config.url_env, "notify.discord.url_env")
    try:
        _http_url(url.reveal())
    except ValueError:
        raise ConfigError(
            f"the environment variable {config.url_env} does not hold an http(s) address",
            field="notify.discord.url_env",
        ) from None
    return DiscordChannel(url, username=config.username, events=config.events)


# ---------------------------------------------------------------- Telegram


class TelegramConfig(ChannelConfig):
    """``notify.telegram``: the bot token is read from the environment variable
    ``token_env``; ``chat_id`` is the chat to write to."""

    token_env: str = "SNIPE_TELEGRAM_TOKEN"
    chat_id: str = Field(min_length=1, max_length=64)
    api_base: str = "https://api.telegram.org"
    """Only for tests and self-hosted Bot API servers."""
    commands: bool = False
    """Also answer chat commands (/status, /profit, /daily, /pause, /resume, /reload)
    written in ``chat_id`` (long polling ``getUpdates``; no other chat is ever answered).
    Off by default: /pause and /reload steer buying."""

    @model_validator(mode="before")
    @classmethod
    def _secret_not_inline(cls, data: Any) -> Any:
        return _no_inline(data, "token", "token_env", "the Telegram bot token")

    @field_validator("chat_id", mode="before")
    @classmethod
    def _chat_id_text(cls, value: Any) -> Any:
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value

    @field_validator("api_base")
    @classmethod
    def _base(cls, value: str) -> str:
        return _http_url(value).rstrip("/")


class TelegramChannel:
    """``sendMessage`` through the Bot API; the token sits in the URL path, so the request
    is only ever built here and never logged."""

    def __init__(
        self,
        token: Secret,
        *,
        chat_id: str,
        api_base: str,
        events: tuple[EventKind, ...],
        commands: bool = False,
    ) -> None:
        self._token = token
        self.chat_id = chat_id
        self.api_base = api_base
        self.events = events
        self.commands = commands
        self.name = "telegram"

    def request(self, notice: Notice, now: float) -> httpx.Request:
        text = f"{notice.title}\n{notice.text}"
        if notice.image:
            text += f"\n{notice.image}"
        body = {"chat_id": self.chat_id, "text": text[:4096], "disable_notification": False}
        return self.bot_request("sendMessage", body)

    def bot_request(self, method: str, body: Mapping[str, Any]) -> httpx.Request:
        """A Bot API call (``sendMessage``, ``getUpdates``...) as a request: the only place
        the token is put in a URL. Send it through a transport, never a client that logs."""
        return _post(f"{self.api_base}/bot{self._token.reveal()}/{method}", _json(dict(body)))

    def redact(self, text: str) -> str:
        """``text`` with the token blanked, for any error text that might quote a URL."""
        return text.replace(self._token.reveal(), "<token>")

    def __repr__(self) -> str:
        return f"TelegramChannel(chat_id={self.chat_id!r}, token={self._token!r})"


def build_telegram(config: TelegramConfig, environ: Mapping[str, str]) -> TelegramChannel:
    token = secret_from_env(environ, config.token_env, "notify.telegram.token_env")
    return TelegramChannel(
        token,
        chat_id=config.chat_id,
        api_base=config.api_base,
        events=config.events,
        commands=config.commands,
    )


# ---------------------------------------------------------------- generic webhook


class WebhookConfig(ChannelConfig):
    """``notify.webhook``: JSON posted to ``url``, signed with the secret read from the
    environment variable ``secret_env`` (see the module docstring)."""

    url: str
    secret_env: str = "SNIPE_WEBHOOK_SECRET"

    @model_validator(mode="before")
    @classmethod
    def _secret_not_inline(cls, data: Any) -> Any:
        return _no_inline(data, "secret", "secret_env", "the webhook signing secret")

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        if urlsplit(value).query:
            raise ValueError("the webhook address must not carry a query (secrets go elsewhere)")
        return _http_url(value)


def sign(secret: bytes, timestamp: int, body: bytes) -> str:
    """The ``X-Snipe-Signature`` value for ``body`` sent at ``timestamp``."""
    mac = hmac.new(secret, str(timestamp).encode() + b"." + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


def verify_signature(
    secret: bytes,
    *,
    body: bytes,
    timestamp: str,
    signature: str,
    now: float,
    tolerance: float = 300.0,
) -> bool:
    """For receivers: true when ``signature`` signs ``body`` at ``timestamp`` with
    ``secret`` and the timestamp is within ``tolerance`` seconds of ``now``."""
    try:
        sent = int(timestamp)
    except ValueError:
        return False
    if abs(now - sent) > tolerance:
        return False
    return hmac.compare_digest(sign(secret, sent, body), signature)


class WebhookChannel:
    """Posts ``{"event", "at", "title", "text", "image", "data"}`` with a signature."""

    def __init__(self, url: str, secret: Secret, *, events: tuple[EventKind, ...]) -> None:
        self.url = url
        self._secret = secret
        self.events = events
        self.name = "webhook"

    def request(self, notice: Notice, now: float) -> httpx.Request:
        body = _json(
            {
                "event": notice.kind,
                "at": notice.at,
                "title": notice.title,
                "text": notice.text,
                "image": notice.image,
                "data": dict(notice.data),
            }
        )
        timestamp = int(now)
        headers = {
            EVENT_HEADER: notice.kind,
            TIMESTAMP_HEADER: str(timestamp),
            SIGNATURE_HEADER: sign(self._secret.reveal().encode(), timestamp, body),
        }
        return _post(self.url, body, headers)

    def __repr__(self) -> str:
        return f"WebhookChannel(url={self.url!r}, secret={self._secret!r})"


def build_webhook(config: WebhookConfig, environ: Mapping[str, str]) -> WebhookChannel:
    secret = secret_from_env(environ, config.secret_env, "notify.webhook.secret_env")
    return WebhookChannel(config.url, secret, events=config.events)
