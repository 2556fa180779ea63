"""The rules' raw predicate (:class:`RawScreen`) never passes over what the full rules accept.

Table-driven over the shipped rule sets and sandbox markets featuring the names they
watch: every listing the full evaluation accepts is let through (built), and every
listing passed over is turned down by every rule watching its name, for the very reasons
(text and kind) the rules give its model. Then which rules may judge a stand-in at all:
a criterion without a raw form (a plugin's), one reading the clock (``hold:``) or a
fetched reference leave their names to be built whole.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine._plugins import make_plugin_host
from engine.hookspecs import hookimpl
from engine.models import Listing, read_plain
from engine.rules import (
    Compiled,
    Criterion,
    EvalContext,
    NameView,
    RawScreen,
    RuleContext,
    RuleSet,
    evaluate,
    load_rules,
    load_rules_text,
    raw_judged,
    rejection_kinds,
    rejection_reasons,
    scan,
)
from engine.sandbox import MarketConfig
from engine.sandbox._market import Market
from engine.sandbox._routes_market import search_entry

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = [ROOT / "rules.example.yaml", *sorted((ROOT / "strategies").glob("*.yaml"))]
START = 1_767_225_600.0
CONTEXT = {"image_base_url": "https://images.invalid/"}


def market_texts(ruleset: RuleSet, seed: int) -> list[bytes]:
    """Listings of a sandbox market featuring the watched names, as v2 search JSON."""
    probe = Market(seed=seed, start=START, config=MarketConfig(size=0))
    featured = tuple(sorted(n for n in probe.items_by_name if ruleset.view(n).rules))
    config = MarketConfig(size=1500, featured=featured, featured_share=0.6, deal_share=0.3)
    market = Market(seed=seed, start=START, config=config)
    return [
        json.dumps(search_entry(x, START, v2=True, minified=False, delivery=False)).encode()
        for x in market.listings.values()
    ]


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
@pytest.mark.parametrize("seed", [1, 7])
def test_the_screen_passes_over_only_what_every_rule_turns_down_for_the_same_reasons(
    path: Path, seed: int
) -> None:
    ruleset = load_rules(path, host=make_plugin_host(load_entry_points=False))
    screen = RawScreen(ruleset, "csgo")
    context = EvalContext(now=START, game="csgo")
    accepted = passed = 0
    for text in market_texts(ruleset, seed):
        model = Listing.model_validate_json(text, context=CONTEXT)
        stand_in = read_plain(text)
        assert stand_in is not None
        judge = screen(model.name)
        could = judge is None or judge(stand_in)
        if scan(ruleset, [model], context).decisions:  # a pair passed the rules' checks
            accepted += 1
            assert could, model
            continue
        if could:
            continue
        passed += 1
        view = ruleset.view(model.name)
        for rule in view.rules:
            on_model = rejection_reasons(rule, model, view, context)
            assert on_model  # every rule watching it turns it down
            assert rejection_reasons(rule, stand_in, view, context) == on_model  # type: ignore[arg-type]
            assert rejection_kinds(rule, stand_in, view, context) == rejection_kinds(  # type: ignore[arg-type]
                rule, model, view, context
            )
    assert passed > 0
    if path.name == "rules.example.yaml":
        assert accepted > 0


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
@pytest.mark.parametrize("seed", [1, 7])
def test_the_screened_path_decides_as_evaluate(path: Path, seed: int) -> None:
    """The engine's judging of a search answer (the screen's judge on each stand-in, then
    the rules on the listings it lets through) gives ``evaluate``'s decisions, and each
    judge's verdict is exactly "some watching rule's ``passes`` is true"."""
    ruleset = load_rules(path, host=make_plugin_host(load_entry_points=False))
    screen = RawScreen(ruleset, "csgo")
    context = EvalContext(now=START, game="csgo")
    models, through = [], []
    for text in market_texts(ruleset, seed):
        model = Listing.model_validate_json(text, context=CONTEXT)
        stand_in = read_plain(text)
        assert stand_in is not None
        models.append(model)
        judge = screen(model.name)
        if judge is None:
            through.append(model)
            continue
        view = ruleset.view(model.name)
        verdict = any(rule.passes(stand_in, view, context) for rule in view.rules)  # type: ignore[arg-type]
        assert judge(stand_in) is verdict, model
        if verdict:
            through.append(model)
    full = evaluate(ruleset, models, context)
    decided = scan(ruleset, through, context).decisions
    # evaluate's decisions after its rejections by the checks: allocated, capped or bought
    assert decided == scan(ruleset, models, context).decisions
    assert decided == full[len(full) - len(decided) :]
    assert any(d.accepted for d in decided) or path.name != "rules.example.yaml"
    assert len(through) < len(models)


def raises_on_odd(value: bool, rule: RuleContext) -> Compiled:
    def check(listing: Listing, view: NameView, ctx: EvalContext) -> str | None:
        if listing.price % 2:
            raise RuntimeError("odd")
        return None

    return Compiled(
        predicate=check, test=lambda x, v, c: check(x, v, c) is None, summary="even",
        listing_only=True, raw_fields=frozenset({"price"}),
    )  # fmt: skip


class RaisingPlugin:
    @hookimpl
    def snipe_register_criteria(self) -> list[Criterion]:
        return [Criterion(key="raises", schema=bool, compile=raises_on_odd)]


RAISING = [
    # (rules' extra keys, price, the judge's verdict, the full evaluation's): a criterion
    # raising on a stand-in has it built (the full evaluation decides: there, a raising
    # criterion fails its own rule only); the core checks before it still pass it over
    (["    raises: true\n"], 5_001, True, False),
    (["    raises: true\n"], 5_000, True, True),
    (["    raises: true\n", ""], 5_001, True, True),
    (["", "    raises: true\n"], 5_001, True, True),
    (["    raises: true\n", "    raises: true\n"], 5_001, True, False),
    (["    raises: true\n", ""], 50_001, False, False),
]


@pytest.mark.parametrize(("extras", "price", "built", "could"), RAISING)
def test_a_raising_criterion_has_the_stand_in_built(
    extras: list[str], price: int, built: bool, could: bool
) -> None:
    host = make_plugin_host(load_entry_points=False)
    host.register(RaisingPlugin(), "raising-test")
    rules = "".join(
        HEADER.split("rules:\n")[1].replace("name: r", f"name: r{i}") + extra
        for i, extra in enumerate(extras)
    )
    ruleset = load_rules_text(HEADER.split("rules:\n")[0] + "rules:\n" + rules, host=host)
    text = json.dumps({"name": REDLINE, "price": price, "item_id": "1"}).encode()
    stand_in = read_plain(text)
    assert stand_in is not None
    judge = RawScreen(ruleset, "csgo")(REDLINE)
    assert judge is not None
    assert judge(stand_in) is built
    model = Listing.model_validate_json(text, context=CONTEXT)
    assert bool(scan(ruleset, [model], EvalContext(now=START, game="csgo")).decisions) is could


def odd_price(value: bool, rule: RuleContext) -> Compiled:
    def check(listing: Listing, view: NameView, ctx: EvalContext) -> str | None:
        return None if listing.price % 2 == 0 else "odd price"

    return Compiled(predicate=check, summary="even price", listing_only=True)


class EvenPlugin:
    @hookimpl
    def snipe_register_criteria(self) -> list[Criterion]:
        return [Criterion(key="even", schema=bool, compile=odd_price)]


REDLINE = "AK-47 | Redline (Field-Tested)"
HEADER = f"""\
account: {{base_url: "https://market.example.com"}}
budgets: {{per_day: "50.00", total: "200.00"}}
rules:
  - name: r
    match: {{names: ["{REDLINE}"], game: csgo}}
    max_price: "10.00"
"""

JUDGED = [
    ("max_price alone", "", True),
    (
        "price, discount, float",
        '    price: {min: "1.00"}\n    discount: 10\n    float: {max: 0.2}\n',
        True,
    ),
    ("stickers", "    stickers: {min_count: 1}\n", True),
    ("a plugin criterion without a raw form", "    even: true\n", False),
    ("hold: reads the clock", "    hold: {max_wait: 7d}\n", False),
    (
        "a discount against a fetched reference",
        "    discount: {min: 10, versus: market.p25}\n",
        False,
    ),
    (
        "match by brand: not a stand-in's field",
        '    match: {names: ["' + REDLINE + '"], brand: [x]}\n',
        False,
    ),
]


@pytest.mark.parametrize(("case", "extra", "judged"), JUDGED, ids=[c for c, _, _ in JUDGED])
def test_which_rules_judge_stand_ins(case: str, extra: str, judged: bool) -> None:
    host = make_plugin_host(load_entry_points=False)
    host.register(EvenPlugin(), "even-test")
    text = HEADER + extra
    if "brand" in extra:  # the rule's own match replaced
        text = HEADER.replace(f'    match: {{names: ["{REDLINE}"], game: csgo}}\n', "") + extra
    ruleset = load_rules_text(text, host=host)
    (rule,) = ruleset.rules
    assert raw_judged(rule) is judged, case
    judge = RawScreen(ruleset, "csgo")(REDLINE)
    assert (judge is not None) is judged, case


def test_the_ceiling_holds_and_a_name_no_rule_watches_is_passed_over() -> None:
    ruleset = load_rules_text(HEADER, host=make_plugin_host(load_entry_points=False))
    screen = RawScreen(ruleset, "csgo")
    cheap = read_plain(json.dumps({"name": REDLINE, "price": 5_000, "item_id": "1"}).encode())
    dear = read_plain(json.dumps({"name": REDLINE, "price": 50_000, "item_id": "2"}).encode())
    assert cheap is not None
    assert dear is not None
    judge = screen(REDLINE)
    assert judge is not None
    assert judge(cheap)
    assert not judge(dear)
    unwatched = screen("Nothing | Watched (Field-Tested)")
    assert unwatched is not None
    assert not unwatched(cheap)


def test_a_stand_in_whose_price_cannot_be_read_is_built() -> None:
    """Reading the price or trade lock raising: the listing is built, and the full
    evaluation decides (where each rule's ``passes`` turns it down)."""
    ruleset = load_rules_text(HEADER, host=make_plugin_host(load_entry_points=False))
    judge = RawScreen(ruleset, "csgo")(REDLINE)
    assert judge is not None
    view = ruleset.view(REDLINE)
    odd = object()
    assert not any(r.passes(odd, view, EvalContext(now=0.0)) for r in view.rules)  # type: ignore[arg-type]
    assert judge(odd) is True


def seed_parity(value: bool, rule: RuleContext) -> Compiled:
    """A criterion that declares a raw form but reads a field beyond it (``paintseed``,
    which a stand-in does not hold): a plugin's mistake the screen must survive."""

    def check(listing: Listing, view: NameView, ctx: EvalContext) -> str | None:
        return None if listing.paintseed == 7 else "paint seed not 7"

    return Compiled(
        predicate=check,
        summary="paint seed 7",
        listing_only=True,
        raw_fields=frozenset({"float_value"}),
    )


class SeedPlugin:
    @hookimpl
    def snipe_register_criteria(self) -> list[Criterion]:
        return [Criterion(key="seed7", schema=bool, compile=seed_parity)]


def test_a_criterion_reading_past_its_raw_form_has_the_listing_built() -> None:
    host = make_plugin_host(load_entry_points=False)
    host.register(SeedPlugin(), "seed-test")
    ruleset = load_rules_text(HEADER + "    seed7: true\n", host=host)
    text = json.dumps({"name": REDLINE, "price": 5_000, "item_id": "1", "paintseed": 7}).encode()
    model = Listing.model_validate_json(text)
    assert scan(ruleset, [model], EvalContext(now=START, game="csgo")).decisions  # a deal
    stand_in = read_plain(text)
    assert stand_in is not None
    judge = RawScreen(ruleset, "csgo")(REDLINE)
    assert judge is not None  # the rule declares a raw form: its stand-ins are judged
    assert judge(stand_in)  # the stand-in lacks paintseed: built, not passed over
