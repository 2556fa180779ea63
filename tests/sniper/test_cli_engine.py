"""The engine's commands: `snipe demo` and `snipe run` argument and start-up errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.cli import main


def test_demo_buys_on_the_sandbox_and_explains(capsys: pytest.CaptureFixture[str]) -> None:
    # one real second at 120x is two market minutes: enough for the example rules to buy
    # the market's first deals before others do, even on a loaded machine
    assert main(["demo", "--seconds", "1", "--speed", "120", "--seed", "7"]) == 0
    out = capsys.readouterr().out
    assert "What it bought, and why" in out
    assert "What it skipped, and why" in out
    assert "the engine counted 0 bought" not in out


EXAMPLE = str(Path(__file__).resolve().parents[2] / "rules.example.yaml")


def test_run_names_a_missing_rules_file(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SNIPE_API_KEY", "not-used")
    assert main(["run", "missing.yaml"]) == 2
    assert "missing.yaml" in capsys.readouterr().err


def test_run_refuses_a_negative_duration(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["run", EXAMPLE, "--for", "-3"])
    assert info.value.code == 2
    assert "positive" in capsys.readouterr().err


def test_run_without_a_key_says_where_it_looked(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SNIPE_API_KEY", raising=False)
    assert main(["run", EXAMPLE]) == 2
    assert "SNIPE_API_KEY" in capsys.readouterr().err
