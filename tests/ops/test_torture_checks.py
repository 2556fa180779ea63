"""bench/torture.py's ground-truth comparison (also bench/soak.py's), the parts that say
an item was bought twice: what the service charged, and what the ledger holds live."""

from __future__ import annotations

from typing import Any

import pytest
from _benchload import load_bench

torture = load_bench("torture.py", "snipe_bench_torture_checks")


def _charge(project_id: str, trade_id: str, price: int = 1_000) -> dict[str, Any]:
    return {
        "account": "me",
        "source": "buy",
        "item_id": "31002208",
        "project_id": project_id,
        "trade_id": trade_id,
        "price": price,
        "name": "AK-47 | Redline (Field-Tested)",
        "at": 1_000.0,
    }


def _row(state: str, charged: int | None = None) -> dict[str, Any]:
    return {
        "item_id": "31002208",
        "state": state,
        "charged_price": charged,
        "rule": "deals",
        "name": "AK-47 | Redline (Field-Tested)",
    }


@pytest.mark.parametrize(
    ("rows", "charges", "twice"),
    [
        # released on the service's word (not bought), then bought: one purchase
        ({"p1": _row("RELEASED"), "p2": _row("COMPLETED", 1_000)}, [("p2", "t2")], []),
        ({"p1": _row("FAILED"), "p2": _row("COMPLETED", 1_000)}, [("p2", "t2")], []),
        # two live rows of one item: flagged even when the service charged one
        (
            {"p1": _row("BOUGHT", 1_000), "p2": _row("COMPLETED", 1_000)},
            [("p2", "t2")],
            ["ledger holds item 31002208 live 2 times"],
        ),
        (
            {"p1": _row("INTENT"), "p2": _row("COMPLETED", 1_000)},
            [("p2", "t2")],
            ["ledger holds item 31002208 live 2 times"],
        ),
        # charged twice by the service: flagged whatever the ledger says
        (
            {"p1": _row("RELEASED"), "p2": _row("COMPLETED", 1_000)},
            [("p1", "t1"), ("p2", "t2")],
            ["service charged item 31002208 2 times"],
        ),
    ],
)
def test_an_item_counts_as_bought_twice_as_the_ledger_and_the_service_say(
    rows: dict[str, dict[str, Any]], charges: list[tuple[str, str]], twice: list[str]
) -> None:
    truth = {
        "default_account": "me",
        "purchases": [_charge(pid, trade) for pid, trade in charges],
        "refunds": [],
    }
    assert torture.check_ledger(truth, rows)["no item committed twice"] == twice


def test_a_released_row_the_service_charged_is_a_missing_purchase() -> None:
    truth = {"default_account": "me", "purchases": [_charge("p1", "t1")], "refunds": []}
    failures = torture.check_ledger(truth, {"p1": _row("RELEASED")})
    assert failures["every charged purchase in the ledger with its charged price"] == [
        "p1 charged 1000 but RELEASED in ledger"
    ]
