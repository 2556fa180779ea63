"""Every built-in criterion and its edges, table-driven: one rule, one listing, the verdict
and the reason a trader would read."""

from __future__ import annotations

from typing import Any

import pytest

from engine.testing import NOW, decide, make_listing, rules_for

DAY = 86_400
REDLINE = "AK-47 | Redline (Field-Tested)"
KARAMBIT = "★ Karambit | Doppler (Factory New)"


def rule(body: str, names: str = f'["{REDLINE}"]') -> str:
    return (
        "rules:\n  - name: r\n"
        f"    match: {{names: {names}, game: csgo}}\n"
        '    max_price: "100.00"\n' + "".join(f"    {line}\n" for line in body.splitlines())
    )


def verdict(body: str, listing: dict[str, Any], names: str | None = None, **ctx: Any) -> Any:
    rules = rules_for(rule(body, names) if names else rule(body))
    decisions = decide(rules, [make_listing(**listing)], **ctx)
    assert len(decisions) == 1, decisions
    return decisions[0]


def check(decision: Any, accepted: bool, reason: str | None) -> None:
    assert decision.accepted is accepted, decision.reasons
    if reason is not None:
        assert any(reason in r for r in decision.reasons), decision.reasons


# ------------------------------------------------------------------ price and max_price


@pytest.mark.parametrize(
    ("price", "accepted", "reason"),
    [
        (5_000, True, None),  # exactly on the min bound: inclusive
        (20_000, True, None),  # exactly on the max bound: inclusive
        (4_999, False, "price $4.999 below min $5.00"),
        (20_001, False, "price $20.001 above max $20.00"),
    ],
)
def test_price_bounds(price: int, accepted: bool, reason: str | None) -> None:
    check(verdict('price: {min: "5.00", max: "20.00"}', {"price": price}), accepted, reason)


@pytest.mark.parametrize(
    ("price", "accepted", "reason"),
    [
        (100_000, True, None),  # exactly max_price
        (100_001, False, "price $100.001 above max_price $100.00"),
    ],
)
def test_max_price_is_a_hard_ceiling(price: int, accepted: bool, reason: str | None) -> None:
    decision = verdict("", {"price": price, "platform_price": None})
    check(decision, accepted, reason)
    if accepted:
        assert decision.price == price <= 100_000


# ------------------------------------------------------------------ discount


@pytest.mark.parametrize(
    ("body", "listing", "ctx", "accepted", "reason"),
    [
        ("discount: 20", {"price": 8_000, "platform_price": 10_000}, {}, True, None),  # exactly 20%
        (
            "discount: 20",
            {"price": 8_001, "platform_price": 10_000},
            {},
            False,
            "discount 19.99% below 20% vs platform_price",
        ),
        (
            'discount: "12.5%"',
            {"price": 8_750, "platform_price": 10_000},
            {},
            True,
            None,
        ),
        (
            "discount: 20",
            {"price": 8_000, "platform_price": None},
            {},
            False,
            "no reference price from platform_price",
        ),
        (
            "discount: 20",
            {"price": 12_000, "platform_price": 10_000},
            {},
            False,
            "no discount (the price is 20% above the reference), below 20% vs platform_price",
        ),
    ],
)
def test_discount(
    body: str, listing: dict[str, Any], ctx: dict[str, Any], accepted: bool, reason: str | None
) -> None:
    check(verdict(body, listing, **ctx), accepted, reason)


def test_sticker_weight_raises_the_reference() -> None:
    body = "discount: 20\nstickers: {weight: 10}"
    stickers = [{"name": "Titan (Holo) | Katowice 2014", "price": 50_000, "wear": None}]
    # reference $10 + 10% of $50 stickers = $15; 20% off = $12
    listing = {"platform_price": 10_000, "stickers": stickers}
    check(verdict(body, {"price": 12_000, **listing}), True, None)
    check(
        verdict(body, {"price": 12_001, **listing}),
        False,
        "(reference $15.00, $10.00 before stickers)",
    )


# ------------------------------------------------------------------ float


@pytest.mark.parametrize(
    ("wear", "accepted", "reason"),
    [
        (0.07, True, None),  # exactly on max: inclusive
        (0.0, True, None),
        (0.23, False, "float 0.23 above max 0.07"),
        (None, False, "listing has no float (rule wants 0-0.07)"),
    ],
)
def test_float(wear: float | None, accepted: bool, reason: str | None) -> None:
    check(verdict("float: {max: 0.07}", {"float": wear}), accepted, reason)


def test_float_min_bound_is_inclusive() -> None:
    check(verdict("float: {min: 0.15, max: 0.18}", {"float": 0.15}), True, None)
    check(verdict("float: {min: 0.15, max: 0.18}", {"float": 0.1499}), False, "below min 0.15")


# ------------------------------------------------------------------ phases


@pytest.mark.parametrize(
    ("listing", "accepted", "reason"),
    [
        ({"name": KARAMBIT, "phase": "Ruby"}, True, None),
        ({"name": KARAMBIT, "phase": "Phase 2"}, False, "phase Phase 2 not in Ruby, Sapphire"),
        ({"name": KARAMBIT, "phase": ""}, False, "listing has no phase"),  # "" means none
        ({"name": KARAMBIT}, False, "listing has no phase"),
        # the phase written into the name, no phase field
        ({"name": "★ Karambit | Doppler Sapphire (Factory New)"}, True, None),
        ({"name": "★ Karambit | Doppler Phase 4 (Factory New)"}, False, "phase Phase 4 not in"),
    ],
)
def test_phases(listing: dict[str, Any], accepted: bool, reason: str | None) -> None:
    names = f'["{KARAMBIT}"]'
    check(verdict("phases: [Ruby, Sapphire]", listing, names), accepted, reason)


@pytest.mark.parametrize(
    ("listing", "accepted"),
    [
        ({"name": "★ Karambit | Doppler Phase 2 (Factory New)"}, True),
        ({"name": KARAMBIT, "phase": "Phase 2"}, True),
        ({"name": KARAMBIT, "phase": "Phase 1"}, False),
        ({"name": "★ Karambit | Doppler Phase 1 (Factory New)"}, False),
    ],
)
def test_a_phase_written_into_a_rule_name_is_required(
    listing: dict[str, Any], accepted: bool
) -> None:
    names = '["★ Karambit | Doppler Phase 2 (Factory New)"]'
    check(verdict("", listing, names), accepted, None if accepted else "phase Phase 1 is not")


# ------------------------------------------------------------------ stickers

TITAN = "Titan (Holo) | Katowice 2014"


def sticker(name: str = TITAN, *, price: int = 30_000, wear: float | None = None, slot: int = 0):
    return {"name": name, "price": price, "wear": wear, "slot": slot}


@pytest.mark.parametrize(
    ("body", "stickers", "accepted", "reason"),
    [
        ('stickers: {min_value: "50.00"}', [sticker(), sticker(slot=1, price=20_000)], True, None),
        (
            'stickers: {min_value: "50.00"}',
            [sticker(), sticker(slot=1, price=19_999)],
            False,
            "sticker value $49.999 below $50.00",
        ),
        # null wear is an unworn sticker: it passes any wear limit
        ("stickers: {min_count: 1, max_wear: 0.01}", [sticker(wear=None)], True, None),
        (
            "stickers: {min_count: 1, max_wear: 0.01}",
            [sticker(wear=0.2)],
            False,
            "0 matching stickers, fewer than 1",
        ),
        ("stickers: {min_count: 1, slots: [2]}", [sticker(slot=0)], False, "0 matching"),
        ("stickers: {min_count: 1, slots: [2]}", [sticker(slot=2)], True, None),
        (f'stickers: {{names: ["{TITAN}"]}}', [sticker()], True, None),
        (f'stickers: {{names: ["{TITAN}"]}}', [sticker("Crown (Foil)")], False, "0 matching"),
        ("stickers: {min_count: 1}", [], False, "0 matching stickers, fewer than 1"),
        # a sticker not on sale has price 0 and adds nothing to the value
        ('stickers: {min_value: "0.01"}', [sticker(price=0)], False, "sticker value $0.00"),
    ],
)
def test_stickers(
    body: str, stickers: list[dict[str, Any]], accepted: bool, reason: str | None
) -> None:
    check(verdict(body, {"stickers": stickers}), accepted, reason)


def test_sticker_value_needs_sticker_details() -> None:
    listing = {"sticker_names": [TITAN]}
    check(verdict('stickers: {min_value: "1.00"}', listing), False, "no sticker details")
    check(verdict(f'stickers: {{names: ["{TITAN}"]}}', listing), True, None)


# ------------------------------------------------------------------ hold (trade lock)

HOLD = "discount: 10\nhold: {max_wait: 7d, min_send_window: 1d, extra_discount: 5}"


@pytest.mark.parametrize(
    ("listing", "accepted", "reason"),
    [
        # 15% off, unlocks in 3 days, 7 days to deliver after: accepted
        ({"price": 8_500, "unlock_at": NOW + 3 * DAY, "send_until": NOW + 10 * DAY}, True, None),
        # tradable listings only need the plain discount
        ({"price": 9_000}, True, None),
        (
            {"price": 9_000, "unlock_at": NOW + 3 * DAY, "send_until": NOW + 10 * DAY},
            False,
            "discount 10% below 15% needed for a 3-day hold",
        ),
        (
            {"price": 8_500, "unlock_at": NOW + 3 * DAY},
            False,
            "trade-locked listing without send_until",
        ),
        (
            {"price": 8_500, "unlock_at": NOW + 8 * DAY, "send_until": NOW + 20 * DAY},
            False,
            "trade-locked for another 8d, more than hold.max_wait 7d",
        ),
        (
            {"price": 8_500, "unlock_at": NOW + 7 * DAY, "send_until": NOW + 20 * DAY},
            True,  # exactly max_wait: inclusive
            None,
        ),
        (
            {"price": 8_500, "unlock_at": NOW + 3 * DAY, "send_until": NOW + 3 * DAY + 3600},
            False,
            "only 1h between unlock and send_until",
        ),
    ],
)
def test_hold(listing: dict[str, Any], accepted: bool, reason: str | None) -> None:
    decision = verdict(HOLD, {"platform_price": 10_000, **listing})
    check(decision, accepted, reason)
    assert decision.allow_trade_locked is (accepted and "unlock_at" in listing)


def test_without_hold_a_trade_locked_listing_is_never_bought() -> None:
    listing = {"price": 1_000, "unlock_at": NOW + 3600, "send_until": NOW + 9 * DAY}
    check(verdict("discount: 10", listing), False, "trade-locked listing, and the rule has no")


def test_hold_extra_discount_grows_per_started_day() -> None:
    body = "hold: {max_wait: 7d, extra_discount_per_day: 2}"
    locked = {"unlock_at": NOW + DAY + 1, "send_until": NOW + 9 * DAY, "platform_price": 10_000}
    # DAY + 1 second of waiting: 2 started days, 4% needed
    check(verdict(body, {"price": 9_600, **locked}), True, None)
    check(verdict(body, {"price": 9_601, **locked}), False, "below 4% needed for a 2-day hold")


# ------------------------------------------------------------------ match: names, game, brand


@pytest.mark.parametrize(
    ("match", "listing", "ctx", "accepted", "reason"),
    [
        ('{patterns: ["AK-47 | *"], game: csgo}', {}, {}, True, None),
        ('{names: ["AK-47 | Redline (Field-Tested)"], game: csgo}', {}, {"game": "rust"}, False,
         "game rust is not csgo"),
        ('{names: ["AK-47 | Redline (Field-Tested)"], game: csgo}', {}, {"game": None}, False,
         "the game of this listing is not known"),
        ('{patterns: ["*"], brand: knife}', {"brand": "rifle"}, {}, False,
         "brand rifle not in knife"),
        ('{patterns: ["*"], brand: rifle}', {"brand": "rifle"}, {}, True, None),
        ('{patterns: ["*"], brand: rifle}', {}, {}, False, "listing carries no brand"),
        ('{patterns: ["*"], type: Rifle}', {"type": "Rifle"}, {}, True, None),
    ],
)  # fmt: skip
def test_match_per_listing_fields(
    match: str, listing: dict[str, Any], ctx: dict[str, Any], accepted: bool, reason: str | None
) -> None:
    text = f'rules:\n  - name: r\n    match: {match}\n    max_price: "100.00"\n'
    decisions = decide(rules_for(text), [make_listing(**listing)], **ctx)
    assert len(decisions) == 1
    check(decisions[0], accepted, reason)


@pytest.mark.parametrize(
    ("match", "name", "watched"),
    [
        ('{names: ["AK-47 | Redline (Field-Tested)"]}', REDLINE, True),
        ('{names: ["AK-47 | Redline (Field-Tested)"]}', "AK-47 | Redline (Minimal Wear)", False),
        ('{patterns: ["AK-47 | *"]}', REDLINE, True),
        ('{patterns: ["ak-47 | *"]}', REDLINE, False),  # globs are case-sensitive
        ('{regex: ["Redline \\\\(Field"]}', REDLINE, True),
        ('{patterns: ["AK-47 | *"], exclude: ["* (Field-Tested)"]}', REDLINE, False),
        ('{patterns: ["AK-47 | *"], exterior: [FN, MW]}', REDLINE, False),
        ('{patterns: ["AK-47 | *"], exterior: FT}', REDLINE, True),
        ('{patterns: ["*"], exterior: FN}', "Sticker | Crown (Foil)", False),
        (f'{{names: ["{KARAMBIT}"]}}', "★ Karambit | Doppler Phase 3 (Factory New)", True),
    ],
)
def test_match_name_selection(match: str, name: str, watched: bool) -> None:
    text = f'rules:\n  - name: r\n    match: {match}\n    max_price: "100.00"\n'
    rules = rules_for(text)
    assert bool(rules.view(name).rules) is watched
    decisions = decide(rules, [make_listing(name=name)])
    assert len(decisions) == (1 if watched else 0)


def test_why_a_name_is_not_watched_is_explained() -> None:
    from engine.rules import explain

    text = 'rules:\n  - name: fn-only\n    match: {patterns: ["AK-47 | *"], exterior: FN}\n'
    rules = rules_for(text + '    max_price: "100.00"\n')
    lines = explain(rules, REDLINE)
    assert (
        "rule 'fn-only' does not watch 'AK-47 | Redline (Field-Tested)': exterior FT not in FN"
        in lines
    )
    assert lines[-1] == f"no enabled rule watches {REDLINE!r}"


def test_every_failing_reason_is_reported_not_just_the_first() -> None:
    body = "discount: 20\nfloat: {max: 0.07}"
    decision = verdict(body, {"price": 14_000, "platform_price": 15_000, "float": 0.3})
    assert decision.reasons == (
        "discount 6.67% below 20% vs platform_price (reference $15.00)",
        "float 0.3 above max 0.07",
    )
