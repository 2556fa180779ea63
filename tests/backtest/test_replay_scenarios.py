"""Table-driven replays: a small hand-written recording, a rule set, the purchases expected."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .support import backtest, listing, market, rules, write

A, B, C = listing("1", 8000), listing("2", 9500), listing("3", 7000)

HOLD = """    hold: {max_wait: 7d, min_send_window: 1h}"""


def _with(steps: list[Any], *extra: Any) -> list[Any]:
    return sorted([*steps, *extra], key=lambda s: s[0])


SCENARIOS: list[tuple[str, list[Any], dict[str, Any], dict[str, Any], list[tuple[str, str]]]] = [
    # name, recording, rules(...), options, expected [(item_id, final state)]
    ("a deal is bought, a shallow one is not", market(300, [A, B]), {}, {}, [("1", "COMPLETED")]),
    (
        "a deal that appears later is bought when it appears",
        _with(market(300, [A, B]), (30.0, "snap", [A, B, C])),
        {},
        {},
        [("1", "COMPLETED"), ("3", "COMPLETED")],
    ),
    ("nothing over max_price", market(300, [A]), {"max_price": "7.00"}, {}, []),
    (
        "the budget stops the second purchase",
        _with(market(300, [A]), (30.0, "snap", [A, C])),
        {"budget": "10.00"},
        {},
        [("1", "COMPLETED")],
    ),
    (
        "a listing gone before the request arrives is not bought",
        [*market(0, [A]), (0.1, "snap", []), *market(300, [])[2:]],
        {},
        {"latency": 0.25},
        [("1", "FAILED")],
    ),
    (
        "the competing buyer takes a deep discount first",
        market(300, [A]),
        {},
        {"race_factor": 100.0},
        [("1", "FAILED")],
    ),
    (
        "a trade-locked deal is reserved, then completes when it unlocks",
        market(7200, [listing("9", 8000, unlock_in=3600, send_in=90_000)], every=60.0),
        {"hold": HOLD, "discount": 10},
        {},
        [("9", "COMPLETED")],
    ),
]


@pytest.mark.parametrize(
    ("recording", "rule_args", "options", "expected"),
    [pytest.param(*s[1:], id=s[0]) for s in SCENARIOS],
)
async def test_replay_scenario(
    tmp_path: Path,
    recording: list[Any],
    rule_args: dict[str, Any],
    options: dict[str, Any],
    expected: list[tuple[str, str]],
) -> None:
    data = write(tmp_path / "rec", recording, include_hold="hold" in rule_args)
    run = await backtest(rules(**rule_args), data, **{"race_factor": 0.0, **options})
    assert [(p["item_id"], p["state"]) for p in run.purchases] == expected


async def test_a_lost_race_is_reported_as_a_miss(tmp_path: Path) -> None:
    data = write(tmp_path / "rec", market(300, [A]))
    run = await backtest(rules(), data, race_factor=100.0)
    assert run.refusals == {"lost race": 1}


async def test_a_purchase_is_valued_at_the_market_price_later(tmp_path: Path) -> None:
    later = listing("5", 9900)
    data = write(tmp_path / "rec", _with(market(300, [A]), (50.0, "snap", [later])))
    run = await backtest(rules(), data, race_factor=0.0, value_after=55.0)
    (trade,) = run.trades.values()
    assert (trade.price, trade.reference, trade.later_price) == (8000, 10_000, 9900)


@pytest.mark.parametrize(
    ("unlock_at", "send_until", "at", "status"),
    [
        (None, None, 30.0, 2),  # an instant trade settles after a minute
        (None, None, 60.0, 5),
        (100, 200, 99.0, 0),  # reserved until it unlocks
        (100, 200, 100.0, 5),
        (100, 50, 49.0, 0),  # not deliverable before send_until: refunded then
        (100, 50, 50.0, 6),
    ],
)
def test_trade_status_over_time(
    unlock_at: int | None, send_until: int | None, at: float, status: int
) -> None:
    from engine.backtest import ReplayTrade

    trade = ReplayTrade(1, "p", "9", "x", 8000, 0.0, unlock_at, send_until, None)
    assert trade.status(at)[0] == status
