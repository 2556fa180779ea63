"""The engine's skip counts: worked out when read, equal to counting each batch at once.

A batch the rules' checks turn down entirely is held as its scan, and the reasons of its
turned-down pairs are made from the same compiled rules when ``snipe status``, the demo,
the API or a backtest report reads the counts. Table-driven over the shipped rule sets and
sandbox markets of the names they watch (batches of one search answer's size, some with
purchases, under a roomy and a tight budget): the counts, their order, the examples and
what a status shows must be those of counting every reason of every decision as it is
made, which is what the engine did before.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from engine.hookspecs import hookimpl
from engine.models import Listing
from engine.rules import (
    BudgetState,
    Compiled,
    Criterion,
    Decision,
    EvalContext,
    NameView,
    RuleContext,
    RuleSet,
    evaluate,
    load_rules,
    scan,
    watching,
)
from engine.sandbox import MarketConfig
from engine.sandbox._market import Market
from engine.sandbox._routes_market import search_entry
from engine.sniper import EngineStatus
from engine.sniper._status import SKIPS_HELD, reason_kind
from engine.testing import make_context, make_listing, rules_for

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = [ROOT / "rules.example.yaml", *sorted((ROOT / "strategies").glob("*.yaml"))]
START = 1_767_225_600.0


def market_listings(ruleset: RuleSet, seed: int) -> list[Listing]:
    probe = Market(seed=seed, start=START, config=MarketConfig(size=0))
    featured = tuple(sorted(n for n in probe.items_by_name if ruleset.view(n).rules))
    config = MarketConfig(size=1200, featured=featured, featured_share=0.6, deal_share=0.1)
    market = Market(seed=seed, start=START, config=config)
    return [
        Listing.model_validate(
            search_entry(listing, START, v2=True, minified=False, delivery=False),
            context={"image_base_url": "https://images.invalid/"},
        )
        for listing in market.listings.values()
    ]


class Eager:
    """The counting the engine did before: every reason of every turned-down decision of
    a batch, counted when the batch is decided."""

    def __init__(self) -> None:
        self.skip_reasons: Counter[str] = Counter()
        self.skip_by_rule: Counter[tuple[str, str]] = Counter()
        self.skip_examples: dict[tuple[str, str], str] = {}

    def count(self, decisions: list[Decision]) -> None:
        for decision in decisions:
            if decision.accepted:
                continue
            for reason in decision.reasons:
                kind = reason_kind(reason)
                self.skip_reasons[kind] += 1
                self.skip_by_rule[decision.rule, kind] += 1
                self.skip_examples[decision.rule, kind] = reason


def decide(
    status: EngineStatus,
    ruleset: RuleSet,
    batch: list[Listing],
    ctx: EvalContext,
    hold: str = "decisions",
) -> list[Decision]:
    """What ``Engine.decide`` does with the rules' result and the status (``hold``:
    ``decisions`` as the engine does, or ``scan``: the scan itself)."""
    checked = scan(ruleset, batch, ctx)
    if not checked.decisions:
        decisions = checked.all_decisions()
        if hold == "scan":
            status.skipped_scan(checked)
        else:
            status.skipped_all(decisions)
        return decisions
    decisions = evaluate(ruleset, batch, ctx)
    status.skipped_all(decisions, buying=any(d.accepted for d in decisions))
    return decisions


def shown(status: EngineStatus | Eager) -> list[tuple[str, str, int]]:
    """What ``snipe status`` and the backtest report show: (rule, example, count), most
    frequent first, ties in the order they were first counted."""
    return [
        (rule, status.skip_examples[rule, kind], n)
        for (rule, kind), n in status.skip_by_rule.most_common()
    ]


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
@pytest.mark.parametrize("seed", [3, 11])
@pytest.mark.parametrize("tight", [False, True], ids=["roomy", "tight"])
@pytest.mark.parametrize("hold", ["decisions", "scan"])
def test_counts_read_later_equal_the_counts_made_at_once(
    path: Path, seed: int, tight: bool, hold: str
) -> None:
    ruleset = load_rules(path)
    listings = market_listings(ruleset, seed)
    prices = {"reference": {x.name: x.price * 2 for x in listings}}
    per_day = ruleset.budgets.per_day
    budget = BudgetState(spent_today=per_day - per_day // 20) if tight else BudgetState()
    lazy, eager = EngineStatus(), Eager()
    batches = [listings[i : i + 50] for i in range(0, len(listings), 50)]
    for n, batch in enumerate(batches):
        ctx = EvalContext(now=START + n, game="csgo", reference_prices=prices, budget=budget)
        decisions = decide(lazy, ruleset, batch, ctx, hold)
        assert decisions == evaluate(ruleset, batch, ctx)
        eager.count(decisions)
        if n % 7 == 3:  # read now and then, as a status line does
            assert shown(lazy) == shown(eager)
    assert shown(lazy) == shown(eager)
    assert list(lazy.skip_reasons.items()) == list(eager.skip_reasons.items())
    assert list(lazy.skip_by_rule.items()) == list(eager.skip_by_rule.items())
    assert list(lazy.skip_examples.items()) == list(eager.skip_examples.items())
    assert sum(eager.skip_by_rule.values()) > len(batches)  # the table turns many down


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
@pytest.mark.parametrize("seed", [3, 11])
def test_one_listing_counted_at_once_as_its_batch_would_be(path: Path, seed: int) -> None:
    """A feed event's way: the name's plan on the listing alone, and when no rule's checks
    pass it, its reasons counted at once (``skipped_pairs``); between them, batches held
    to be counted later (a search's). The counts, order and examples of counting every
    decision as it is made."""
    ruleset = load_rules(path)
    listings = market_listings(ruleset, seed)[:600]
    prices = {"reference": {x.name: x.price * 2 for x in listings}}
    lazy, eager = EngineStatus(), Eager()
    one_by_one = 0
    for n, listing in enumerate(listings):
        ctx = EvalContext(now=START + n, game="csgo", reference_prices=prices)
        entry = watching(ruleset, listing.name)
        passed: list[object] = []
        if entry:
            entry[2](listing, entry[0], ctx, passed.append)
        if entry and not passed and n % 5:
            lazy.skipped_pairs(entry[1], listing, entry[0], ctx)
            one_by_one += 1
        else:  # held as a batch, counted when read or with the next pairs
            decide(lazy, ruleset, [listing], ctx, "scan")
        eager.count(evaluate(ruleset, [listing], ctx))
        if n % 41 == 7:
            assert shown(lazy) == shown(eager)
    assert one_by_one > 50
    assert shown(lazy) == shown(eager)
    assert list(lazy.skip_reasons.items()) == list(eager.skip_reasons.items())
    assert list(lazy.skip_by_rule.items()) == list(eager.skip_by_rule.items())
    assert list(lazy.skip_examples.items()) == list(eager.skip_examples.items())


class CountingPlugin:
    """A criterion that rejects every listing and counts how often its reason is made."""

    def __init__(self) -> None:
        self.reasons_made = 0

    @hookimpl
    def snipe_register_criteria(self) -> list[Criterion]:
        def compile_(value: Any, rule: RuleContext) -> Compiled:
            def never(listing: Listing, view: NameView, ctx: EvalContext) -> str | None:
                self.reasons_made += 1
                return f"never at {listing.price}"

            def never_test(listing: Listing, view: NameView, ctx: EvalContext) -> bool:
                return False

            return Compiled(predicate=never, test=never_test, summary="never")

        return [Criterion("never", bool, compile_, description="rejects everything")]


NAME = "AK-47 | Redline (Field-Tested)"


def never_rules(plugin: CountingPlugin) -> RuleSet:
    """One rule on :data:`NAME` whose plugin criterion turns down every listing."""
    return rules_for(
        f"""rules:
  - name: never
    match: {{names: ["{NAME}"]}}
    max_price: "50.00"
    never: true
""",
        ("never", plugin),
    )


def test_no_reason_is_made_until_the_counts_are_read() -> None:
    plugin = CountingPlugin()
    ruleset = never_rules(plugin)
    status = EngineStatus()
    for n in range(20):
        listing = make_listing(name=NAME, item_id=str(n), price=10_000 + n)
        decide(status, ruleset, [listing], make_context())
    assert plugin.reasons_made == 0
    assert status.skip_by_rule == Counter({("never", "never at #"): 20})
    assert status.skip_examples[("never", "never at #")] == "never at 10019"
    assert plugin.reasons_made == 20
    status.skip_reasons  # noqa: B018 - read again: nothing new is made
    assert plugin.reasons_made == 20


def test_held_batches_are_counted_before_they_pile_up() -> None:
    plugin = CountingPlugin()
    ruleset = never_rules(plugin)
    status = EngineStatus()
    listings = [make_listing(name=NAME, item_id=str(n)) for n in range(100)]
    for _ in range(SKIPS_HELD // len(listings) + 1):
        decide(status, ruleset, listings, make_context())
    # counted without anybody asking: what is held stays bounded
    assert plugin.reasons_made >= SKIPS_HELD
    assert sum(status.skip_by_rule.values()) == (SKIPS_HELD // len(listings) + 1) * 100


def test_a_single_count_keeps_its_place_among_held_batches() -> None:
    ruleset = rules_for(
        f"""rules:
  - name: cheap
    match: {{names: ["{NAME}"]}}
    max_price: "5.00"
"""
    )
    status = EngineStatus()
    decide(status, ruleset, [make_listing(name=NAME, price=9_000)], make_context())
    status.skipped("cheap", "already bought (item 1)")
    decide(status, ruleset, [make_listing(name=NAME, price=8_000)], make_context())
    assert [(rule, status.skip_examples[rule, kind]) for rule, kind in status.skip_by_rule] == [
        ("cheap", "price $8.00 above max_price $5.00"),
        ("cheap", "already bought (item 1)"),
    ]
    assert list(status.skip_by_rule.values()) == [2, 1]


def test_a_batch_that_buys_never_waits_for_the_held_reasons() -> None:
    plugin = CountingPlugin()
    ruleset = never_rules(plugin)
    status = EngineStatus()
    listings = [make_listing(name=NAME, item_id=str(n)) for n in range(SKIPS_HELD)]
    decisions = evaluate(ruleset, listings, make_context())
    status.skipped_all(decisions, buying=True)  # past the bound, but purchases wait
    assert plugin.reasons_made == 0
    status.skipped_all(evaluate(ruleset, listings[:1], make_context()))  # nothing to buy
    assert plugin.reasons_made == SKIPS_HELD + 1
    assert sum(status.skip_by_rule.values()) == SKIPS_HELD + 1


def test_feed_counts_by_kind_keep_their_place_among_texts_and_batches() -> None:
    """A feed event's reasons of one kind are counted by their kind's slot and put in the
    counts when read; a reason given as text (a criterion without kinds), a single count
    and a held batch in between keep their places: the counts, order and examples of
    counting every decision as it is made."""
    plugin = CountingPlugin()
    ruleset = rules_for(
        f"""rules:
  - name: never
    match: {{names: ["{NAME}"]}}
    max_price: "50.00"
    never: true
  - name: cheap
    match: {{names: ["{NAME}"]}}
    max_price: "5.00"
    discount: 10
""",
        ("never", plugin),
    )
    lazy, eager = EngineStatus(), Eager()
    for n in range(60):
        listing = make_listing(
            name=NAME,
            item_id=str(n),
            price=(60_000, 3_000, 9_000)[n % 3] + n,  # the first: a kind, then a text
            platform_price=(None, 1_000, 3_100)[n % 4 % 3],
        )
        ctx = make_context()
        view = ruleset.view(NAME)
        if n % 9 == 4:  # a search's batch, held
            decide(lazy, ruleset, [listing], ctx)
        else:
            lazy.skipped_pairs(view.rules, listing, view, ctx)
        decisions = evaluate(ruleset, [listing], ctx)
        assert not any(d.accepted for d in decisions)
        eager.count(decisions)
        if n % 13 == 6:
            lazy.skipped("cheap", f"already bought (item {n})")
            eager.skip_reasons[reason_kind(f"already bought (item {n})")] += 1
            eager.skip_by_rule["cheap", reason_kind(f"already bought (item {n})")] += 1
            eager.skip_examples["cheap", reason_kind(f"already bought (item {n})")] = (
                f"already bought (item {n})"
            )
        if n % 17 == 8:
            assert shown(lazy) == shown(eager)
    assert list(lazy.skip_reasons.items()) == list(eager.skip_reasons.items())
    assert list(lazy.skip_by_rule.items()) == list(eager.skip_by_rule.items())
    assert list(lazy.skip_examples.items()) == list(eager.skip_examples.items())
    assert len(eager.skip_by_rule) >= 4  # texts and kinds of both rules
