"""The live engine's policy for the cyclic garbage collector (``_heap.py``): the start-up
heap frozen out of the collector's passes while the engine runs, again after a snapshot
poll at most every ``refreeze_every``, everything the collector's again when it stops;
off unless the runner asks for it (``snipe run`` does: ``--no-gc-freeze`` turns it off)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from engine import VirtualClock
from engine.cli import build_parser
from engine.sniper import EngineSettings, HeapPolicy, HeapSettings

from .harness import TRADE_LINK, quiet_sandbox, rig

RULES = f"""
version: 1
account: {{base_url: "http://sandbox", trade_link: "{TRADE_LINK}"}}
budgets: {{per_day: "500.00", total: "1000.00"}}
rules:
  - name: nothing
    match: {{names: ["Nothing Here"]}}
    max_price: "1.00"
"""


@pytest.fixture(autouse=True)
def _thawed() -> Iterator[None]:
    gc.unfreeze()  # whatever was frozen before is not this test's
    yield
    gc.unfreeze()


def test_the_policy_freezes_at_start_up_then_at_most_once_per_period() -> None:
    clock = VirtualClock()
    policy = HeapPolicy(HeapSettings(freeze=True, refreeze_every=600.0), clock)
    policy.polled()  # not started: nothing to refreeze
    assert gc.get_freeze_count() == 0
    policy.started()
    frozen = gc.get_freeze_count()
    assert frozen > 0
    start = clock.now()
    for at, freezes in [(599.0, 1), (600.0, 2), (900.0, 2), (1_200.0, 3)]:
        clock.jump_to(start + at)
        policy.polled()
        assert policy.freezes == freezes
    policy.release()
    assert gc.get_freeze_count() == 0


def test_off_it_leaves_the_collector_alone() -> None:
    policy = HeapPolicy(HeapSettings(), VirtualClock())
    policy.started()
    policy.polled()
    policy.release()
    assert (policy.freezes, gc.get_freeze_count()) == (0, 0)


@pytest.mark.parametrize("freeze", [True, False])
async def test_an_engine_run_freezes_only_when_asked_and_thaws_when_it_stops(
    clock: VirtualClock, freeze: bool
) -> None:
    settings = EngineSettings(heap=HeapSettings(freeze=freeze, refreeze_every=60.0))
    async with rig(clock, quiet_sandbox(clock), RULES, settings=settings) as r:
        async with clock.autojump():
            await r.engine.run(duration=130)
        polls = r.engine.status.snapshots
    assert polls > 10  # a snapshot every 10 s
    # at start-up, then after the first poll 60 s later and the first 60 s after that
    assert r.engine.heap.freezes == (3 if freeze else 0)
    assert gc.get_freeze_count() == 0


@pytest.mark.parametrize(("argv", "freeze"), [([], True), (["--no-gc-freeze"], False)])
def test_snipe_run_freezes_unless_told_not_to(argv: list[str], freeze: bool) -> None:
    args = build_parser().parse_args(["run", "rules.yaml", *argv])
    assert args.gc_freeze is freeze
