"""The value types of the rule language and what a market name says."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from engine.rules import parse_duration, parse_percent, split_name
from engine.rules._values import format_duration, format_percent, parse_wear


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("7d", 604_800), ("36h", 129_600), ("1d12h", 129_600), ("90m", 5_400), ("30s", 30),
     ("2w", 1_209_600), (3600, 3600), (" 1D 2H ", 93_600)],
)  # fmt: skip
def test_durations(text: Any, seconds: int) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["soon", "7", "-1d", -5, True, "1.5d", ""])
def test_bad_durations_are_refused(text: Any) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_duration(text)


@pytest.mark.parametrize(
    ("text", "points"),
    [(20, 2000), ("20%", 2000), (Decimal("12.5"), 1250), (" 0.5 % ", 50), (0, 0), (100, 10_000)],
)
def test_percentages_are_exact_basis_points(text: Any, points: int) -> None:
    assert parse_percent(text) == points


@pytest.mark.parametrize(
    ("text", "message"),
    [(101, "between 0 and 100"), (Decimal("12.345"), "12.345 has more than two decimals"),
     ("x%", "expected a percentage"), (True, "expected a percentage")],
)  # fmt: skip
def test_bad_percentages_are_refused(text: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_percent(text)


@pytest.mark.parametrize(("text", "wear"), [(Decimal("0.07"), 0.07), (0, 0.0), ("1", 1.0)])
def test_wear_values(text: Any, wear: float) -> None:
    assert parse_wear(text) == wear


def test_formatting_for_reasons() -> None:
    assert format_percent(1250) == "12.5%"
    assert format_percent(2000) == "20%"
    assert format_duration(3 * 86_400 + 7200) == "3d 2h"
    assert format_duration(5400) == "1h 30m"
    assert format_duration(12) == "12s"


@pytest.mark.parametrize(
    ("name", "base", "phase", "exterior"),
    [
        ("★ Karambit | Doppler Phase 2 (Factory New)", "★ Karambit | Doppler (Factory New)",
         "Phase 2", "FN"),
        ("★ Karambit | Doppler Black Pearl (Minimal Wear)", "★ Karambit | Doppler (Minimal Wear)",
         "Black Pearl", "MW"),
        ("Glock-18 | Gamma Doppler Emerald (Factory New)", "Glock-18 | Gamma Doppler (Factory New)",
         "Emerald", "FN"),
        ("★ Karambit | Doppler (Factory New)", "★ Karambit | Doppler (Factory New)", None, "FN"),
        ("AK-47 | Redline (Field-Tested)", "AK-47 | Redline (Field-Tested)", None, "FT"),
        ("Sticker | Crown (Foil)", "Sticker | Crown (Foil)", None, None),
        ("Kilowatt Case", "Kilowatt Case", None, None),
    ],
)  # fmt: skip
def test_names_are_taken_apart(
    name: str, base: str, phase: str | None, exterior: str | None
) -> None:
    parts = split_name(name)
    assert (parts.base_name, parts.phase, parts.exterior) == (base, phase, exterior)
