"""Live and backtest run the same engine step: one recording, the same decisions.

The live loop (:meth:`Engine.run`, a runner per kind of step, on the virtual clock that
jumps whenever every task waits) and the backtest (the clock moved to
:meth:`Engine.next_due`, then :meth:`Engine.step`) replay one recording; what each decided
to buy, and when, is the same, purchase by purchase.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine._plugins import make_plugin_host
from engine.backtest import BacktestOptions, read_records, recording_span, run_backtest

from .support import sandbox_rules


def _decision_log(purchases: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted(
        (p["created_at"], p["rule"], p["name"], p["item_id"], p["price"], p["state"])
        for p in purchases
    )


async def _replay(recording: Path, *, live: bool, **options: Any) -> list[tuple[Any, ...]]:
    start, _ = recording_span(recording)
    run = await run_backtest(
        sandbox_rules(),
        read_records(recording),
        host=make_plugin_host(load_entry_points=False),
        # a stop between due times: live stops by a timer, the backtest by due times
        end=start + 583.3,
        options=BacktestOptions(**options),
        live=live,
    )
    return _decision_log(run.purchases)


@pytest.mark.slow
@pytest.mark.parametrize("latency", [0.0, 0.25])
async def test_the_live_loop_and_the_backtest_decide_alike(
    sandbox_recording: Path, latency: float
) -> None:
    stepped = await _replay(sandbox_recording, live=False, seed=3, latency=latency)
    live = await _replay(sandbox_recording, live=True, seed=3, latency=latency)
    assert stepped  # the recording has deals: a log to compare
    assert live == stepped
