"""The obvious attacks on the API, each refused (issue 18 point 3). In-process over the
Starlette application, on asyncio and trio."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest
from sniper.harness import pick_item, plant, quiet_sandbox, rules_text

from engine import VirtualClock
from engine.api._security import FREE_FAILURES
from engine.rules import ApiSettings

from .helpers import CONTROL, READ, bearer, served

READ_PATHS = [
    "/healthz",
    "/api/status",
    "/api/budget",
    "/api/purchases",
    "/api/unresolved",
    "/api/orders",
    "/api/why/AK-47%20%7C%20Redline",
    "/api/references/AK-47%20%7C%20Redline",
    "/api/control-events",
    "/api/events?limit=1",
]
CONTROL_PATHS = [
    "/api/pause",
    "/api/resume",
    "/api/reload",
    "/api/orders/remove",
    "/api/stop",
]


async def test_nothing_answers_without_a_token(clock: VirtualClock) -> None:
    sandbox = quiet_sandbox(clock)
    async with served(clock, sandbox, rules_text(pick_item(sandbox).name)) as s:
        for path in READ_PATHS:
            answer = await s.client.get(path)
            assert answer.status_code == 401, path
            assert answer.headers["www-authenticate"] == "Bearer"
        for path in CONTROL_PATHS:
            assert (await s.client.post(path)).status_code == 401, path
        assert not s.rig.engine.status.paused
        assert not s.rig.engine.stop_requested.is_set()


@pytest.mark.parametrize(
    "authorization",
    [
        "Bearer wrong-token-wrong-token-wrong",
        f"Bearer {CONTROL[:-1]}",  # all but one character
        f"Bearer {CONTROL}x",
        f"Basic {CONTROL}",  # the right secret, the wrong scheme
        CONTROL,  # no scheme
        "Bearer ",
    ],
)
async def test_a_wrong_token_is_refused(clock: VirtualClock, authorization: str) -> None:
    sandbox = quiet_sandbox(clock)
    async with served(clock, sandbox, rules_text(pick_item(sandbox).name)) as s:
        answer = await s.client.post("/api/pause", headers={"authorization": authorization})
        assert answer.status_code == 401
        assert (
            await s.client.get("/api/status", headers={"authorization": authorization})
        ).status_code == 401
        assert s.rig.engine.status.paused is None


async def test_a_read_token_cannot_control(clock: VirtualClock) -> None:
    sandbox = quiet_sandbox(clock)
    async with served(clock, sandbox, rules_text(pick_item(sandbox).name)) as s:
        assert (await s.client.get("/api/status", headers=bearer(READ))).status_code == 200
        for path in CONTROL_PATHS:
            answer = await s.client.post(path, headers=bearer(READ))
            assert answer.status_code == 403, path
            assert "may only read" in answer.json()["error"]
        assert s.rig.engine.status.paused is None
        assert not s.rig.engine.stop_requested.is_set()
        assert await s.rig.ledger.control_events() == []


@pytest.mark.parametrize(
    "query",
    [f"token={READ}", f"access_token={READ}", "api_key=x", f"q={CONTROL}", "auth=x"],
)
async def test_a_token_in_the_url_is_refused_even_with_a_good_header(
    clock: VirtualClock, query: str
) -> None:
    sandbox = quiet_sandbox(clock)
    async with served(clock, sandbox, rules_text(pick_item(sandbox).name)) as s:
        answer = await s.client.get(f"/api/status?{query}", headers=bearer(READ))
        assert answer.status_code == 400
        assert "never accepted in a URL" in answer.json()["error"]
        answer = await s.client.post(f"/api/pause?{query}", headers=bearer(CONTROL))
        assert answer.status_code == 400
        assert s.rig.engine.status.paused is None


async def test_brute_force_is_locked_out_per_client_and_the_lockout_ends(
    clock: VirtualClock,
) -> None:
    sandbox = quiet_sandbox(clock)
    async with served(clock, sandbox, rules_text(pick_item(sandbox).name)) as s:
        attacker = s.other_client("10.0.0.66")
        async with attacker:
            for n in range(FREE_FAILURES):
                guess = bearer(f"guess-{n:04d}-0123456789abcdefghij")
                assert (await attacker.get("/api/status", headers=guess)).status_code == 401
            # locked: even the right token is not looked at now
            locked = await attacker.get("/api/status", headers=bearer(READ))
            assert locked.status_code == 429
            assert int(locked.headers["retry-after"]) >= 1
            # another client is not locked out by the attacker
            assert (await s.client.get("/api/status", headers=bearer(READ))).status_code == 200
            # each further failure doubles the wait
            clock.advance(float(locked.headers["retry-after"]) + 1)
            assert (await attacker.get("/api/status", headers=bearer("x" * 30))).status_code == 401
            longer = await attacker.get("/api/status", headers=bearer(READ))
            assert longer.status_code == 429
            assert int(longer.headers["retry-after"]) > int(locked.headers["retry-after"])
            clock.advance(float(longer.headers["retry-after"]) + 1)
            assert (await attacker.get("/api/status", headers=bearer(READ))).status_code == 200


async def _lock_out(client: httpx.AsyncClient, headers: Callable[[int], dict[str, str]]) -> None:
    """FREE_FAILURES bad guesses, then the right token: refused, locked out."""
    for n in range(FREE_FAILURES):
        guess = bearer(f"guess-{n:04d}-0123456789abcdefghij")
        assert (await client.get("/api/status", headers={**headers(n), **guess})).status_code == 401
    locked = await client.get("/api/status", headers={**headers(FREE_FAILURES), **bearer(READ)})
    assert locked.status_code == 429


async def test_behind_a_stated_proxy_the_lockout_keys_on_the_client_it_names(
    clock: VirtualClock,
) -> None:
    """One proxy (on this machine: every request arrives from 127.0.0.1), two clients
    behind it: the attacker's lockout does not lock the user out, however the attacker
    fills the X-Forwarded-For it sends (the proxy appends the address it saw)."""
    sandbox = quiet_sandbox(clock)
    settings = ApiSettings(listen="0.0.0.0:8788", behind_proxy=True)
    async with served(
        clock, sandbox, rules_text(pick_item(sandbox).name), api_settings=settings
    ) as s:

        def attacker(n: int) -> dict[str, str]:  # a new made-up address before each
            return {"x-forwarded-for": f"198.18.0.{n + 1}, 203.0.113.66"}

        await _lock_out(s.client, attacker)
        user = {"x-forwarded-for": "198.51.100.7"}
        answer = await s.client.get("/api/status", headers={**user, **bearer(READ)})
        assert answer.status_code == 200
        # and the user's own failures are counted apart from the attacker's
        bad = await s.client.get("/api/status", headers={**user, **bearer("y" * 30)})
        assert bad.status_code == 401


async def test_x_forwarded_for_from_an_untrusted_peer_is_ignored(clock: VirtualClock) -> None:
    """A client that reaches the API directly cannot pick a fresh address per guess: its
    own address is counted, whatever it claims."""
    sandbox = quiet_sandbox(clock)
    settings = ApiSettings(listen="0.0.0.0:8788", behind_proxy=True)  # proxy: loopback
    async with served(
        clock, sandbox, rules_text(pick_item(sandbox).name), api_settings=settings
    ) as s:
        async with s.other_client("10.0.0.66") as direct:
            await _lock_out(direct, lambda n: {"x-forwarded-for": f"198.18.0.{n + 1}"})
        # the proxy's clients are not locked out by it
        via_proxy = {"x-forwarded-for": "198.51.100.7"}
        ok = await s.client.get("/api/status", headers={**via_proxy, **bearer(READ)})
        assert ok.status_code == 200


async def test_without_a_stated_proxy_x_forwarded_for_is_ignored(clock: VirtualClock) -> None:
    sandbox = quiet_sandbox(clock)
    async with served(clock, sandbox, rules_text(pick_item(sandbox).name)) as s:
        await _lock_out(s.client, lambda n: {"x-forwarded-for": f"198.18.0.{n + 1}"})
        other = {"x-forwarded-for": "198.51.100.7", **bearer(READ)}
        assert (await s.client.get("/api/status", headers=other)).status_code == 429


@pytest.mark.parametrize(
    "headers",
    [
        {"origin": "https://evil.example", "cookie": "session=stolen"},
        {"sec-fetch-site": "cross-site", "cookie": "session=stolen"},
        {"sec-fetch-site": "same-site"},
        {"origin": "null"},
    ],
)
async def test_a_cross_site_post_is_refused(clock: VirtualClock, headers: dict[str, str]) -> None:
    sandbox = quiet_sandbox(clock)
    async with served(clock, sandbox, rules_text(pick_item(sandbox).name)) as s:
        # refused even when it somehow carries the control token
        answer = await s.client.post("/api/pause", headers={**headers, **bearer(CONTROL)})
        assert answer.status_code == 403
        assert answer.json()["error"] == "cross-site request refused"
        assert s.rig.engine.status.paused is None
        # a cookie alone is never a login
        assert (
            await s.client.post("/api/stop", headers={"cookie": "session=x"})
        ).status_code == 401
        # the same page's own request passes
        same = {"origin": "http://127.0.0.1:8788", "sec-fetch-site": "same-origin"}
        assert (
            await s.client.post("/api/pause", headers={**same, **bearer(CONTROL)})
        ).status_code == 200


@pytest.mark.parametrize(
    "host",
    ["evil.example", "evil.example:8788", "127.0.0.1.nip.io", "localhost.evil.example", ""],
)
async def test_a_foreign_host_header_is_refused(clock: VirtualClock, host: str) -> None:
    """DNS rebinding: a page at evil.example whose name now resolves to 127.0.0.1."""
    sandbox = quiet_sandbox(clock)
    async with served(clock, sandbox, rules_text(pick_item(sandbox).name)) as s:
        answer = await s.client.get("/api/status", headers={"host": host, **bearer(READ)})
        assert answer.status_code in (400, 421)
        for good in ("127.0.0.1:8788", "localhost:8788", "[::1]:8788", "LOCALHOST"):
            ok = await s.client.get("/api/status", headers={"host": good, **bearer(READ)})
            assert ok.status_code == 200, good


async def test_the_api_key_is_in_no_answer(clock: VirtualClock) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    plant(sandbox, item, price=item.reference // 2)
    async with served(clock, sandbox, rules_text(item.name)) as s:
        async with clock.autojump():
            await s.rig.engine.run(duration=120)
        bodies = []
        for path in READ_PATHS:
            bodies.append((await s.client.get(path, headers=bearer(CONTROL))).text)
        for path in ("/api/pause", "/api/resume", "/api/reload", "/api/orders/remove"):
            bodies.append((await s.client.post(path, headers=bearer(CONTROL))).text)
        bodies.append((await s.client.get("/api/events?limit=3", headers=bearer(READ))).text)
        for bad in ("/api/status", "/nope"):
            bodies.append((await s.client.get(bad)).text)
        assert any('"outcome":"bought"' in b for b in bodies)  # the answers do say things
        for body in bodies:
            assert sandbox.api_key not in body
            assert CONTROL not in body
            assert READ not in body


async def test_an_answer_holding_the_key_is_withheld(clock: VirtualClock) -> None:
    """The last line of defence: even if a reason or a name carried the key."""
    sandbox = quiet_sandbox(clock)
    async with served(clock, sandbox, rules_text(pick_item(sandbox).name)) as s:
        s.rig.engine.status.error(f"a service error quoting {sandbox.api_key}")
        answer = await s.client.get("/api/status", headers=bearer(READ))
        assert answer.status_code == 500
        assert sandbox.api_key not in answer.text
