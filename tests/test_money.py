from decimal import Decimal

import pytest

from engine import format_usd, parse_usd


@pytest.mark.parametrize(
    ("text", "mills"),
    [
        ("12.5", 12_500),
        ("$12.50", 12_500),
        ("12.345 USD", 12_345),
        ("0.001", 1),
        (".5", 500),
        (12, 12_000),
        (Decimal("0.999"), 999),
        ("0", 0),
    ],
)
def test_parse_usd_is_exact(text: str | int | Decimal, mills: int) -> None:
    assert parse_usd(text) == mills


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        ("12.3456", "more than three decimals"),
        ("-1", "not a dollar amount"),
        (-1, "negative"),
        (0.1, "not an exact dollar amount"),
        ("twelve", "not a dollar amount"),
        (True, "not an exact dollar amount"),
    ],
)
def test_parse_usd_rejects_with_the_input_quoted(bad: object, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        parse_usd(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("mills", "text"),
    [
        (12_500, "$12.50"),
        (12_345, "$12.345"),
        (0, "$0.00"),
        (1_234_567_000, "$1,234,567.00"),
        (-250, "-$0.25"),
    ],
)
def test_format_usd(mills: int, text: str) -> None:
    assert format_usd(mills) == text
