"""Counting reasons by kind without their text (issue 20 point 3): a compiled rule's
``kinds`` gives, for a predicate whose reasons are all of one kind (the core's max_price
and trade lock), its index instead of its text. What it finds must be exactly what
``check`` finds, with the text made on demand (``site_reason``) equal to ``check``'s, and
the kind declared when compiling must be the kind of every text it stands for (what the
engine's skip counts group by: ``reason_kind``)."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path
from typing import Any

import pytest

from engine._plugins import make_plugin_host
from engine.hookspecs import hookimpl
from engine.models import Listing
from engine.rules import (
    Compiled,
    CompiledRule,
    Criterion,
    EvalContext,
    NameView,
    Quote,
    RuleContext,
    RuleSet,
    duration_shape,
    format_duration,
    load_rules,
    rejection_kinds,
    rejection_reasons,
    scan,
    split_name,
)
from engine.rules._kinds import blank_numbers
from engine.sniper import EngineStatus
from engine.sniper._status import reason_kind
from engine.testing import NOW, make_context, make_listing, rules_for

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = [ROOT / "rules.example.yaml", *sorted((ROOT / "strategies").glob("*.yaml"))]
NAME = "AK-47 | Redline (Field-Tested)"


def made(rule: CompiledRule, listing: Listing, view: NameView, ctx: EvalContext) -> list[str]:
    """``rejection_kinds``' findings with the text of each index made on demand."""
    return [
        r if isinstance(r, str) else rule.site_reason(r, listing, view, ctx)
        for r in rejection_kinds(rule, listing, view, ctx)
    ]


def assert_same(rule: CompiledRule, listing: Listing, view: NameView, ctx: EvalContext) -> int:
    """The findings equal ``check``'s reasons; each index's declared kind is its text's.
    Returns how many findings were indices (no text made)."""
    found = rejection_kinds(rule, listing, view, ctx)
    assert made(rule, listing, view, ctx) == list(rejection_reasons(rule, listing, view, ctx))
    indices = [r for r in found if isinstance(r, int)]
    for site in indices:
        text = rule.site_reason(site, listing, view, ctx)
        assert rule.site_kinds[site] == (rule.name, reason_kind(text)), text
    return len(indices)


@pytest.mark.parametrize(
    ("price", "max_price"),
    [
        (1, "0.00"),
        (1_005, "1.00"),
        (10_000, "9.99"),
        (10_010, "10.005"),
        (1_234_567_890, "1000.00"),
        (99_999_999_999, "12345.678"),
    ],
)
@pytest.mark.parametrize("locked", [False, True], ids=["tradable", "locked"])
def test_the_core_reasons_are_counted_by_a_kind_that_is_their_texts(
    price: int, max_price: str, locked: bool
) -> None:
    ruleset = rules_for(
        f"""rules:
  - name: cheap
    match: {{names: ["{NAME}"]}}
    max_price: "{max_price}"
"""
    )
    rule = ruleset.rules[0]
    unlock = {"unlock_at": NOW + 86_400, "send_until": NOW + 9 * 86_400} if locked else {}
    listing = make_listing(name=NAME, price=price, **unlock)
    ctx = make_context()
    assert rejection_kinds(rule, listing, ruleset.view(NAME), ctx) == (
        [0, 1] if locked else [0]
    )  # no text for either core reason
    assert assert_same(rule, listing, ruleset.view(NAME), ctx) == (2 if locked else 1)


def listings_for(ruleset: RuleSet, rng: random.Random) -> list[Listing]:
    names = sorted({n for rule in ruleset.rules for n in rule.names}) or [NAME]
    out = []
    for i in range(400):
        name = rng.choice(names)
        price = rng.choice([0, 1, 999, 1_005, 5_000, 25_000, 100_000, 2_500_000, 99_000_000])
        fields: dict[str, object] = {"name": name, "item_id": str(i), "price": price}
        fields["float"] = rng.choice([None, 0.001, 0.07, 0.15, 0.38, 0.9])
        fields["platform_price"] = rng.choice([None, price // 2, price, price * 3])
        if rng.random() < 0.3:
            fields["unlock_at"] = NOW + rng.choice([3_600, 5 * 86_400, 30 * 86_400])
            fields["send_until"] = NOW + 40 * 86_400
        if "Doppler" in name:
            fields["phase"] = rng.choice(["", "Phase 2", "Ruby", "Emerald"])
        out.append(make_listing(**fields))
    return out


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_the_shipped_rules_find_the_same_reasons_with_and_without_text(path: Path) -> None:
    ruleset = load_rules(path)
    rng = random.Random(path.name)
    listings = listings_for(ruleset, rng)
    prices = {"reference": {x.name: x.price * 2 for x in listings}}
    ctx = EvalContext(now=NOW, game="csgo", reference_prices=prices)
    indices = 0
    for listing in listings:
        view = ruleset.view(listing.name)
        for rule in view.rules:
            if not rule.passes(listing, view, ctx):
                indices += assert_same(rule, listing, view, ctx)
    assert indices > 0  # the table reaches the reasons counted without text


# -- criteria that say the kind of their reasons (Compiled.kinds) -----------------------

REFERENCE_RULES = f"""rules:
  - name: guarded
    match: {{names: ["{NAME}", "★ Karambit | Doppler (Factory New)"]}}
    max_price: "1000.00"
    discount: {{min: 25, versus: [market.p25, platform_price], min_observations: 30, max_age: 1h}}
    float: {{min: 0.00005, max: 0.5}}
  - name: agreeing
    match: {{names: ["{NAME}"]}}
    max_price: "1000.00"
    discount: {{min: 10, versus: [market.median, platform_price], agree: 15}}
    stickers: {{min_value: "5.00", weight: 10}}
  - name: locked
    match: {{names: ["{NAME}"]}}
    max_price: "1000.00"
    discount: 10
    hold: {{max_wait: 3d, min_send_window: 2h, extra_discount: 5, extra_discount_per_day: 1}}
    price: {{min: "2.00", max: "500.00"}}
  - name: weighed
    match: {{names: ["{NAME}", "★ Karambit | Doppler (Factory New)"]}}
    max_price: "1000.00"
    discount: 10
    stickers: {{min_count: 1, weight: 25}}
  - name: phased
    match: {{names: ["★ Karambit | Doppler (Factory New)"]}}
    max_price: "1000.00"
    phases: [Ruby, Phase 2]
    stickers: {{min_count: 2}}
  - name: branded
    match:
      names: ["★ Karambit | Doppler Phase 2 (Factory New)", "{NAME}"]
      game: csgo
      brand: [Karambit, AK-47]
    max_price: "1000.00"
"""


def awkward_listings(rng: random.Random) -> list[Listing]:
    """Listings reaching every return of the built-in predicates, with numbers written
    in every shape (a wear as 1e-05, durations in days, hours, minutes, seconds, below 0)."""
    out = []
    for i in range(600):
        name = rng.choice([NAME, "★ Karambit | Doppler (Factory New)"])
        price = rng.choice([0, 1, 1_500, 9_000, 10_000, 40_000, 600_000])
        fields: dict[str, object] = {"name": name, "item_id": str(i), "price": price}
        fields["float"] = rng.choice([None, 0.0, 0.00001, 0.00002, 0.3, 0.7, 1.0])
        fields["platform_price"] = rng.choice([None, price // 2, price, price * 3 + 7])
        if rng.random() < 0.5:
            lock = rng.choice([30, 90, 3_599, 3_600, 7_250, 86_400, 2 * 86_400 + 61, 5 * 86_400])
            fields["unlock_at"] = NOW + lock
            if rng.random() < 0.8:
                fields["send_until"] = (
                    NOW + lock + rng.choice([-90_000, -30, 45, 3_700, 9 * 86_400])
                )
        if rng.random() < 0.4:
            fields["stickers"] = [
                {"name": f"S{k}", "price": rng.choice([0, 1_000, 4_000]), "wear": None, "slot": k}
                for k in range(rng.randrange(0, 4))
            ]
        elif rng.random() < 0.3:
            fields["sticker_names"] = ["S1", "S2"][: rng.randrange(1, 3)]
        if "Doppler" in name:
            fields["phase"] = rng.choice(["", "Phase 2", "Phase 3", "Ruby", "Emerald"])
        fields["brand"] = rng.choice([None, "Karambit", "AK-47", "M4A4", "Glock-18"])
        out.append(make_listing(**fields))
    return out


def reference_tables(rng: random.Random, listings: list[Listing]) -> dict[str, Any]:
    """Quotes with and without observations, of every age, for the market sources."""
    tables: dict[str, dict[tuple[str, str | None], Quote]] = {}
    for source in ("market.p25", "market.median"):
        table = tables[source] = {}
        for listing in listings:
            view = split_name(listing.name)
            key = (view.base_name, listing.phase or view.phase)
            if key in table or rng.random() < 0.2:
                continue
            table[key] = Quote(
                rng.choice([5_000, 12_000, 50_000]),
                rng.choice([None, 3, 30, 400]),
                rng.choice([None, NOW, NOW - 0.5, NOW - 59, NOW - 61, NOW - 3_700, NOW - 90_000]),
            )
    return tables


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("game", ["csgo", "tf2", None])
def test_the_built_in_criteria_find_the_same_reasons_by_kind(seed: int, game: str | None) -> None:
    ruleset = rules_for(REFERENCE_RULES)
    rng = random.Random(seed)
    listings = awkward_listings(rng)
    ctx = make_context(references=reference_tables(rng, listings), game=game)
    texts = 0
    for listing in listings:
        view = ruleset.view(listing.name)
        for rule in view.rules:
            if not rule.passes(listing, view, ctx):
                assert_same(rule, listing, view, ctx)
                texts += sum(isinstance(r, str) for r in rejection_kinds(rule, listing, view, ctx))
    assert texts == 0  # every built-in criterion here says its kinds: no text made


@pytest.mark.parametrize("seed", [1, 2])
def test_counting_by_kind_equals_counting_by_text(seed: int) -> None:
    """What a status shows, with the built-in criteria's kinds and with their text (the
    same rules compiled with every criterion's ``kinds`` removed)."""
    rng = random.Random(seed)
    listings = awkward_listings(rng)
    ctx = make_context(references=reference_tables(rng, listings), game=("tf2", None)[seed % 2])
    shown = []
    for with_kinds in (True, False):
        ruleset = rules_for(REFERENCE_RULES, *(() if with_kinds else (("nokinds", NoKinds()),)))
        status = EngineStatus()
        for start in range(0, len(listings), 50):
            status.skipped_scan(scan(ruleset, listings[start : start + 50], ctx))
        shown.append(
            [
                (rule, status.skip_examples[rule, kind], n)
                for (rule, kind), n in status.skip_by_rule.items()
            ]
        )
    assert shown[0] == shown[1]
    assert len(shown[0]) > 20


class NoKinds:
    """Wraps the built-in criteria's compile so that none gives ``kinds`` (the text path
    a third-party criterion without it takes); registered last, so its keys win."""

    @hookimpl(trylast=True)
    def snipe_register_criteria(self) -> list[Criterion]:
        host = make_plugin_host(load_entry_points=False)
        out = []
        for criterion in host.criteria():
            compile_ = criterion.compile

            def without(value: Any, rule: RuleContext, compile_: Any = compile_) -> Compiled:
                return dataclasses.replace(compile_(value, rule), kinds=None)

            out.append(dataclasses.replace(criterion, compile=without, plugin=""))
        return out


class Seeds:
    """A third-party criterion: rejects an odd price, and counts the reasons it makes."""

    def __init__(self, *, kinds: bool, kinds_raise: bool = False) -> None:
        self.made = 0
        self.kinds = kinds
        self.kinds_raise = kinds_raise

    @hookimpl
    def snipe_register_criteria(self) -> list[Criterion]:
        def compile_(value: Any, rule: RuleContext) -> Compiled:
            def even(listing: Listing, view: NameView, ctx: EvalContext) -> str | None:
                if listing.price % 2 == 0:
                    return None
                self.made += 1
                big = listing.price > 20_000
                return f"odd price {listing.price}" + (" (big)" if big else "")

            def even_kind(listing: Listing, view: NameView, ctx: EvalContext) -> Any:
                if self.kinds_raise:
                    raise RuntimeError("no kinds today")
                return None if listing.price % 2 == 0 else listing.price > 20_000

            return Compiled(predicate=even, kinds=even_kind if self.kinds else None, summary="even")

        return [Criterion("even", bool, compile_, description="even prices only")]


def seed_listings() -> list[Listing]:
    return [make_listing(name=NAME, item_id=str(n), price=10_000 + 1_001 * n) for n in range(40)]


@pytest.mark.parametrize(
    ("kinds", "kinds_raise", "made_while_counting"),
    [(False, False, 20), (True, False, 2), (True, True, 20)],
    ids=["without kinds: text", "with kinds: text once per kind", "raising kinds: text"],
)
def test_a_third_party_criterion_is_counted_alike_with_or_without_kinds(
    kinds: bool, kinds_raise: bool, made_while_counting: int
) -> None:
    plugin = Seeds(kinds=kinds, kinds_raise=kinds_raise)
    ruleset = rules_for(
        f"""rules:
  - name: even
    match: {{names: ["{NAME}"]}}
    max_price: "40.00"
    even: true
""",
        ("even", plugin),
    )
    status = EngineStatus()
    status.skipped_scan(scan(ruleset, seed_listings(), make_context()))
    deciding = plugin.made  # without a fast test, deciding calls the predicate itself
    counts = dict(status.skip_by_rule)
    assert plugin.made - deciding == made_while_counting
    assert counts == {
        ("even", "odd price #"): 5,
        ("even", "price # above max_price #"): 10,
        ("even", "odd price # (big)"): 15,
    }
    assert status.skip_examples == {
        ("even", "odd price #"): "odd price 19009",
        ("even", "price # above max_price #"): "price $49.039 above max_price $40.00",
        ("even", "odd price # (big)"): "odd price 49039 (big)",
    }


@pytest.mark.parametrize(
    "seconds",
    [0, 0.5, -0.5, 59, 60, 61, 3_599, 3_600, 3_660, 86_399, 86_400, 86_460, 90_000, 9e6, -90_061],
)
def test_a_durations_shape_is_the_kind_of_its_text(seconds: float) -> None:
    same = [
        s
        for s in (0, 1, 60, 120, 3_600, 3_660, 86_400, 90_000, 90_060, 10e6)
        if duration_shape(s) == duration_shape(seconds)
    ]
    for other in same:
        assert blank_numbers(format_duration(other)) == blank_numbers(format_duration(seconds))


@pytest.mark.parametrize(
    "reason",
    ["price $1,234.567 above max_price $1.00", "float 1e-05 below min 0.5", "-$3 of -2.5%", "x"],
)
def test_the_rules_blank_numbers_as_the_engine_counts_them(reason: str) -> None:
    assert blank_numbers(reason) == reason_kind(reason)
