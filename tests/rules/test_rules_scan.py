"""The engine's fast path (:func:`scan`) decides exactly what :func:`evaluate` decides.

Table-driven over the shipped rule sets and sandbox markets featuring the names they
watch, under a roomy and a tight budget: the decisions a buyer acts on, the rejections
worked out on demand, the per-rule counts and every skip reason must all agree.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from engine.models import Listing
from engine.rules import BudgetState, Decision, EvalContext, RuleSet, evaluate, load_rules, scan
from engine.sandbox import MarketConfig
from engine.sandbox._market import Market
from engine.sandbox._routes_market import search_entry

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = [ROOT / "rules.example.yaml", *sorted((ROOT / "strategies").glob("*.yaml"))]
START = 1_767_225_600.0


def market_listings(ruleset: RuleSet, seed: int) -> list[Listing]:
    """Listings of a sandbox market as the client reads them from a v2 search answer."""
    probe = Market(seed=seed, start=START, config=MarketConfig(size=0))
    featured = tuple(sorted(n for n in probe.items_by_name if ruleset.view(n).rules))
    config = MarketConfig(size=1500, featured=featured, featured_share=0.6, deal_share=0.3)
    market = Market(seed=seed, start=START, config=config)
    return [
        Listing.model_validate(
            search_entry(listing, START, v2=True, minified=False, delivery=False),
            context={"image_base_url": "https://images.invalid/"},
        )
        for listing in market.listings.values()
    ]


def contexts(ruleset: RuleSet, listings: list[Listing]) -> list[EvalContext]:
    prices = {"reference": {x.name: x.price * 2 for x in listings}}
    roomy = EvalContext(now=START, game="csgo", reference_prices=prices)
    # a budget that only a few purchases fit: allocation turns the others down
    tight = EvalContext(
        now=START,
        game="csgo",
        reference_prices=prices,
        budget=BudgetState(spent_today=ruleset.budgets.per_day - ruleset.budgets.per_day // 20),
    )
    return [roomy, tight]


def skip_counts(decisions: list[Decision]) -> Counter[tuple[str, str]]:
    return Counter((d.rule, r) for d in decisions if not d.accepted for r in d.reasons)


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
@pytest.mark.parametrize("seed", [1, 7])
def test_scan_decides_what_evaluate_decides(path: Path, seed: int) -> None:
    ruleset = load_rules(path)
    listings = market_listings(ruleset, seed)
    for context in contexts(ruleset, listings):
        full = evaluate(ruleset, listings, context)
        fast = scan(ruleset, listings, context)
        # what the buyer acts on: the accepted decisions and the allocation's refusals
        checked = fast.rejections()
        assert full == checked + fast.decisions
        assert fast.all_decisions() == full
        assert [d for d in full if d.accepted] == [d for d in fast.decisions if d.accepted]
        assert all(not d.accepted for d in checked)
        assert fast.skip_reasons() == skip_counts(full)
        by_rule = Counter(d.rule for d in checked)
        assert fast.rejected_by_rule() == dict(by_rule)


def test_the_table_exercises_both_outcomes() -> None:
    # the equality above would hold vacuously on a market no rule buys from
    accepted = rejected = 0
    for path in SHIPPED:
        ruleset = load_rules(path)
        listings = market_listings(ruleset, 1)
        fast = scan(ruleset, listings, contexts(ruleset, listings)[0])
        accepted += sum(d.accepted for d in fast.decisions)
        rejected += sum(fast.rejected_by_rule().values())
    assert accepted > 0
    assert rejected > accepted


def test_a_tight_budget_is_refused_in_the_fast_path_too() -> None:
    ruleset = load_rules(ROOT / "rules.example.yaml")
    listings = market_listings(ruleset, 1)
    roomy = scan(ruleset, listings, EvalContext(now=START, game="csgo"))
    bought = [d for d in roomy.decisions if d.accepted]
    assert len(bought) >= 2
    spent = ruleset.budgets.per_day - min(d.price for d in bought)
    squeezed = EvalContext(now=START, game="csgo", budget=BudgetState(spent_today=spent))
    fast = scan(ruleset, listings, squeezed)
    full = evaluate(ruleset, listings, squeezed)
    assert sum(d.accepted for d in fast.decisions) < len(bought)
    refused = [d for d in fast.decisions if not d.accepted]
    assert any("daily budget" in r for d in refused for r in d.reasons)
    assert fast.all_decisions() == full
