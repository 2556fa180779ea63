"""The search budget survives a restart: two engines, one after the other, on the same
ledger file against one sandbox (which counts per account at arrival). With the journal
``snipe run`` keeps beside the ledger, the second engine's first searches wait for the
window the first one used, and the sandbox never answers 429."""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx
import pytest

from engine import RateLimited, VirtualClock
from engine._plugins import make_plugin_host
from engine.rules import load_rules_text
from engine.sandbox import Sandbox
from engine.sniper import EngineSettings
from engine.sniper._session import SessionOptions, open_engine

from .harness import pick_item, quiet_sandbox, rules_text

SEARCH = "GET /v2/search-items-by-name"


def files_in(folder: Path) -> list[Path]:
    return list(folder.iterdir())


async def one_life(
    clock: VirtualClock, sandbox: Sandbox, ledger: Path, *, journal: bool, seconds: float
) -> list[float]:
    """An engine as ``snipe run`` assembles it, searching flat out for ``seconds`` of the
    clock, then stopped; when each of its searches went out."""
    name = pick_item(sandbox).name
    host = make_plugin_host(load_entry_points=False)
    ruleset = load_rules_text(rules_text(name), host=host)
    options = SessionOptions(
        ledger=ledger,
        transport=httpx.ASGITransport(app=sandbox.app),
        limit_journal=journal,
    )
    sent: list[float] = []
    async with open_engine(
        ruleset,
        api_key=sandbox.api_key,
        clock=clock,
        host=host,
        settings=EngineSettings(),
        options=options,
    ) as engine:

        async def search() -> None:
            while True:
                try:
                    await engine.client.search_items_by_name([name])
                except RateLimited:
                    continue  # the limiter is paused for the wait the 429 asked for
                sent.append(clock.now())

        async with clock.autojump(), anyio.create_task_group() as tg:
            tg.start_soon(search)
            await clock.sleep(seconds)
            tg.cancel_scope.cancel()
    return sent


@pytest.mark.parametrize("journal", [True, False], ids=["journal", "no-journal"])
async def test_a_restarted_engine_waits_for_the_window_the_previous_one_used(
    clock: VirtualClock, tmp_path: Path, journal: bool
) -> None:
    sandbox = quiet_sandbox(clock)
    ledger = tmp_path / "ledger.sqlite"
    start = clock.now()
    first = await one_life(clock, sandbox, ledger, journal=journal, seconds=30.0)
    assert len(first) == 20  # the whole budget, at once
    second = await one_life(clock, sandbox, ledger, journal=journal, seconds=60.0)
    requests = sandbox.ground_truth()["requests"]
    if journal:
        assert requests.get(f"{SEARCH} 429", 0) == 0
        # its first search waited until the first life's first search left the window
        assert second[0] >= start + 60.0
        assert (ledger.parent / "ledger.sqlite.limits").exists()
    else:
        # what the journal prevents: a fresh limiter sends at once and meets 429s
        assert requests.get(f"{SEARCH} 429", 0) > 0
        assert not (ledger.parent / "ledger.sqlite.limits").exists()


async def test_a_dry_run_keeps_no_journal(clock: VirtualClock, tmp_path: Path) -> None:
    sandbox = quiet_sandbox(clock)
    name = pick_item(sandbox).name
    host = make_plugin_host(load_entry_points=False)
    ledger = tmp_path / "ledger.sqlite"
    options = SessionOptions(
        ledger=ledger, transport=httpx.ASGITransport(app=sandbox.app), limit_journal=True
    )
    async with open_engine(
        load_rules_text(rules_text(name), host=host),
        api_key=sandbox.api_key,
        clock=clock,
        host=host,
        settings=EngineSettings(dry_run=True),
        options=options,
    ) as engine:
        await engine.client.search_items_by_name([name])
    assert files_in(tmp_path) == []
