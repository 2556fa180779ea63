"""A fake Telegram Bot API, in process (an ``httpx.MockTransport`` on 127.0.0.1), on the
tests' virtual clock.

``getUpdates`` long-polls as the real one does: it answers at once with the scripted
messages that are due (at or after ``offset``), or holds the call on the virtual clock
until one is due or ``timeout`` has passed. ``sendMessage`` is recorded. A request whose
path does not carry the right token is answered 401, as Telegram does.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from typing import Any

import httpx

from engine import VirtualClock

TOKEN = "123456:FAKE-bot-token-never-shown"
CHAT = "4242"
BASE = "http://127.0.0.1:8081"


@dataclass
class FakeBotAPI:
    clock: VirtualClock
    token: str = TOKEN
    script: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    sent: list[dict[str, Any]] = field(default_factory=list)
    """Every ``sendMessage`` body, in order."""
    calls: list[str] = field(default_factory=list)
    """The Bot API methods called, in order."""
    fail_next: list[int | Exception] = field(default_factory=list)
    """HTTP statuses (or exceptions raised) for the next calls, consumed one per call."""
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1000))

    def say(
        self,
        text: str,
        *,
        at: float | None = None,
        chat: str | int = CHAT,
        user: str = "owner",
        written: float | None = None,
    ) -> None:
        """Script a message ``text`` in ``chat``, delivered from ``at`` (default now) and
        dated ``written`` (default: when delivered)."""
        when = self.clock.now() if at is None else at
        update_id = next(self._ids)
        message = {
            "message_id": update_id,
            "date": int(when if written is None else written),
            "chat": {"id": int(chat) if str(chat).lstrip("-").isdigit() else chat},
            "from": {"id": 7, "username": user},
            "text": text,
        }
        self.script.append((when, {"update_id": update_id, "message": message}))

    def answers(self, chat: str = CHAT) -> list[str]:
        return [str(b["text"]) for b in self.sent if str(b["chat_id"]) == chat]

    @property
    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self._handle)

    async def _handle(self, request: httpx.Request) -> httpx.Response:
        assert request.url.host == "127.0.0.1"
        prefix, _, method = request.url.path.rpartition("/")
        self.calls.append(method)
        if self.fail_next:
            failure = self.fail_next.pop(0)
            if isinstance(failure, Exception):
                raise failure
            return httpx.Response(failure, json={"ok": False, "error_code": failure})
        if prefix != f"/bot{self.token}":
            return httpx.Response(401, json={"ok": False, "error_code": 401})
        body = json.loads(request.content)
        if method == "sendMessage":
            self.sent.append(body)
            return httpx.Response(200, json={"ok": True, "result": {"message_id": 1}})
        if method == "getUpdates":
            return await self._updates(body)
        return httpx.Response(404, json={"ok": False, "error_code": 404})

    async def _updates(self, body: dict[str, Any]) -> httpx.Response:
        offset = int(body.get("offset", 0))
        deadline = self.clock.now() + float(body.get("timeout", 0))
        while True:
            now = self.clock.now()
            ready = [u for at, u in self.script if at <= now and u["update_id"] >= offset]
            if ready or now >= deadline:
                return httpx.Response(200, json={"ok": True, "result": ready})
            later = [at for at, u in self.script if at > now and u["update_id"] >= offset]
            await self.clock.sleep_until(min([deadline, *later]))
