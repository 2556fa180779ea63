"""Counting reasons by kind without their text (issue 20 point 3): a compiled rule's
``kinds`` gives, for a predicate whose reasons are all of one kind (the core's max_price
and trade lock), its index instead of its text. What it finds must be exactly what
``check`` finds, with the text made on demand (``site_reason``) equal to ``check``'s, and
the kind declared when compiling must be the kind of every text it stands for (what the
engine's skip counts group by: ``reason_kind``)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from engine.models import Listing
from engine.rules import (
    CompiledRule,
    EvalContext,
    NameView,
    RuleSet,
    load_rules,
    rejection_kinds,
    rejection_reasons,
)
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
