"""What a notifier plugin provides: a :class:`NotifierKind` (a key of the rules file's
``notify:`` section, the model validating its value, and ``build`` turning the validated
value into a :class:`Channel`). The built-in Discord, Telegram and webhook notifiers are
registered through ``snipe_register_notifiers`` exactly like a third-party one.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import httpx
from pydantic import BaseModel, ConfigDict, Field

from ._errors import ConfigError
from ._events import EVENT_KINDS, EventKind, Notice
from .client import Secret

__all__ = ["Channel", "ChannelConfig", "NotifierKind", "secret_from_env"]


class ChannelConfig(BaseModel):
    """Keys every channel has. Subclass it for a notifier's own keys; unknown keys are
    errors. Secrets are never written here: a channel names the environment variable that
    holds them (``..._env``)."""

    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)

    events: tuple[EventKind, ...] = Field(default=EVENT_KINDS, min_length=1)
    """Which events this channel receives (default: all)."""


@runtime_checkable
class Channel(Protocol):
    """One configured receiver. ``request`` is pure: it lays a notice out as the HTTP
    request the receiver expects (the delivery queue sends it). ``name`` appears in logs
    and metrics, so it must not contain a secret."""

    name: str
    events: tuple[EventKind, ...]

    def request(self, notice: Notice, now: float) -> httpx.Request: ...


@dataclass(frozen=True)
class NotifierKind:
    """A notifier plugin's contribution: ``notify.<key>`` in the rules file is validated
    by ``schema`` (a :class:`ChannelConfig` subclass) and turned into a channel by
    ``build(config, environ)``, which raises :class:`~engine.ConfigError` naming the
    environment variable when a secret is missing."""

    key: str
    schema: type[ChannelConfig]
    build: Callable[[Any, Mapping[str, str]], Channel]
    description: str = ""
    plugin: str = ""


def secret_from_env(environ: Mapping[str, str] | None, variable: str, field: str) -> Secret:
    """The secret in the environment variable ``variable``; a :class:`ConfigError` naming
    the variable and ``field`` (never a value) when it is unset or empty."""
    value = (os.environ if environ is None else environ).get(variable, "").strip()
    if not value:
        raise ConfigError(f"the environment variable {variable} is not set", field=field)
    return Secret(value)
