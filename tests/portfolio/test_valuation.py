"""The valuation core, synchronously and table-driven: what counts as held, what a holding
is worth (or why it has no value), fees rounded against the trader, illiquid until unlock,
groupings, and sales."""

from __future__ import annotations

import pytest

from engine._errors import ConfigError
from engine.ledger import Purchase, PurchaseState
from engine.portfolio import Reference, Sale, fee_for, group_key, value_portfolio
from engine.rules import PortfolioSettings

S = PurchaseState
NOW = 1_795_000_000.0  # 2026-11-18T10:26:40Z, a Wednesday
DAY = 86_400.0
REDLINE = "AK-47 | Redline (Field-Tested)"
RUBY = "★ Karambit | Doppler Ruby (Factory New)"


def purchase(
    n: int,
    *,
    state: PurchaseState = S.BOUGHT,
    price: int = 10_000,
    charged: int | None = 10_000,
    name: str = REDLINE,
    rule: str = "r1",
    at: float = NOW - 3600,
    unlock_at: int | None = None,
) -> Purchase:
    return Purchase(
        project_id=f"p{n}",
        item_id=f"i{n}",
        name=name,
        game="csgo",
        price=price,
        charged_price=charged,
        rule=rule,
        state=state,
        batch_id=None,
        allow_trade_locked=unlock_at is not None,
        created_at=at,
        updated_at=at,
        unlock_at=unlock_at,
        send_until=None,
        marketplace_id=n,
        reason="Invalid tradelink" if state is S.REFUNDED else None,
    )


def references(
    table: dict[tuple[str, str | None], Reference],
) -> object:
    return lambda base, phase: table.get((base, phase))


def ref(price: int, observations: int | None = 20, age: float = 600.0) -> Reference:
    return Reference("market.p25", price, observations, NOW - age)


DEFAULT = PortfolioSettings()
FEE_5 = PortfolioSettings(sale_fee="5%")


@pytest.mark.parametrize(
    ("gross", "bps", "fee"),
    [
        (12_431, 500, 622),  # 621.55 rounded up, never down
        (12_420, 500, 621),  # exact: no rounding
        (1, 1, 1),  # the smallest fee is one unit, not zero
        (10_000, 0, 0),
        (10_000, None, 0),  # no fee set: none taken
        (0, 500, 0),
        (999_999, 250, 25_000),  # 24_999.975 -> 25_000
    ],
)
def test_fee_is_rounded_up_against_the_trader(gross: int, bps: int | None, fee: int) -> None:
    assert fee_for(gross, bps) == fee


@pytest.mark.parametrize(
    ("state", "held"),
    [
        (S.BOUGHT, True),
        (S.RESERVED, True),
        (S.COMPLETED, True),
        (S.REFUNDED, False),
        (S.FAILED, False),
        (S.RELEASED, False),
        (S.INTENT, False),
        (S.UNKNOWN, False),
    ],
)
def test_only_purchases_whose_money_left_and_stayed_are_held(
    state: PurchaseState, held: bool
) -> None:
    p = value_portfolio([purchase(1, state=state)], references({}), DEFAULT, now=NOW)
    assert len(p.holdings) == (1 if held else 0)
    assert p.totals.cost == (10_000 if held else 0)


@pytest.mark.parametrize(
    ("found", "settings", "value", "reason"),
    [
        (ref(12_431), FEE_5, 12_431 - 622, None),
        (ref(12_431), DEFAULT, 12_431, None),
        (None, DEFAULT, None, "no market.p25 reference"),
        (ref(12_431, observations=2), DEFAULT, None, "fails min_observations 3: 2 observations"),
        (ref(12_431, age=8 * DAY), DEFAULT, None, "fails max_age 7d: 8d old"),
        (
            ref(12_431, age=8 * DAY),
            PortfolioSettings(max_age=9 * 86_400),
            12_431,
            None,
        ),
        # a price list counts no observations: min_observations does not apply to it
        (Reference("service.min", 9_000, None, NOW - 60), DEFAULT, 9_000, None),
        (Reference("file.buff", 9_000, None, None), DEFAULT, None, "its age is unknown"),
    ],
)
def test_a_holding_is_valued_or_says_why_not(
    found: Reference | None, settings: PortfolioSettings, value: int | None, reason: str | None
) -> None:
    table = {} if found is None else {(REDLINE, None): found}
    p = value_portfolio([purchase(1, charged=10_000)], references(table), settings, now=NOW)
    (h,) = p.holdings
    assert h.value == value
    if reason is None:
        assert h.no_value is None
        assert h.margin == value - 10_000  # type: ignore[operator]
        assert p.totals.value == value
        assert p.totals.unvalued == 0
    else:
        assert reason in (h.no_value or "")
        assert h.margin is None
        # left out of the value totals, its cost shown apart, and the output says so
        assert (p.totals.value, p.totals.margin) == (0, 0)
        assert (p.totals.unvalued, p.totals.unvalued_cost) == (1, 10_000)
        assert any("no value" in note for note in p.notes)


def test_a_phase_is_valued_by_that_phase_only() -> None:
    base = "★ Karambit | Doppler (Factory New)"
    table = {(base, None): ref(500_000)}  # the name over every phase: not a Ruby's price
    p = value_portfolio([purchase(1, name=RUBY)], references(table), DEFAULT, now=NOW)
    assert p.holdings[0].value is None
    table[(base, "Ruby")] = ref(2_000_000)
    p = value_portfolio([purchase(1, name=RUBY)], references(table), DEFAULT, now=NOW)
    assert (p.holdings[0].phase, p.holdings[0].value) == ("Ruby", 2_000_000)


@pytest.mark.parametrize(
    ("state", "unlock_at", "illiquid"),
    [
        (S.RESERVED, int(NOW + DAY), True),  # locked for a day yet
        (S.RESERVED, None, True),  # reserved, unlock time unknown: not sellable yet
        (S.BOUGHT, int(NOW - 1), False),  # the lock ended
        (S.BOUGHT, int(NOW + 60), True),
        (S.COMPLETED, None, False),
    ],
)
def test_trade_locked_holdings_are_illiquid_until_they_unlock(
    state: PurchaseState, unlock_at: int | None, illiquid: bool
) -> None:
    table = {(REDLINE, None): ref(12_000)}
    p = value_portfolio(
        [purchase(1, state=state, unlock_at=unlock_at)], references(table), DEFAULT, now=NOW
    )
    (h,) = p.holdings
    assert h.illiquid is illiquid
    assert h.value == 12_000  # valued all the same
    assert (p.totals.illiquid, p.totals.illiquid_value) == ((1, 12_000) if illiquid else (0, 0))


def test_cost_is_the_charge_or_the_ceiling_said_so() -> None:
    p = value_portfolio([purchase(1, price=12_500, charged=None)], references({}), DEFAULT, now=NOW)
    assert (p.holdings[0].cost, p.holdings[0].cost_is_ceiling) == (12_500, True)
    assert any("ceiling" in note for note in p.notes)


@pytest.mark.parametrize(
    ("at", "day", "week"),
    [
        (NOW, "2026-11-18", "2026-W47"),
        (NOW - 3 * DAY, "2026-11-15", "2026-W46"),  # a Sunday: the week before
        (1_767_225_599.0, "2025-12-31", "2026-W01"),  # ISO week of the new year
    ],
)
def test_day_and_week_are_utc_and_iso(at: float, day: str, week: str) -> None:
    p = purchase(1, at=at)
    assert (group_key(p, "day"), group_key(p, "week")) == (day, week)


def test_groups_add_up_by_rule_day_week_and_item() -> None:
    awp = "AWP | Asiimov (Field-Tested)"
    bought = [
        purchase(1, charged=10_000, rule="knives", at=NOW),
        purchase(2, charged=20_000, rule="knives", at=NOW - DAY, name=awp),
        purchase(3, charged=5_000, rule="cheap", at=NOW - 7 * DAY),
        purchase(4, charged=7_000, rule="cheap", state=S.REFUNDED),
    ]
    table = {(REDLINE, None): ref(12_000)}  # the AWP has no reference
    p = value_portfolio(bought, references(table), FEE_5, now=NOW)
    by_rule = {g.key: g for g in p.by["rule"]}
    assert set(by_rule) == {"cheap", "knives"}
    knives = by_rule["knives"]
    assert (knives.holdings, knives.cost, knives.valued, knives.unvalued) == (2, 30_000, 1, 1)
    assert (knives.value, knives.margin) == (11_400, 1_400)
    assert (by_rule["cheap"].holdings, by_rule["cheap"].margin) == (1, 11_400 - 5_000)
    assert [g.key for g in p.by["day"]] == ["2026-11-11", "2026-11-17", "2026-11-18"]
    assert [(g.key, g.holdings) for g in p.by["week"]] == [("2026-W46", 1), ("2026-W47", 2)]
    assert {g.key: g.holdings for g in p.by["item"]} == {REDLINE: 2, awp: 1}
    for grouping in ("item", "rule", "day", "week"):
        groups = p.by[grouping]  # type: ignore[index]
        assert sum(g.cost for g in groups) == p.totals.cost == 35_000
        assert sum(g.value for g in groups) == p.totals.value == 22_800
        assert sum(g.margin for g in groups) == p.totals.margin == 22_800 - 15_000


def sale(project_id: str, price: int, *, fee: int | None = None, line: int = 2) -> Sale:
    return Sale(project_id, price, NOW - 60, f"sales.csv:{line}", fee=fee)


@pytest.mark.parametrize(
    ("settings", "given_fee", "fee", "realised"),
    [
        (FEE_5, None, 751, 15_001 - 751 - 10_000),  # 750.05 rounded up
        (DEFAULT, None, 0, 5_001),
        (FEE_5, 300, 300, 15_001 - 300 - 10_000),  # the fee actually taken wins
    ],
)
def test_a_sale_realises_its_result_and_leaves_the_holdings(
    settings: PortfolioSettings, given_fee: int | None, fee: int, realised: int
) -> None:
    bought = [purchase(1, charged=10_000, rule="a"), purchase(2, charged=3_000, rule="b")]
    table = {(REDLINE, None): ref(12_000)}
    p = value_portfolio(
        bought, references(table), settings, now=NOW, sales=[sale("p1", 15_001, fee=given_fee)]
    )
    assert [h.purchase.project_id for h in p.holdings] == ["p2"]
    (r,) = p.realised
    assert (r.cost, r.fee, r.net, r.result) == (10_000, fee, 15_001 - fee, realised)
    assert (p.totals.sold, p.totals.realised) == (1, realised)
    assert {g.key: g.realised for g in p.by["rule"]} == {"a": realised, "b": 0}


@pytest.mark.parametrize(
    ("sales", "message", "where"),
    [
        ([sale("p9", 1_000)], "no such purchase", "sales.csv:2"),
        ([sale("p3", 1_000, line=4)], "REFUNDED, not held", "sales.csv:4"),
        (
            [sale("p1", 1_000), sale("p1", 2_000, line=7)],
            "also given at sales.csv:2",
            "sales.csv:7",
        ),
        (
            [Sale("p1", 1_000, NOW - 2 * DAY, "sales.csv:5")],
            "dated before the purchase",
            "sales.csv:5",
        ),
    ],
)
def test_a_sale_of_nothing_held_is_bad_input_named_by_its_place(
    sales: list[Sale], message: str, where: str
) -> None:
    bought = [purchase(1), purchase(3, state=S.REFUNDED)]
    with pytest.raises(ConfigError) as caught:
        value_portfolio(bought, references({}), DEFAULT, now=NOW, sales=sales)
    assert message in caught.value.message
    assert caught.value.location == where


def test_the_fee_used_is_stated() -> None:
    p = value_portfolio([], references({}), DEFAULT, now=NOW)
    assert "no sale fee set" in p.fee_text
    p = value_portfolio(
        [], references({}), FEE_5.model_copy(update={"channel": "the service"}), now=NOW
    )
    assert p.fee_text.startswith("sale fee 5% (the service)")
    assert p.notes[0] == p.fee_text
    assert p.to_json()["settings"]["sale_fee_bps"] == 500
