"""A live run against the in-process sandbox, recorded with the tee (``snipe run
--record`` assembled the same way), on a virtual clock, for the parity tests."""

from __future__ import annotations

from pathlib import Path

import httpx

from engine import VirtualClock
from engine._plugins import make_plugin_host
from engine.backtest._tee import LiveRecorder, RecordingTransport, attach_recorder
from engine.rules import RuleSet, load_rules_text
from engine.sandbox import MarketConfig, Sandbox, SandboxConfig
from engine.sniper import EngineSettings, EngineStatus, SessionOptions, open_engine

from .support import REDLINE, TRADE_LINK

API_KEY = "parity-key-7f3a9c"
NAMES = (REDLINE, "AWP | Asiimov (Field-Tested)", "Glock-18 | Fade (Factory New)")


def parity_rules_text(ledger: Path, extra: str = "", rule_extra: str = "") -> str:
    return f"""
version: 1
account: {{base_url: "http://sandbox", trade_link: "{TRADE_LINK}", ledger: "{ledger}", feed: off}}
budgets: {{per_day: "400.00", total: "400.00"}}
rules:
  - name: redlines
    match: {{names: ["{REDLINE}"], game: csgo}}
    discount: 10
    max_price: "60.00"
{rule_extra}
  - name: rifles
    match: {{patterns: ["AWP | *", "Glock-18 | *"], game: csgo}}
    discount: 12
    max_price: "200.00"
{extra}
"""


def parity_rules(ledger: Path, extra: str = "", rule_extra: str = "") -> RuleSet:
    text = parity_rules_text(ledger, extra, rule_extra)
    return load_rules_text(text, host=make_plugin_host(load_entry_points=False))


async def live_recorded_run(
    directory: Path, ruleset: RuleSet, *, minutes: float, seed: int = 11, size: int = 400
) -> EngineStatus:
    """Run the live engine (its runners, on a virtual clock that jumps when all wait)
    against a sandbox for ``minutes``, recording what it receives into ``directory``."""
    clock = VirtualClock(1_767_225_600.0)
    market = MarketConfig(size=size, featured=NAMES, featured_share=0.5)
    sandbox = Sandbox(
        SandboxConfig(seed=seed, market=market, api_key=API_KEY, jitter=(0.01, 0.05)), clock=clock
    )
    host = make_plugin_host(load_entry_points=False)
    with LiveRecorder(directory, source="http://sandbox") as recorder:
        inner = httpx.ASGITransport(app=sandbox.app)
        options = SessionOptions(transport=RecordingTransport(inner, recorder, clock), feed=False)
        async with open_engine(
            ruleset,
            api_key=API_KEY,
            clock=clock,
            host=host,
            settings=EngineSettings(snapshot_every=10.0),
            options=options,
        ) as engine:
            attach_recorder(engine, recorder)
            async with clock.autojump():
                await engine.run(duration=minutes * 60.0)
    return engine.status
