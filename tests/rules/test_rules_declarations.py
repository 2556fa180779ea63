"""The core reads what a compiled criterion declares (games, references, trade-locked
listings), never a criterion's key: a third-party criterion is served like a built-in."""

from __future__ import annotations

import math
from typing import Any

import pytest

from engine._plugins import make_plugin_host
from engine.hookspecs import hookimpl
from engine.rules import Compiled, Criterion, RuleContext, check_rules_text
from engine.testing import NOW, RULES_HEADER, decide, make_listing, rules_for

NAME = "AK-47 | Redline (Field-Tested)"


class Declaring:
    """A plugin whose criterion ``declare`` declares what its value says, and passes all."""

    @hookimpl
    def snipe_register_criteria(self) -> list[Criterion]:
        def compile_(value: dict[str, Any], rule: RuleContext) -> Compiled:
            return Compiled(
                predicate=lambda listing, view, ctx: None,
                games=frozenset(value.get("games", ())),
                references=tuple(value.get("references", ())),
                trade_locked=value.get("locked"),
            )

        return [Criterion("declare", dict[str, Any], compile_, "declares what it is told")]


def rules(declare: str, rest: str = "") -> str:
    return (
        f'rules:\n  - name: r\n    match: {{names: ["{NAME}"]{rest}}}\n    max_price: "50.00"\n'
        f"    declare: {declare}\n"
    )


@pytest.mark.parametrize(
    ("declare", "rest", "game", "games", "sources", "locked"),
    [
        ("{}", "", None, frozenset(), frozenset(), None),
        ("{games: [dota2]}", "", "dota2", {"dota2"}, frozenset(), None),
        ("{games: [dota2, csgo]}", ", game: csgo", "csgo", {"csgo"}, frozenset(), None),
        ("{games: [dota2, rust]}", "", None, {"dota2", "rust"}, frozenset(), None),
        (
            "{references: [market.p25, service.min]}",
            "",
            None,
            frozenset(),
            {"market.p25", "service.min"},
            None,
        ),
        ("{locked: 3600}", "", None, frozenset(), frozenset(), 3600.0),
        ("{locked: .inf}", "", None, frozenset(), frozenset(), math.inf),
    ],
    ids=["nothing", "one-game", "narrowed-by-match", "two-games", "references", "lock", "any-lock"],
)
def test_the_rule_set_is_built_from_the_declarations(
    declare: str, rest: str, game: str | None, games: Any, sources: Any, locked: float | None
) -> None:
    ruleset = rules_for(rules(declare, rest), ("declaring", Declaring()))
    [rule] = ruleset.rules
    assert (rule.game, rule.games, rule.trade_locked) == (game, games, locked)
    assert ruleset.sources_used == sources
    assert ruleset.fetch_trade_locked is (locked is not None)


@pytest.mark.parametrize(
    ("declare", "rest", "message"),
    [
        ("{games: [dota2]}", ", game: csgo", "games with none in common (match: csgo; declare"),
        ("{references: [steam.median]}", "", "reads the price source(s) 'steam.median', which"),
    ],
)
def test_declarations_that_cannot_be_served_are_errors(
    declare: str, rest: str, message: str
) -> None:
    result = check_rules_text(
        RULES_HEADER + rules(declare, rest),
        "r.yaml",
        host=make_plugin_host(load_entry_points=False, plugins=[("declaring", Declaring())]),
    )
    assert any(message in str(p) for p in result.errors), result.errors


def test_a_trade_locked_listing_passes_only_where_a_criterion_accepts_it() -> None:
    locked = make_listing(name=NAME, unlock_at=NOW + 86_400, send_until=NOW + 9 * 86_400)
    without = rules_for(rules("{}"), ("declaring", Declaring()))
    with_lock = rules_for(rules("{locked: 172800}"), ("declaring", Declaring()))
    [refused] = decide(without, [locked])
    [accepted] = decide(with_lock, [locked])
    assert not refused.accepted
    assert any("trade-locked listing" in r for r in refused.reasons)
    assert accepted.accepted
    assert accepted.allow_trade_locked


def test_the_builtin_criteria_declare_what_the_core_used_to_read_by_key() -> None:
    ruleset = rules_for(
        'rules:\n  - name: r\n    match: {names: ["x"], game: rust}\n    max_price: "5.00"\n'
        "    discount: {min: 10, versus: [market.p25, service.min]}\n"
        "    hold: {max_wait: 2d, extra_discount: 3}\n"
    )
    [rule] = ruleset.rules
    assert rule.game == "rust"
    assert rule.trade_locked == 2 * 86_400
    assert set(rule.references) == {"market.p25", "service.min"}
