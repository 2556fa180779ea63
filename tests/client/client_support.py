"""Helpers of the client tests: a recording mock transport (imported as ``client_support``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx

KEY = "SENTINEL-KEY-1234567890"
BASE_URL = "https://market.test"
IMAGE_BASE_URL = "https://img.market.test"

Answer = httpx.Response | Exception | Callable[[httpx.Request], Any]


class Recorder:
    """A mock transport that records every request it is sent (as sent: with the key) and
    answers with the queued answers in order, repeating the last one."""

    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []
        self.answers: list[Answer] = [httpx.Response(200, json={"success": True})]
        self.transport = httpx.MockTransport(self._handle)

    def reply(self, *answers: Answer) -> Recorder:
        self.answers = list(answers)
        return self

    def json(self, body: Any, status: int = 200, **kw: Any) -> Recorder:
        return self.reply(httpx.Response(status, json=body, **kw))

    async def _handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, Exception):
            raise answer
        if callable(answer) and not isinstance(answer, httpx.Response):
            result = answer(request)
            if not isinstance(result, httpx.Response):
                result = await result
            return result
        return answer

    @property
    def last(self) -> httpx.Request:
        assert self.requests, "no request was sent"
        return self.requests[-1]

    def params(self, request: httpx.Request | None = None) -> list[tuple[str, str]]:
        """Query parameters as sent, without ``api``."""
        req = request or self.last
        return [(k, v) for k, v in req.url.params.multi_items() if k != "api"]

    def body(self, request: httpx.Request | None = None) -> Any:
        req = request or self.last
        return json.loads(req.content) if req.content else None
