"""Tests of the paint-seed plugin, written with snipe's contract test kit."""

from __future__ import annotations

import pytest
import snipe_paintseed

from engine.testing import check_criterion_contract, decide, make_listing, rules_for

RULE = """
rules:
  - name: blue-gems
    match: {names: ["AK-47 | Case Hardened (Field-Tested)"], game: csgo}
    paint_seed: {seeds: [661, "955-957"]}
    max_price: "500.00"
"""
NAME = "AK-47 | Case Hardened (Field-Tested)"


def test_keeps_the_criterion_contract() -> None:
    check_criterion_contract(
        snipe_paintseed.PAINT_SEED,
        valid=[{"seeds": [661]}, {"seeds": ["0-1000"]}, {"seeds": [1, "2-3", 2]}],
        invalid=[{}, {"seeds": []}, {"seeds": [1001]}, {"seeds": ["9-1"]}, {"seed": [1]}],
    )


@pytest.mark.parametrize(
    ("seed", "accepted", "reason"),
    [
        (661, True, None),
        (955, True, None),  # first of a range
        (957, True, None),  # last of a range: bounds are inclusive
        (958, False, "paint seed 958 not in 661, 955, 956, 957"),
        (None, False, "listing carries no paint seed"),
    ],
)
def test_decides_by_paint_seed(seed: int | None, accepted: bool, reason: str | None) -> None:
    rules = rules_for(RULE, ("paintseed", snipe_paintseed))
    [decision] = decide(rules, [make_listing(name=NAME, price=300_000, paintseed=seed)])
    assert decision.accepted is accepted
    if reason is not None:
        assert reason in decision.reasons


def test_a_typo_in_its_key_is_reported_with_the_closest_key() -> None:
    from engine import ConfigError

    with pytest.raises(ConfigError, match=r"unknown key 'seed'; did you mean 'seeds'\?"):
        rules_for(RULE.replace("{seeds:", "{seed:"), ("paintseed", snipe_paintseed))
