"""The start-up gate waits out what is transient and refuses only what a restart cannot fix;
it says that it is waiting (status, status file, /healthz, a log line per attempt)."""

from __future__ import annotations

import logging
from typing import Any

import anyio
import pytest

from engine import VirtualClock
from engine._errors import (
    APIError,
    InvalidRequest,
    KeyRejected,
    MalformedResponse,
    RateLimited,
    Refused,
    Unavailable,
)
from engine.ops import Operations
from engine.sniper import EngineMode, TradingRefused
from engine.sniper._gate import GateSettings, start_failure
from engine.sniper._statusfile import status_document

from .harness import pick_item, plant, purchases_of, quiet_sandbox, rig, rules_text

_EP = "POST /v1/check-tradelink"


@pytest.mark.parametrize(
    ("error", "final"),
    [
        (Refused("refused: Please try again", endpoint=_EP, msg="Please try again"), False),
        (Refused("refused: System busy", endpoint=_EP, msg="System busy"), False),
        (Refused("refused", endpoint=_EP, msg="Too many requests, try later"), False),
        (RateLimited("429", endpoint=_EP, retry_after=5.0), False),
        (Unavailable("503 Service Unavailable", endpoint=_EP, status_code=503), False),
        (Unavailable("the answer is not JSON", endpoint=_EP, status_code=200), False),
        (Unavailable("timed out", endpoint=_EP), False),
        (MalformedResponse("field x", endpoint=_EP, field="x"), False),
        (KeyRejected("403", endpoint=_EP, status_code=403), True),
        (Refused("refused", endpoint=_EP, msg="Invalid trade link"), True),
        (Refused("refused", endpoint=_EP, msg="Trade link cannot be used"), True),
        (Refused("refused", endpoint=_EP, msg=None), True),
        (InvalidRequest("tradelink: too long"), True),
    ],
)
def test_only_what_a_restart_cannot_fix_is_final(error: Exception, final: bool) -> None:
    verdict = start_failure(error)
    assert isinstance(verdict, TradingRefused) is final
    if not final:
        assert isinstance(verdict, str)
        assert str(error) in verdict


@pytest.mark.parametrize(
    "fault",
    [
        {"kind": "system_busy"},
        {"kind": "http_error", "status": 503},
        {"kind": "http_error", "status": 502},
        {"kind": "html_200"},
        {"kind": "rate_limit", "retry_ms": 2000},
        {"kind": "drop_connection"},
        {"kind": "latency", "seconds": 30.0},  # past the client's 10 s: a timeout
    ],
)
async def test_transient_failures_at_start_are_waited_out_then_it_buys(
    clock: VirtualClock, fault: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    plant(sandbox, item, price=item.reference // 2)
    sandbox.inject(_EP, count=4, **fault)
    caplog.set_level(logging.WARNING, logger="snipe.engine")
    async with rig(clock, sandbox, rules_text(item.name)) as r, clock.autojump():
        status = await r.engine.run(duration=600)
    assert status.mode is EngineMode.STOPPED
    assert status.start_attempts == 5
    assert status.waiting is None
    assert len(purchases_of(sandbox)) == 1
    waits = [m for m in caplog.messages if m.startswith("waiting to start trading")]
    assert len(waits) == 4  # a line per failed attempt
    assert "attempt 4" in waits[-1]


async def test_waiting_is_shown_in_status_file_and_healthz(clock: VirtualClock) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    sandbox.inject(_EP, "http_error", probability=1.0)
    async with (
        rig(clock, sandbox, rules_text(item.name)) as r,
        clock.autojump(),
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(r.engine.run)
        while r.engine.status.start_attempts < 3:
            await clock.sleep(0.5)
        document = status_document(await r.engine.view(), every=5.0)
        health = Operations(r.engine).health()
        tg.cancel_scope.cancel()
    assert document["mode"] == "starting"
    assert "503" in document["waiting"]
    assert document["start_attempts"] >= 3
    assert health.status == 503
    assert b"waiting (attempt" in health.body
    assert b"503" in health.body
    assert purchases_of(sandbox) == []


async def test_backoff_doubles_up_to_its_ceiling(clock: VirtualClock) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    sandbox.inject(_EP, "http_error", probability=1.0)
    started = clock.now()
    async with rig(clock, sandbox, rules_text(item.name)) as r, clock.autojump():
        with anyio.move_on_after(5):  # real seconds: a safety net only
            async with anyio.create_task_group() as tg:
                tg.start_soon(r.engine.run)
                while r.engine.status.start_attempts < 10:
                    await clock.sleep(0.5)
                tg.cancel_scope.cancel()
    # waits 1, 2, 4, 8, 16, 32, 60, 60, 60 s before the 10th attempt
    assert 243 <= clock.now() - started < 243 + 1


@pytest.mark.parametrize(
    ("failures", "wait"), [(1, 1.0), (2, 2.0), (6, 32.0), (7, 60.0), (1_100, 60.0), (10**6, 60.0)]
)
def test_the_wait_after_failures_doubles_to_its_ceiling_and_never_overflows(
    failures: int, wait: float
) -> None:
    assert GateSettings().wait_after(failures) == wait


async def test_a_rejected_key_is_final(clock: VirtualClock) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    async with rig(clock, sandbox, rules_text(item.name), api_key="not-the-key") as r:
        with pytest.raises(TradingRefused, match="API key was rejected"):
            async with clock.autojump():
                await r.engine.run(duration=60)
        assert r.engine.status.start_attempts == 1


def test_api_errors_are_what_the_gate_classifies() -> None:
    # every client error is either waited out or final: nothing falls through
    for error in (APIError("x", endpoint=_EP), Unavailable("x", endpoint=_EP)):
        assert isinstance(start_failure(error), str)


async def test_an_unexpected_error_at_start_is_retried_and_counted(clock: VirtualClock) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    plant(sandbox, item, price=item.reference // 2)
    async with rig(clock, sandbox, rules_text(item.name)) as r:
        real = r.client.check_tradelink
        calls = {"n": 0}

        async def flaky(link: str) -> Any:
            calls["n"] += 1
            if calls["n"] <= 2:
                raise RuntimeError("a bug")
            return await real(link)

        r.client.check_tradelink = flaky  # type: ignore[method-assign]
        async with clock.autojump():
            status = await r.engine.run(duration=300)
    assert status.unexpected["start-up gate"] == 2
    assert status.mode is EngineMode.STOPPED
    assert len(purchases_of(sandbox)) == 1
