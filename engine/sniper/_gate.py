"""The start-up gate: what must hold before the first purchase, and nothing more.

It holds exactly what every purchase needs and a restart cannot change: the API key is
accepted and the trade link is valid (an invalid link gets every purchase cancelled).
Those two failures refuse to trade (:class:`TradingRefused`, ``snipe run`` exit 3).

Everything else is waited out, never final: a retry-later refusal (``Please try again``,
``System busy``), 429, 5xx, an HTML page, a timeout or a refused connection is retried with
a backoff on the injected clock, and the engine says that it is waiting
(``EngineStatus.waiting``: the status file, ``snipe status``, ``/healthz`` 503 with the
reason) with a log line on every attempt.

It does **not** wait for purchases an earlier run left unresolved (INTENT, UNKNOWN). The
ledger already keeps each one's money counted against every cap and refuses a second
purchase of its listing in the same transaction that records an intent, so buying can
resume at once while the reconciler resolves them beside the running engine. An intent
that was never sent therefore costs its own budget until it is resolved, not minutes of
not buying.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

from .._clock import Clock
from .._errors import APIError, InvalidRequest, KeyRejected, Refused, SnipeError, Unavailable
from ..client import MarketClient
from ._guard import LoopGuard
from ._status import EngineStatus

__all__ = ["GateSettings", "StartGate", "TradingRefused", "start_failure"]

log = logging.getLogger("snipe.engine")

_RETRY_LATER = re.compile(
    r"try again|busy|later|too many|timed? ?out|temporar|unavailable|maintenance|overload",
    re.IGNORECASE,
)


class TradingRefused(SnipeError):
    """The engine will not trade, for a reason a restart cannot fix: the API key was
    rejected or the trade link is not valid."""


@dataclass(frozen=True)
class GateSettings:
    first_wait: float = 1.0
    """Seconds before the second attempt; doubled after each failure."""
    max_wait: float = 60.0
    """The longest wait between two attempts."""

    def wait_after(self, failures: int) -> float:
        """The wait after ``failures`` transient failures in a row (1 s, 2 s, 4 s, ... up to
        ``max_wait``). The exponent is bounded: an outage of days, thousands of attempts,
        must not overflow the float and crash the gate."""
        return min(self.max_wait, self.first_wait * float(2 ** min(max(failures - 1, 0), 32)))


def start_failure(exc: Exception, where: str = "the service") -> TradingRefused | str:
    """What a failed account check means: a :class:`TradingRefused` when a restart cannot
    fix it, else the reason to show while waiting (a transient failure); ``where`` names
    the service asked."""
    if isinstance(exc, KeyRejected):
        return TradingRefused(f"the API key was rejected: {exc.message}")
    if isinstance(exc, InvalidRequest):
        return TradingRefused(f"the trade link cannot be used: {exc}")
    if isinstance(exc, Refused) and not _RETRY_LATER.search(exc.msg or ""):
        # the message keeps the answer's info (a ban, a private inventory) beside its msg
        reason = exc.message.removeprefix("refused: ") or "no reason given"
        return TradingRefused(
            f"the trade link is not valid, so every purchase would be cancelled: {reason}"
        )
    if isinstance(exc, APIError):
        return f"cannot check the trade link with {where}: {exc}"
    raise TypeError(f"not an error of the account check: {exc!r}")  # pragma: no cover


class StartGate:
    """Checks the account until it passes or is refused; see the module docstring."""

    def __init__(
        self,
        *,
        client: MarketClient,
        clock: Clock,
        status: EngineStatus,
        guard: LoopGuard,
        trade_link_url: str,
        settings: GateSettings = GateSettings(),
    ) -> None:
        self._client = client
        self._clock = clock
        self._status = status
        self._guard = guard
        self._link = trade_link_url
        self.settings = settings

    async def wait_until_open(self) -> None:
        """Return once the key and the trade link are known good (or once an unexpected
        error has HALTED the engine); raise :class:`TradingRefused` when they are not."""
        status = self._status
        transient = 0
        while True:
            status.start_attempts += 1
            try:
                await self._check()
            except TradingRefused:
                status.waiting = None
                raise
            except APIError as exc:
                verdict = start_failure(exc, self._where(exc))
                if isinstance(verdict, TradingRefused):
                    status.waiting = None
                    raise verdict from None
                transient += 1
                wait = self.settings.wait_after(transient)
                self._waiting(verdict, wait)
            except InvalidRequest as exc:
                status.waiting = None
                raise TradingRefused(f"the trade link cannot be used: {exc}") from None
            except Exception as exc:
                wait = self._guard.failed("start-up gate", exc)
                if status.halted:
                    status.waiting = None
                    return
                self._waiting(f"unexpected error {type(exc).__name__}", wait)
            else:
                self._guard.succeeded("start-up gate")
                if status.waiting is not None:
                    log.info("start-up check passed after %d attempts", status.start_attempts)
                status.waiting = None
                return
            await self._clock.sleep(wait)

    async def _check(self) -> None:
        check = await self._client.check_tradelink(self._link)
        problem = check.problem  # success: true may still say "Inventory is private"
        if problem is not None:
            raise TradingRefused(
                f"the trade link cannot be used, so every purchase would be cancelled: {problem}"
            )

    def _where(self, exc: APIError) -> str:
        """The service's address, said plainly when nothing answers there."""
        where = f"the service at {self._client.base_url}"
        if isinstance(exc, Unavailable) and "ConnectError" in str(exc):
            where += " (nothing is listening there: is the service, or `snipe sandbox`, up?)"
        return where

    def _waiting(self, reason: str, wait: float) -> None:
        self._status.waiting = reason
        log.warning(
            "waiting to start trading (attempt %d): %s; next attempt in %.0f s",
            self._status.start_attempts,
            reason,
            wait,
        )
