"""`snipe run` against a sped-up sandbox: the engine's clock can share the market's time
(`--speed`, `--origin`), and the process picks its async library (`--backend`)."""

from __future__ import annotations

import time

import pytest

from engine import ScaledClock, SystemClock
from engine.cli import build_parser
from engine.cli._run import engine_clock


def test_the_engine_runs_on_real_time_unless_told_otherwise() -> None:
    assert isinstance(engine_clock(1.0, None), SystemClock)


def test_a_sped_up_engine_shares_the_market_time_of_a_sandbox_with_the_same_origin() -> None:
    origin = time.time() - 100.0  # the sandbox started 100 real seconds ago, at 10x
    engine = engine_clock(10.0, origin)
    sandbox = ScaledClock.from_origin(origin, 10.0)
    assert isinstance(engine, ScaledClock)
    assert abs(engine.now() - sandbox.now()) < 0.5  # a few ms apart, times ten
    assert abs(engine.now() - (origin + 1000.0)) < 0.5 * 10


@pytest.mark.parametrize(
    ("argv", "field", "value"),
    [
        ([], "backend", "asyncio"),
        (["--backend", "trio"], "backend", "trio"),
        (["--speed", "60", "--origin", "1767225600.5"], "origin", 1767225600.5),
        (["--speed", "60"], "speed", 60.0),
    ],
)
def test_run_options(argv: list[str], field: str, value: object) -> None:
    args = build_parser().parse_args(["run", "rules.yaml", *argv])
    assert getattr(args, field) == value


@pytest.mark.parametrize("argv", [["--speed", "0"], ["--speed", "nan"], ["--backend", "curio"]])
def test_bad_run_options_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        build_parser().parse_args(["run", "rules.yaml", *argv])
    assert info.value.code == 2
    assert "--speed" in capsys.readouterr().err or "--backend" in " ".join(argv)
