"""A search judges only what changed: decisions and skip counts kept per searched name.

Table-driven over the shipped rule sets and sandbox markets of the names they watch: a
run of searches where between two rounds some listings change price, some go, some come
and the rest are the very same objects (as the client's ListingMemo gives them) must give
the decisions judging everything afresh gives, and the same skip counts, in the same
order, with the same examples; only the listings not judged before are judged, and
never a listing of a rule whose decisions read more than the listing (the clock, a
reference price, a plugin's criterion that does not say).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from engine.models import Listing
from engine.rules import Decision, EvalContext, RuleSet, Scan, evaluate, load_rules, scan
from engine.sniper import EngineStatus, _judged
from engine.sniper._judged import Judge, JudgedNames, TurnedDown
from engine.testing import make_context, make_listing, rules_for

from .test_skip_counts import (
    NAME,
    SHIPPED,
    START,
    CountingPlugin,
    Eager,
    market_listings,
    never_rules,
    shown,
)


def search_decide(
    judged: JudgedNames,
    status: EngineStatus,
    ruleset: RuleSet,
    found: dict[str, list[Listing]],
    ctx: EvalContext,
) -> list[Decision]:
    """What ``decide_search`` does with a search answer (``found``: by name)."""
    kept = judged.decide_answer(ruleset, found, ctx.game, lambda: ctx)
    if kept is None:  # a pair passed: the whole answer as Engine.decide does it
        decisions = evaluate(ruleset, [x for group in found.values() for x in group], ctx)
        status.skipped_all(decisions, buying=any(d.accepted for d in decisions))
        return decisions
    status.skipped_tallies(kept[1])
    return list(kept[0])


def by_name(listings: list[Listing]) -> dict[str, list[Listing]]:
    found: dict[str, list[Listing]] = {}
    for listing in listings:
        found.setdefault(listing.name, []).append(listing)
    return found


def churn(listings: list[Listing], rng: random.Random, round_: int) -> list[Listing]:
    """The next search's listings: about 3% repriced (new objects), 2% gone, a few new
    ones, the rest the very same objects."""
    out = []
    for listing in listings:
        roll = rng.random()
        if roll < 0.02:
            continue
        if roll < 0.05:
            listing = listing.model_copy(update={"price": max(1, listing.price - 1_000)})
        out.append(listing)
    for i in range(5):
        model = rng.choice(listings)
        out.append(model.model_copy(update={"item_id": f"new-{round_}-{i}"}))
    return out


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
@pytest.mark.parametrize("seed", [3, 11])
def test_kept_decisions_and_counts_equal_judging_afresh(
    path: Path, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    looked_at: list[Listing] = []

    def scan_counting(ruleset: RuleSet, fresh: list[Listing], ctx: EvalContext) -> Scan:
        looked_at.extend(fresh)
        return scan(ruleset, fresh, ctx)

    monkeypatch.setattr(_judged, "scan", scan_counting)
    ruleset = load_rules(path)
    rng = random.Random(seed)
    listings = market_listings(ruleset, seed)
    judged, status, eager = JudgedNames(), EngineStatus(), Eager()
    kept_path = [0, 0]  # watched listings judged and listed, in later searches where no
    # pair passed
    for n in range(6):
        if n:
            listings = churn(listings, rng, n)
        # the clock moves on between searches: kept decisions must not depend on it
        ctx = EvalContext(now=START + 600 * n, game="csgo")
        names = list(by_name(listings).items())
        for first in range(0, len(names), 4):  # searches of 4 names
            found = dict(names[first : first + 4])
            looked_at.clear()
            decisions = search_decide(judged, status, ruleset, found, ctx)
            flat = [x for group in found.values() for x in group]
            assert decisions == evaluate(ruleset, flat, ctx)
            eager.count(decisions)
            if n and not any(d.accepted for d in decisions):
                kept_path[0] += sum(1 for x in looked_at if ruleset.view(x.name).rules)
                kept_path[1] += sum(1 for x in flat if ruleset.view(x.name).rules)
        assert shown(status) == shown(eager)  # read now and then, as a status line does
    assert list(status.skip_reasons.items()) == list(eager.skip_reasons.items())
    assert list(status.skip_by_rule.items()) == list(eager.skip_by_rule.items())
    assert list(status.skip_examples.items()) == list(eager.skip_examples.items())
    assert sum(eager.skip_by_rule.values()) > 100  # the table turns many down
    kinds = {r.listing_only for r in ruleset.rules}
    if kinds == {True}:  # a few listings are judged again, not the market
        assert 0 < kept_path[0] < kept_path[1] / 5
    elif kinds == {False}:  # every one, every time
        assert kept_path[0] == kept_path[1]


RULES = f"""rules:
  - name: plain
    match: {{names: ["{NAME}"]}}
    discount: 30
    float: {{max: 0.2}}
    max_price: "50.00"
"""


def judge_counting(ruleset: RuleSet, ctx: EvalContext) -> tuple[list[int], Judge]:
    calls: list[int] = []

    def judge(fresh: list[Listing]) -> Scan | None:
        calls.append(len(fresh))
        checked = scan(ruleset, fresh, ctx)
        return None if checked.decisions else checked

    return calls, judge


def made(mine: list[Any]) -> list[Decision]:
    """The decisions ``JudgedNames.decide`` keeps for a name, made as a search's are."""
    return list(TurnedDown([mine], sum(len(e[1]) for e in mine)))


def listings_of(n: int, **fields: object) -> list[Listing]:
    return [
        make_listing(name=NAME, item_id=str(i), price=20_000 + i, platform_price=21_000, **fields)
        for i in range(n)
    ]


@pytest.mark.parametrize(
    ("what", "second", "judged_again"),
    [
        ("the same listings", lambda xs, rs, game: (xs, rs, game), []),
        (
            "one listing changed",
            lambda xs, rs, game: ([*xs[:3], xs[3].model_copy(update={"price": 19_000})], rs, game),
            [1],
        ),
        (
            "one listing between others changed",
            lambda xs, rs, game: (
                [*xs[:2], xs[2].model_copy(update={"price": 20_001}), xs[3]],
                rs,
                game,
            ),
            [1],
        ),
        (
            "one listing came",
            lambda xs, rs, game: (
                [
                    xs[0],
                    make_listing(name=NAME, item_id="9", price=20_000, platform_price=21_000),
                    *xs[1:],
                ],
                rs,
                game,
            ),
            [1],
        ),
        ("another order", lambda xs, rs, game: (xs[::-1], rs, game), []),
        ("one listing gone", lambda xs, rs, game: (xs[:3], rs, game), []),
        ("another game", lambda xs, rs, game: (xs, rs, "dota2"), [4]),
        ("other rules", lambda xs, rs, game: (xs, rules_for(RULES), game), [4]),
    ],
)
def test_what_is_judged_again(
    what: str, second: Callable[..., tuple[list[Listing], RuleSet, str]], judged_again: list[int]
) -> None:
    ruleset = rules_for(RULES)
    ctx = make_context(game="csgo")
    judged = JudgedNames()
    listings = listings_of(4)
    calls, judge = judge_counting(ruleset, ctx)
    first = judged.decide(ruleset, NAME, listings, "csgo", judge)
    assert first is not None
    assert calls == [4]
    later, rules_later, game = second(listings, ruleset, "csgo")
    calls_later, judge_later = judge_counting(rules_later, make_context(game=game))
    kept = judged.decide(rules_later, NAME, later, game, judge_later)
    assert calls_later == judged_again
    ctx_later = make_context(game=game)
    assert kept is not None
    assert made(kept[0]) == evaluate(rules_later, later, ctx_later)


def test_a_rule_reading_the_clock_is_judged_every_time() -> None:
    ruleset = rules_for(
        RULES
        + """    hold: {max_wait: 7d}
"""
    )
    assert [r.listing_only for r in ruleset.rules] == [False]
    judged = JudgedNames()
    listings = listings_of(3, unlock_at=START + 86_400, send_until=START + 9 * 86_400)
    for n in range(3):
        ctx = make_context(now=START + 40_000 * n, game="csgo")
        calls, judge = judge_counting(ruleset, ctx)
        kept = judged.decide(ruleset, NAME, listings, "csgo", judge)
        assert calls == [3]
        assert kept is not None
        assert made(kept[0]) == evaluate(ruleset, listings, ctx)  # reasons made at this time


def test_a_plugin_criterion_that_does_not_say_is_judged_every_time() -> None:
    plugin = CountingPlugin()
    ruleset = never_rules(plugin)
    assert [r.listing_only for r in ruleset.rules] == [False]
    judged = JudgedNames()
    listings = listings_of(2)
    for _ in range(3):
        calls, judge = judge_counting(ruleset, make_context())
        judged.decide(ruleset, NAME, listings, None, judge)
        assert calls == [2]


def test_a_pair_that_passes_keeps_nothing() -> None:
    ruleset = rules_for(RULES)
    judged = JudgedNames()
    cheap = make_listing(name=NAME, item_id="1", price=10_000, platform_price=21_000, float=0.1)
    for _ in range(2):
        calls, judge = judge_counting(ruleset, make_context(game="csgo"))
        assert judged.decide(ruleset, NAME, [cheap], "csgo", judge) is None
        assert calls == [1]


@pytest.mark.parametrize(
    ("discount", "listing_only"),
    [
        ("discount: 20", True),
        ("discount: {min: 20, versus: platform_price, max_age: 1h}", True),
        ("discount: {min: 20, versus: market.p25}", False),
        ("discount: {min: 20, versus: [platform_price, market.median]}", False),
        ("float: {max: 0.1}", True),
    ],
)
def test_which_rules_judge_by_the_listing_alone(discount: str, listing_only: bool) -> None:
    ruleset = rules_for(
        f"""rules:
  - name: r
    match: {{names: ["{NAME}"], game: csgo}}
    {discount}
    max_price: "50.00"
"""
    )
    assert ruleset.rules[0].listing_only is listing_only


def test_a_screen_is_made_once_per_rule_set_and_game() -> None:
    # a screen learns each name's judge once: kept by the engine's JudgedNames (no
    # process-wide cache shared between engines), remade for a reloaded rule set
    rules = 'rules:\n  - name: r\n    match: {patterns: ["*"]}\n    max_price: "5.00"\n'
    first, reloaded = rules_for(rules), rules_for(rules)
    judged, other = JudgedNames(), JudgedNames()
    csgo = judged.screen(first, "csgo")
    assert judged.screen(first, "csgo") is csgo
    assert judged.screen(first, "dota2") is not csgo
    assert other.screen(first, "csgo") is not csgo
    fresh = judged.screen(reloaded, "csgo")
    assert fresh is not csgo
    assert fresh.ruleset is reloaded


def edited(listings: list[Listing], rng: random.Random, round_: int) -> list[Listing]:
    """A name's next part: listings come and go anywhere, some change their price (a new
    object, in its new place by price), now and then one is there twice; the rest are
    the very same objects, moved by the others."""
    out = list(listings)
    for i in range(rng.choice([0, 1, 1, 2, 3])):
        roll = rng.random()
        if roll < 0.3 and out:
            out.pop(rng.randrange(len(out)))
        elif roll < 0.6 and out:
            old = out.pop(rng.randrange(len(out)))
            out.append(old.model_copy(update={"price": old.price + rng.randint(-5_000, 5_000)}))
        elif roll < 0.9 and listings:
            model = rng.choice(listings)
            out.append(model.model_copy(update={"item_id": f"new-{round_}-{i}"}))
        elif out:
            out.append(rng.choice(out))  # the same object twice
    return sorted(out, key=lambda x: x.price)


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_changed_name_keeps_what_it_can_and_counts_as_judged_afresh(
    path: Path, seed: int
) -> None:
    ruleset = load_rules(path)
    rng = random.Random(seed)
    found = by_name(market_listings(ruleset, seed))
    key = max((k for k in found if ruleset.view(k).rules), key=lambda k: len(found[k]))
    ctx = EvalContext(now=START, game="csgo")

    def turned_down(xs: list[Listing]) -> list[Listing]:  # a pair passing keeps nothing
        return [x for x in xs if not scan(ruleset, [x], ctx).decisions]

    listings = turned_down(sorted(found[key], key=lambda x: x.price))
    keepable = all(r.listing_only for r in ruleset.view(key).rules)
    judged = JudgedNames()
    before: set[int] = set()
    held: list[Listing] = []  # every listing judged, held alive so that no id is reused
    kept_some = 0
    for n in range(40):
        if n:
            listings = turned_down(edited(listings, rng, n))
        calls, judge = judge_counting(ruleset, ctx)
        kept = judged.decide(ruleset, key, tuple(listings), "csgo", judge)
        _, judge_all = judge_counting(ruleset, ctx)
        afresh = JudgedNames().decide(ruleset, key, tuple(listings), "csgo", judge_all)
        assert kept is not None
        assert afresh is not None
        assert made(kept[0]) == made(afresh[0]) == evaluate(ruleset, listings, ctx)
        tally, fresh_tally = kept[1], afresh[1]
        assert tally.counts == fresh_tally.counts
        assert list(tally.examples.items()) == list(fresh_tally.examples.items())
        assert tally.decisions == fresh_tally.decisions
        now = {id(x) for x in listings}
        # only the listings the last part did not show are judged
        assert sum(calls) == (len(now - before) if keepable else len(listings))
        kept_some += len(listings) - sum(calls)
        before = now
        held.extend(listings)
    assert kept_some > 0 if keepable else kept_some == 0


def test_a_listing_there_twice_among_the_changed_is_judged_once() -> None:
    ruleset = rules_for(RULES)
    ctx = make_context(game="csgo")
    judged = JudgedNames()
    xs = listings_of(6)
    assert judged.decide(ruleset, NAME, xs, "csgo", judge_counting(ruleset, ctx)[1])
    twice = xs[2].model_copy(update={"item_id": "twice"})
    later = [*xs[:2], twice, twice, *xs[3:]]
    calls, judge = judge_counting(ruleset, ctx)
    kept = judged.decide(ruleset, NAME, later, "csgo", judge)
    assert kept is not None
    assert calls == [1]
    assert made(kept[0]) == evaluate(ruleset, later, ctx)
    assert kept[1].decisions == len(evaluate(ruleset, later, ctx))


def test_a_pair_passing_among_the_changed_keeps_what_was_kept() -> None:
    ruleset = rules_for(RULES)
    ctx = make_context(game="csgo")
    judged = JudgedNames()
    xs = listings_of(6, float_value=0.1)
    first = judged.decide(ruleset, NAME, xs, "csgo", judge_counting(ruleset, ctx)[1])
    assert first is not None
    deal = xs[0].model_copy(update={"item_id": "deal", "price": 10_000})
    assert evaluate(ruleset, [deal], ctx)[0].accepted
    assert (
        judged.decide(
            ruleset, NAME, [*xs[:3], deal, *xs[3:]], "csgo", judge_counting(ruleset, ctx)[1]
        )
        is None
    )
    calls, judge = judge_counting(ruleset, ctx)
    again = judged.decide(ruleset, NAME, xs, "csgo", judge)
    assert again is not None
    assert calls == []  # what was kept before the deal stands
    assert made(again[0]) == made(first[0])
    assert again[1] is first[1]


def test_counts_kept_through_changes_equal_counting_afresh() -> None:
    ruleset = rules_for(RULES)
    ctx = make_context(game="csgo")
    judged = JudgedNames()
    xs = listings_of(8)
    for at in [None, 3, 4, 0, 7, 2]:  # one listing between others changed at a time
        if at is not None:
            xs = [*xs[:at], xs[at].model_copy(update={"price": xs[at].price + 1}), *xs[at + 1 :]]
        calls, judge = judge_counting(ruleset, ctx)
        kept = judged.decide(ruleset, NAME, xs, "csgo", judge)
        afresh = JudgedNames().decide(ruleset, NAME, xs, "csgo", judge_counting(ruleset, ctx)[1])
        assert kept is not None
        assert afresh is not None
        assert calls == ([8] if at is None else [1])
        assert made(kept[0]) == evaluate(ruleset, xs, ctx)
        assert kept[1].counts == afresh[1].counts
        assert list(kept[1].examples.items()) == list(afresh[1].examples.items())
        assert kept[1].decisions == afresh[1].decisions
