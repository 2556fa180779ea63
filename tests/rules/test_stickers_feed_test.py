"""What the feed already tells of a ``stickers:`` criterion that needs a search
(``Compiled.feed_test``, part of ``CompiledRule.feed_passes``): a feed listing carries
its stickers' names only, so it costs no confirming search when those names, and the
stickers' prices searches showed recently (``EvalContext.sticker_prices``), cannot make
the criterion pass whatever the search would show; it is searched otherwise."""

from __future__ import annotations

from typing import Any

import pytest

from engine.rules import CompiledRule, EvalContext, RuleSet
from engine.testing import NOW, make_listing, rules_for

NAME = "AK-47 | Redline (Field-Tested)"
TITAN, CROWN, HELLO = "Titan (Holo) | Katowice 2014", "Crown (Foil)", "Hello AK-47"
PRICES = {TITAN: 90_000, CROWN: 900, HELLO: 0}  # as a recent search showed them


def rule(stickers: str) -> tuple[RuleSet, CompiledRule]:
    ruleset = rules_for(
        f'rules:\n  - name: r\n    match: {{names: ["{NAME}"]}}\n    max_price: "50.00"\n'
        f"    stickers: {stickers}\n"
    )
    return ruleset, ruleset.rule("r")


def feed_passes(stickers: str, names: list[str] | None, prices: dict[str, int]) -> bool:
    ruleset, compiled = rule(stickers)
    assert compiled.needs_search
    assert compiled.feed_passes is not None
    listing = make_listing(sticker_names=names)  # as the feed tells it: names only
    context = EvalContext(now=NOW, game="csgo", sticker_prices=prices)
    return compiled.feed_passes(listing, ruleset.view(NAME), context)


@pytest.mark.parametrize(
    ("stickers", "names", "prices", "searched"),
    [
        # no sticker at all (the feed's null or []): no value, no count to reach
        ('{min_value: "20.00"}', None, {}, False),
        ('{min_value: "20.00"}', [], PRICES, False),
        ("{min_count: 2, max_wear: 0.1}", [CROWN], {}, False),  # too few names
        ("{min_count: 2, max_wear: 0.1}", [CROWN, CROWN], {}, True),  # wear unknown
        ('{min_value: "1.00", names: ["' + TITAN + '"]}', [CROWN, HELLO], {}, False),
        # prices known: the value cannot reach min_value, whatever wear and slot are
        ('{min_value: "20.00"}', [CROWN, CROWN, HELLO], PRICES, False),
        ('{min_value: "20.00"}', [CROWN, TITAN], PRICES, True),
        ('{min_value: "20.00", max_wear: 0.05}', [TITAN], PRICES, True),
        # a price not known (never seen, or too old to be in the context): a search tells
        ('{min_value: "20.00"}', [CROWN, "Unseen"], PRICES, True),
        ('{min_value: "20.00"}', [CROWN], {}, True),
        ('{min_value: "20.00", slots: [0]}', [TITAN], {}, True),
    ],
    ids=[
        "null-names",
        "empty-names",
        "too-few-names",
        "enough-names-wear-unknown",
        "none-of-the-wanted-names",
        "known-prices-too-low",
        "known-prices-enough",
        "enough-value-wear-unknown",
        "one-price-unknown",
        "no-price-known",
        "slots-unknown",
    ],
)
def test_a_feed_listing_is_searched_only_when_its_sticker_names_could_pass(
    stickers: str, names: list[str] | None, prices: dict[str, int], searched: bool
) -> None:
    assert feed_passes(stickers, names, prices) is searched


@pytest.mark.parametrize(
    ("stickers", "shown", "accepted"),
    [
        ('{min_value: "20.00"}', [{"name": TITAN, "price": 90_000, "wear": 0.5, "slot": 1}], 1),
        ('{min_value: "20.00"}', [{"name": CROWN, "price": 900, "wear": None, "slot": 0}], 0),
        ("{min_count: 1, max_wear: 0.1}", [{"name": CROWN, "price": 0, "wear": 0.3}], 0),
    ],
)
def test_a_searched_listing_is_judged_by_the_criterion_itself(
    stickers: str, shown: list[dict[str, Any]], accepted: int
) -> None:
    # with its stickers' details, feed_passes agrees with the rule's whole check
    ruleset, compiled = rule(stickers)
    listing = make_listing(stickers=shown, sticker_names=[s["name"] for s in shown])
    context = EvalContext(now=NOW, game="csgo", sticker_prices={})  # never read here
    view = ruleset.view(NAME)
    assert compiled.feed_passes is not None
    assert compiled.feed_passes(listing, view, context) is bool(accepted)
    assert compiled.passes(listing, view, context) is bool(accepted)


def test_a_rule_the_feed_can_judge_needs_no_feed_test() -> None:
    # counting by name reads the feed's sticker_names: no search, no feed_passes
    _, compiled = rule(f'{{min_count: 1, names: ["{TITAN}"]}}')
    assert not compiled.needs_search
    assert compiled.feed_passes is None
