"""``discount.versus`` with learned and listed references: the lowest of a list, agreement,
the guards, Doppler phases, and reasons that name the reference and its value. Pure and
table-driven: a rule, a listing, the quotes, the verdict and the reason a trader reads."""

from __future__ import annotations

from typing import Any

import pytest

from engine.rules import Quote, check_rules_text
from engine.testing import NOW, RULES_HEADER, decide, make_listing, rules_for

REDLINE = "AK-47 | Redline (Field-Tested)"
KARAMBIT = "★ Karambit | Doppler (Factory New)"
HOUR = 3600.0


def rule(discount: str, names: str = f'["{REDLINE}"]') -> str:
    return (
        "rules:\n  - name: r\n"
        f"    match: {{names: {names}, game: csgo}}\n"
        '    max_price: "1000.00"\n'
        f"    discount: {discount}\n"
    )


def quotes(**tables: dict[Any, Quote]) -> dict[str, dict[Any, Quote]]:
    return {name.replace("_", "."): table for name, table in tables.items()}


P25 = {(REDLINE, None): Quote(10_000, 54, NOW - 180)}
MEDIAN = {(REDLINE, None): Quote(12_000, 54, NOW - 180)}
FILE = {(REDLINE, None): Quote(11_000, None, NOW - 2 * HOUR)}


@pytest.mark.parametrize(
    ("discount", "listing", "refs", "accepted", "reason"),
    [
        # the learned p25 is the reference; reasons name it, its value, count and age
        (
            "{min: 25, versus: market.p25}",
            {"price": 7_500},
            {"market.p25": P25},
            True,
            "discount 25% (at least 25%) vs market.p25 $10.00, 54 observations, 3m old",
        ),
        (
            "{min: 25, versus: market.p25}",
            {"price": 7_501},
            {"market.p25": P25},
            False,
            "discount 24.99% below 25% vs market.p25 (reference $10.00, 54 observations, 3m old)",
        ),
        (
            "{min: 25, versus: market.p25}",
            {"price": 7_500},
            {},
            False,
            "no reference price from market.p25 for this item",
        ),
        # a list takes the lowest usable reference
        (
            "{min: 20, versus: [market.median, platform_price]}",
            {"price": 10_000, "platform_price": 15_000},
            {"market.median": MEDIAN},
            False,
            "vs market.median (reference $12.00",
        ),
        (
            "{min: 20, versus: [market.median, platform_price]}",
            {"price": 8_000, "platform_price": 10_000},
            {"market.median": MEDIAN},
            True,
            "vs platform_price $10.00",
        ),
        (
            "{min: 20, versus: [market.median, platform_price]}",
            {"price": 8_000, "platform_price": 10_000},
            {},
            True,
            "vs platform_price $10.00",
        ),
        # agreement: every source present and within the percentage
        (
            "{min: 10, versus: [market.median, file.buff], agree: 10}",
            {"price": 9_000},
            {"market.median": MEDIAN, "file.buff": FILE},
            True,
            "vs file.buff $11.00",
        ),
        (
            "{min: 10, versus: [market.median, file.buff], agree: 5}",
            {"price": 9_000},
            {"market.median": MEDIAN, "file.buff": FILE},
            False,
            "references disagree: file.buff $11.00 and market.median $12.00 are 9.09% apart, "
            "more than agree 5%",
        ),
        (
            "{min: 10, versus: [market.median, file.buff], agree: 50}",
            {"price": 9_000},
            {"market.median": MEDIAN},
            False,
            "no reference price from file.buff for this item (agree needs every source)",
        ),
        # guards: a reference failing one is no reference, and the reason says which
        (
            "{min: 25, versus: market.p25, min_observations: 55}",
            {"price": 5_000},
            {"market.p25": P25},
            False,
            "market.p25 fails min_observations 55: 54 observations",
        ),
        (
            "{min: 25, versus: market.p25, min_observations: 54}",
            {"price": 5_000},
            {"market.p25": P25},
            True,
            None,
        ),
        (
            "{min: 25, versus: market.p25, max_age: 2m}",
            {"price": 5_000},
            {"market.p25": P25},
            False,
            "market.p25 fails max_age 2m: 3m old",
        ),
        (
            "{min: 25, versus: [market.p25, file.buff], max_age: 1h}",
            {"price": 7_000},
            {"market.p25": P25, "file.buff": FILE},
            True,
            "vs market.p25 $10.00",
        ),
        (
            "{min: 25, versus: [market.p25, file.buff], max_age: 1m}",
            {"price": 7_000},
            {"market.p25": P25, "file.buff": FILE},
            False,
            "market.p25 fails max_age 1m: 3m old; file.buff fails max_age 1m: 2h old",
        ),
        (
            "{min: 25, versus: platform_price, min_observations: 5}",
            {"price": 5_000, "platform_price": 10_000},
            {},
            False,
            "platform_price fails min_observations 5: it counts no observations",
        ),
    ],
)
def test_references_and_guards(
    discount: str, listing: dict[str, Any], refs: dict[str, Any], accepted: bool, reason: str | None
) -> None:
    text = rule(discount) + "prices:\n  lists:\n    buff: {path: buff.csv}\n"
    rules = rules_for(text)
    [decision] = decide(rules, [make_listing(**listing)], references=refs)
    assert decision.accepted is accepted, decision.reasons
    if reason is not None:
        assert any(reason in r for r in decision.reasons), decision.reasons


@pytest.mark.parametrize(
    ("listing", "accepted", "reason"),
    [
        ({"phase": "Ruby", "price": 500_000}, True, "vs market.p25 $900.00"),
        ({"phase": "Phase 2", "price": 500_000}, False, "vs market.p25 (reference $300.00"),
        # the phase written into the name counts as the phase
        ({"name": "★ Karambit | Doppler Phase 2 (Factory New)", "price": 200_000}, True, None),
        # a phase without its own reference is never judged by another phase's price
        (
            {"phase": "Sapphire", "price": 100_000},
            False,
            "no reference price from market.p25 for this item in phase Sapphire",
        ),
        # no phase known: the name's reference over all phases
        ({"price": 100_000}, True, "vs market.p25 $400.00"),
    ],
)
def test_doppler_phases_have_their_own_reference(
    listing: dict[str, Any], accepted: bool, reason: str | None
) -> None:
    refs = {
        "market.p25": {
            (KARAMBIT, "Ruby"): Quote(900_000, 20, NOW),
            (KARAMBIT, "Phase 2"): Quote(300_000, 20, NOW),
            (KARAMBIT, None): Quote(400_000, 40, NOW),
        }
    }
    rules = rules_for(rule("{min: 25, versus: market.p25}", names=f'["{KARAMBIT}"]'))
    [decision] = decide(
        rules, [make_listing(**{"name": KARAMBIT, "float": 0.01, **listing})], references=refs
    )
    assert decision.accepted is accepted, decision.reasons
    if reason is not None:
        assert any(reason in r for r in decision.reasons), decision.reasons


@pytest.mark.parametrize(
    ("discount", "where", "words"),
    [
        (
            "{min: 25, versus: market.p52}",
            "10:33",
            "unknown price source 'market.p52'; did you mean",
        ),
        ("{min: 25, versus: [market.p25, steam]}", "10:46", "unknown price source 'steam'"),
        ("{min: 25, versus: [market.p25], agree: 10}", "10:15", "`agree` needs at least two"),
        (
            "{min: 25, versus: market.p25, min_observations: 0}",
            "10:63",
            "greater than or equal to 1",
        ),
        ("{min: 25, versus: market.p25, max_age: soon}", "10:54", "duration"),
        ("{min: 25, versus: [market.p25, market.p25]}", "10:15", "names a price source twice"),
    ],
)
def test_errors_in_reference_fields_name_file_line_column(
    discount: str, where: str, words: str
) -> None:
    result = check_rules_text(RULES_HEADER + rule(discount), "rules.yaml")
    assert result.ruleset is None
    text = "\n".join(str(p) for p in result.errors)
    assert f"rules.yaml:{where}" in text, text
    assert words in text, text


@pytest.mark.parametrize(
    ("prices", "where", "words"),
    [
        (
            "  lists:\n    buff: {every: 1h}\n",
            "prices.lists.buff",
            "exactly one of `path` and `url`",
        ),
        ("  lists:\n    Buff: {path: x.csv}\n", "prices.lists", "lower_snake_case"),
        ("  lists:\n    b: {url: 'ftp://x'}\n", "prices.lists.b.url", "http://"),
        ("  market: {window: 1m}\n", "prices.market.window", "greater than or equal"),
        ("  markt: {}\n", "prices.markt", "market"),
    ],
)
def test_errors_in_the_prices_section_name_the_field(prices: str, where: str, words: str) -> None:
    result = check_rules_text(
        RULES_HEADER + rule("{min: 25, versus: market.p25}") + "prices:\n" + prices, "rules.yaml"
    )
    assert result.ruleset is None
    text = "\n".join(str(p) for p in result.errors)
    assert where in text, text
    assert words in text, text
    assert "rules.yaml:" in text
