"""Sales made elsewhere, read from CSV: the documented columns, and every bad row named
``file:line``."""

from __future__ import annotations

import pytest

from engine._errors import ConfigError
from engine.portfolio import parse_sales


def test_rows_become_sales_in_usd_x_1000() -> None:
    text = (
        "Sold_At,project_id,price,fee,channel\n"
        "2026-11-24T15:30:00Z,snp-1,12.50,0.625,steam\n"
        "\n"  # blank lines are skipped, lines still counted
        "1795000000,snp-2,$3,,\n"
        "2026-11-24,snp-3,0.001,,\n"
    )
    one, two, three = parse_sales(text, origin="s.csv")
    assert (one.project_id, one.price, one.fee, one.channel) == ("snp-1", 12_500, 625, "steam")
    assert one.sold_at == 1_795_534_200.0  # 2026-11-24 15:30 UTC
    assert one.origin == "s.csv:2"
    assert (two.price, two.fee, two.channel, two.sold_at) == (3_000, None, None, 1_795_000_000)
    assert two.origin == "s.csv:4"
    assert (three.price, three.sold_at) == (1, 1_795_478_400.0)  # a date is its UTC midnight


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        ("", "s.csv:1", "empty file"),
        ("project_id,price\n", "s.csv:1", "'sold_at' is missing"),
        ("project_id,price,sold_at,colour\n", "s.csv:1", "unknown column 'colour'"),
        ("project_id,price,sold_at\nsnp-1,12.5,2026-11-24\nsnp-2,12.5\n", "s.csv:3", "cells"),
        ("project_id,price,sold_at\nsnp-1,12.5555,2026-11-24\n", "s.csv:2", "three decimals"),
        ("project_id,price,sold_at\nsnp-1,-3,2026-11-24\n", "s.csv:2", "bad dollar amount"),
        ("project_id,price,sold_at\nsnp-1,3,yesterday\n", "s.csv:2", "not an ISO 8601"),
        ("project_id,price,sold_at\n,3,2026-11-24\n", "s.csv:2", "project_id is empty"),
        ("project_id,price,sold_at,fee\nsnp-1,3,2026-11-24,4\n", "s.csv:2", "fee is above"),
    ],
)
def test_a_bad_row_is_named_by_file_and_line(text: str, where: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_sales(text, origin="s.csv")
    assert caught.value.location == where
    assert message in caught.value.message
