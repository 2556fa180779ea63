"""Chat commands on the Telegram channel: a long-poll loop on the Bot API.

:class:`CommandBot` asks ``getUpdates`` (with the next ``offset`` and a long-poll
``timeout``) again and again, and answers each command with ``sendMessage``, only when it
was written in the configured chat: any other chat is ignored and counted, never
answered (a bot's name is easy to find, and /pause must not be anyone's). Commands are
rate-limited, and a command older than ``max_age`` (written while snipe was down) is not
acted upon: a stale /resume must not undo a pause.

The token sits in the URL path: requests are built by the channel
(:meth:`~engine.notify.TelegramChannel.bot_request`) and sent through the transport
directly (an httpx client logs every URL), and failures are reported by their type and
HTTP status only, redacted besides. Backoff after a failure is on the injected clock.

Decoding is per item: an update that cannot be read is set aside and counted, the others
are handled.
"""

from __future__ import annotations

import json
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
import httpx

from .._clock import Clock
from ..ledger import utc_day_start
from ..portfolio import value_ledger
from ..sniper import controls, daily_summary
from ._answers import (
    Command,
    daily_answer,
    help_answer,
    parse_command,
    pause_answer,
    profit_answer,
    reload_answer,
    resume_answer,
    status_answer,
    unknown_answer,
)

if TYPE_CHECKING:
    from ..notify import TelegramChannel
    from ..sniper import Engine

__all__ = ["BotAPIError", "BotSettings", "BotStats", "CommandBot", "Update", "decode_updates"]

log = logging.getLogger("snipe.chat")

MAX_TEXT = 4096
"""Telegram's limit for one message."""


@dataclass(frozen=True)
class BotSettings:
    poll_timeout: int = 50
    """Seconds the Bot API may hold a ``getUpdates`` call open (long polling)."""
    backoff: float = 2.0
    """Seconds (engine clock) before polling again after a failure; doubled each time."""
    max_backoff: float = 300.0
    idle: float = 1.0
    """Seconds (engine clock) before polling again after an empty answer, so a server
    that does not hold the call open is not asked in a tight loop."""
    max_commands: int = 10
    """Commands answered per ``window`` seconds; more are dropped (and counted)."""
    window: float = 60.0
    max_age: float = 300.0
    """A command written longer ago than this (engine clock) is not acted upon."""
    send_attempts: int = 3


@dataclass
class BotStats:
    polls: int = 0
    answered: int = 0
    ignored: int = 0
    """Updates from chats other than the configured one (never answered)."""
    stale: int = 0
    rate_limited: int = 0
    set_aside: int = 0
    """Updates that could not be read."""
    failures: int = 0
    """Failed ``getUpdates`` or ``sendMessage`` calls."""
    last_error: str | None = None
    strangers: set[str] = field(default_factory=set)
    """Chat ids seen writing to the bot (bounded; each is logged once)."""


@dataclass(frozen=True)
class Update:
    update_id: int
    chat_id: str | None
    """``None`` for an update that is not a message (an edit, a callback...)."""
    who: str
    text: str | None
    date: float | None


class BotAPIError(Exception):
    """A Bot API call failed; ``description`` is safe to log (no URL, no token)."""

    def __init__(self, description: str, *, wait: float | None = None) -> None:
        super().__init__(description)
        self.description = description
        self.wait = wait


def _update(item: Any) -> Update:
    update_id = item["update_id"]
    if not isinstance(update_id, int) or isinstance(update_id, bool):
        raise TypeError("update_id")
    message = item.get("message")
    if not isinstance(message, dict):
        return Update(update_id, None, "", None, None)
    chat = message["chat"]["id"]
    if not isinstance(chat, int | str) or isinstance(chat, bool):
        raise TypeError("chat.id")
    sender = message.get("from") or {}
    who = str(sender.get("username") or sender.get("id") or "unknown")[:64]
    text = message.get("text")
    date = message.get("date")
    return Update(
        update_id,
        str(chat),
        who,
        text if isinstance(text, str) else None,
        float(date) if isinstance(date, int | float) and not isinstance(date, bool) else None,
    )


def decode_updates(body: bytes) -> tuple[list[Update], int, int | None]:
    """The updates of a ``getUpdates`` answer, how many items were set aside (unreadable),
    and the highest ``update_id`` seen (set-aside items included, so none is asked for
    again). Raises :class:`BotAPIError` for an answer that is not ``{"ok": true,
    "result": [...]}``."""
    try:
        payload = json.loads(body)
    except ValueError:
        raise BotAPIError("getUpdates: the answer is not JSON") from None
    if not isinstance(payload, dict) or payload.get("ok") is not True:
        code = payload.get("error_code") if isinstance(payload, dict) else None
        raise BotAPIError(f"getUpdates: refused ({code or 'not ok'})")
    result = payload.get("result")
    if not isinstance(result, list):
        raise BotAPIError("getUpdates: no result list")
    updates: list[Update] = []
    set_aside = 0
    highest: int | None = None
    for item in result:
        raw_id = item.get("update_id") if isinstance(item, dict) else None
        if isinstance(raw_id, int) and not isinstance(raw_id, bool):
            highest = raw_id if highest is None else max(highest, raw_id)
        try:
            updates.append(_update(item))
        except (KeyError, TypeError, ValueError, AttributeError):
            set_aside += 1
    return updates, set_aside, highest


class CommandBot:
    """The command loop of one engine's Telegram channel; run :meth:`run` in a task group
    beside the engine (``snipe run`` does, with ``notify.telegram.commands: true``)."""

    def __init__(
        self,
        engine: Engine,
        channel: TelegramChannel,
        *,
        clock: Clock | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        settings: BotSettings = BotSettings(),
    ) -> None:
        self.engine = engine
        self.channel = channel
        self.clock = clock or engine.clock
        self.settings = settings
        self.stats = BotStats()
        self.offset: int | None = None
        self._transport = transport
        self._answered_at: deque[float] = deque()
        self._told_to_slow_down = False
        self._handlers: dict[str, Callable[[Command, Update], Awaitable[str]]] = {
            "status": self._status,
            "profit": self._profit,
            "daily": self._daily,
            "pause": self._pause,
            "resume": self._resume,
            "reload": self._reload,
        }

    async def run(self) -> None:
        """Poll and answer until cancelled; failures are waited out with backoff."""
        transport = self._transport or httpx.AsyncHTTPTransport(retries=0)
        settings = self.settings
        delay = settings.backoff
        log.info("chat commands: answering /help in Telegram chat %s", self.channel.chat_id)
        try:
            while True:
                try:
                    updates = await self.poll_once(transport)
                except BotAPIError as exc:
                    self.stats.failures += 1
                    self.stats.last_error = exc.description
                    wait = min(max(delay, exc.wait or 0.0), settings.max_backoff)
                    log.warning("chat commands: %s; asking again in %.0fs", exc.description, wait)
                    await self.clock.sleep(wait)
                    delay = min(delay * 2, settings.max_backoff)
                    continue
                delay = settings.backoff
                for update in updates:
                    await self.handle(update, transport)
                if not updates:
                    await self.clock.sleep(settings.idle)
        finally:
            if self._transport is None:
                with anyio.CancelScope(shield=True):
                    await transport.aclose()

    async def poll_once(self, transport: httpx.AsyncBaseTransport) -> list[Update]:
        """One ``getUpdates`` call; moves the offset past every update it returns."""
        body: dict[str, Any] = {
            "timeout": self.settings.poll_timeout,
            "allowed_updates": ["message"],
        }
        if self.offset is not None:
            body["offset"] = self.offset
        answer = await self._call("getUpdates", body, transport, self.settings.poll_timeout)
        self.stats.polls += 1
        updates, set_aside, highest = decode_updates(answer)
        if set_aside:
            self.stats.set_aside += set_aside
            log.warning("chat commands: %d update(s) could not be read, set aside", set_aside)
        if highest is not None:
            self.offset = highest + 1
        return updates

    async def handle(self, update: Update, transport: httpx.AsyncBaseTransport) -> None:
        """Answer one update if it is a command from the configured chat."""
        if update.chat_id is None:
            return
        if update.chat_id != self.channel.chat_id:
            self.stats.ignored += 1
            if update.chat_id not in self.stats.strangers and len(self.stats.strangers) < 100:
                self.stats.strangers.add(update.chat_id)
                log.warning(
                    "chat commands: a message from chat %s (not the configured chat) is"
                    " ignored; no other chat is ever answered",
                    update.chat_id,
                )
            return
        command = parse_command(update.text)
        if command is None:
            return
        now = self.clock.now()
        if update.date is not None and now - update.date > self.settings.max_age:
            self.stats.stale += 1
            log.info(
                "chat commands: %s written before snipe listened, not acted upon", command.said
            )
            return
        if not self._allowed(now):
            self.stats.rate_limited += 1
            if self._told_to_slow_down:
                return
            self._told_to_slow_down = True
            text = f"too many commands: at most {self.settings.max_commands} a minute"
        else:
            self._told_to_slow_down = False
            text = await self.answer(command, update)
        if await self.send(text, transport):
            self.stats.answered += 1

    async def answer(self, command: Command, update: Update) -> str:
        """The answer to ``command`` (running its action for the controls)."""
        if command.name == "help":
            return help_answer()
        handler = self._handlers.get(command.name)
        if handler is None:
            return unknown_answer(command)
        try:
            return await handler(command, update)
        except Exception as exc:  # an answer that fails must not stop the loop
            log.exception("chat commands: /%s failed", command.name)
            return f"/{command.name} failed: {type(exc).__name__} (see the log)"

    def _allowed(self, now: float) -> bool:
        times = self._answered_at
        while times and times[0] <= now - self.settings.window:
            times.popleft()
        if len(times) >= self.settings.max_commands:
            return False
        times.append(now)
        return True

    def _who(self, update: Update) -> str:
        return f"telegram chat {update.chat_id} user {update.who}"

    # -- the commands ---------------------------------------------------------------------

    async def _status(self, command: Command, update: Update) -> str:
        return status_answer(await self.engine.view())

    async def _profit(self, command: Command, update: Update) -> str:
        engine = self.engine
        view = await engine.view()
        portfolio = await value_ledger(
            engine.ledger, engine.references, engine.ruleset.portfolio, now=view.now
        )
        return profit_answer(view, portfolio)

    async def _daily(self, command: Command, update: Update) -> str:
        now = self.clock.now()
        return daily_answer(await daily_summary(self.engine, utc_day_start(now)), now)

    async def _pause(self, command: Command, update: Update) -> str:
        reason = f"paused from Telegram by {update.who}"
        if command.args:
            reason += f": {command.args}"
        removed = await controls.pause(self.engine, reason, self._who(update))
        return pause_answer(removed, dry_run=self.engine.settings.dry_run)

    async def _resume(self, command: Command, update: Update) -> str:
        outcome = await controls.resume(self.engine, self._who(update))
        return resume_answer(outcome, self.engine.status.halt_reason)

    async def _reload(self, command: Command, update: Update) -> str:
        return reload_answer(await controls.reload_rules(self.engine, None, self._who(update)))

    # -- the Bot API ----------------------------------------------------------------------

    async def send(self, text: str, transport: httpx.AsyncBaseTransport) -> bool:
        """``sendMessage`` to the configured chat, retried on the clock; ``False`` when it
        could not be sent (logged, counted)."""
        body = {"chat_id": self.channel.chat_id, "text": self.channel.redact(text)[:MAX_TEXT]}
        delay = self.settings.backoff
        for attempt in range(self.settings.send_attempts):
            try:
                await self._call("sendMessage", body, transport, 0)
                return True
            except BotAPIError as exc:
                self.stats.last_error = exc.description
                if attempt + 1 == self.settings.send_attempts:
                    self.stats.failures += 1
                    log.warning("chat commands: an answer was not sent: %s", exc.description)
                    return False
                await self.clock.sleep(min(max(delay, exc.wait or 0.0), self.settings.max_backoff))
                delay *= 2
        return False

    async def _call(
        self,
        method: str,
        body: dict[str, Any],
        transport: httpx.AsyncBaseTransport,
        held: float,
    ) -> bytes:
        request = self.channel.bot_request(method, body)
        timeout = 10.0 + held  # real time: it bounds network I/O
        request.extensions["timeout"] = httpx.Timeout(timeout).as_dict()
        status: int | None = None
        content = b""
        retry_after: str | None = None
        error: str | None = None
        with anyio.move_on_after(timeout + 5.0):
            try:
                response = await transport.handle_async_request(request)
                try:
                    content = await response.aread()
                finally:
                    await response.aclose()
                status = response.status_code
                retry_after = response.headers.get("retry-after")
            except Exception as exc:  # whatever the network or a transport does
                # the type only: an httpx error's text or request carries the URL
                error = type(exc).__name__
        if status is None:
            raise BotAPIError(f"{method}: {error or 'timed out'}")
        if status == 200:
            return content
        wait = None
        if retry_after is not None:
            try:
                wait = float(retry_after)
            except ValueError:
                wait = None
        raise BotAPIError(self.channel.redact(f"{method}: HTTP {status}"), wait=wait)
