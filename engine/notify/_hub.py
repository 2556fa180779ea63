"""The notification plugin of one engine run: engine events in, notices on the queues.

:class:`NotificationHub` is registered in the engine's plugin host for the run, so it
hears the same hooks as any plugin (``snipe_purchase``, ``snipe_refund``,
``snipe_halted``, ``snipe_daily_summary``); each hook only builds a notice and offers it
(never waits). :func:`build_delivery` turns the rules file's ``notify:`` section into the
channels.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import httpx

from .._clock import Clock
from .._errors import ConfigError
from .._notifiers import Channel, NotifierKind
from ..hookspecs import hookimpl
from ..rules import NotifyCore, criterion_values
from ._delivery import Delivery, DeliverySettings
from ._events import (
    DailySummary,
    halted_notice,
    purchase_notice,
    refund_notice,
    summary_notice,
)

if TYPE_CHECKING:
    from ..ledger import Purchase
    from ..rules import Decision

__all__ = ["NotificationHub", "build_channels", "build_delivery", "describe_channels"]

NOTIFIED_OUTCOMES = frozenset({"bought", "unknown"})
"""Purchase outcomes worth a message: money left, or may have."""


class NotificationHub:
    """A plugin object: turns engine events into notices for :class:`Delivery`."""

    def __init__(self, delivery: Delivery, clock: Clock) -> None:
        self.delivery = delivery
        self._clock = clock

    @hookimpl
    def snipe_purchase(self, decision: Decision, outcome: str, detail: str | None) -> None:
        if outcome in NOTIFIED_OUTCOMES:
            self.delivery.offer(purchase_notice(decision, outcome, detail, self._clock.now()))

    @hookimpl
    def snipe_refund(self, purchase: Purchase, reason: str | None) -> None:
        self.delivery.offer(refund_notice(purchase, reason, self._clock.now()))

    @hookimpl
    def snipe_halted(self, reason: str) -> None:
        self.delivery.offer(halted_notice(reason, self._clock.now()))

    @hookimpl
    def snipe_daily_summary(self, summary: DailySummary) -> None:
        self.delivery.offer(summary_notice(summary, self._clock.now()))

    def __repr__(self) -> str:
        return f"<NotificationHub channels={[c.name for c in self.delivery.channels]}>"


def build_channels(
    notify: NotifyCore | None,
    kinds: Sequence[NotifierKind],
    environ: Mapping[str, str] | None = None,
) -> list[Channel]:
    """The channels the ``notify:`` section configures, built by their plugins. A missing
    secret raises :class:`~engine.ConfigError` naming the environment variable."""
    if notify is None:
        return []
    by_key = {k.key: k for k in kinds}
    channels: list[Channel] = []
    for key, config in criterion_values(notify).items():
        kind = by_key[key]
        try:
            channel = kind.build(config, environ if environ is not None else _environ())
        except ConfigError:
            raise
        except Exception as exc:  # a plugin's bug is named, never a secret it may hold
            raise ConfigError(
                f"notifier plugin {kind.plugin!r} failed to build: {type(exc).__name__}",
                field=f"notify.{key}",
            ) from None
        channels.append(channel)
    return channels


def build_delivery(
    notify: NotifyCore | None,
    kinds: Sequence[NotifierKind],
    *,
    clock: Clock,
    environ: Mapping[str, str] | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
) -> Delivery:
    """A :class:`Delivery` for the ``notify:`` section (no channels when there is none)."""
    channels = build_channels(notify, kinds, environ)
    core = notify or NotifyCore()
    settings = DeliverySettings(
        queue_size=core.queue_size,
        retries=core.retries,
        backoff=core.backoff,
        timeout=core.timeout,
    )
    return Delivery(channels, clock=clock, settings=settings, transport=transport)


def describe_channels(
    notify: NotifyCore | None, environ: Mapping[str, str] | None = None
) -> list[str]:
    """One line per configured channel for a summary: its key and, for every environment
    variable it reads (``*_env``), whether that is set now (never the value)."""
    if notify is None:
        return []
    env = environ if environ is not None else _environ()
    lines = []
    for key, config in criterion_values(notify).items():
        names = [
            str(getattr(config, field))
            for field in type(config).model_fields
            if field.endswith("_env")
        ]
        states = ", ".join(f"{n} {'set' if env.get(n) else 'not set now'}" for n in names)
        line = f"{key} ({states})" if states else key
        if getattr(config, "commands", False) is True:
            line += f"; answers chat commands in chat {config.chat_id} only"
        lines.append(line)
    return lines


def _environ() -> Mapping[str, str]:
    import os

    return os.environ
