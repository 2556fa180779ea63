"""``snipe lookahead`` from the command line: exit 1 naming the plugin that read the
future, 0 when clean (the example rules too), 2 with the place on bad input."""

from __future__ import annotations

import importlib.metadata
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.cli import main

from . import peeking
from .test_lookahead_check import recording, rules_text

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = [REPO / "rules.example.yaml", *sorted((REPO / "strategies").glob("*.yaml"))]


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return recording(tmp_path / "rec")


@pytest.fixture
def installed(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The planted plugins, installed as entry points of the group ``snipe``."""
    points = [
        importlib.metadata.EntryPoint("prophet", f"{peeking.__name__}:PROPHET", "snipe"),
        importlib.metadata.EntryPoint("hoard", f"{peeking.__name__}:HOARD", "snipe"),
    ]
    real = importlib.metadata.entry_points

    def entry_points(**params: str) -> object:
        if params.get("group") == "snipe":
            return points
        return real(**params)

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    monkeypatch.delenv("SNIPE_PLUGINS", raising=False)
    peeking.LOWEST.clear()
    yield
    peeking.LOWEST.clear()


def write_rules(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "rules.yaml"
    path.write_text(text)
    return path


def test_a_plugin_reading_the_future_fails_the_check_and_is_named(
    installed: None,
    data: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SNIPE_PLUGINS", "prophet")
    rules = write_rules(tmp_path, rules_text("{min: 30, versus: prophet.last}"))
    assert main(["lookahead", str(rules), "--data", str(data), "--cuts", "2"]) == 1
    captured = capsys.readouterr()
    out = captured.out
    assert "LOOK-AHEAD: cut at 2026-01-01T00:0" in out
    assert "AK-47 | Redline (Field-Tested) (item 1), rule 'deals'" in out
    assert "full run: buy at $8.00" in out
    assert "cut run:  skip" in out
    assert "price source prophet.last (plugin 'prophet')" in out
    assert "suspects: plugin 'prophet'\n" in out
    assert "look-ahead found" in out
    # progress, one line per run, and the cost against one backtest
    assert captured.err.count("snipe lookahead: cut ") == 2
    assert "x one backtest" in captured.err


def test_json_lists_the_differences_and_the_suspects(
    installed: None,
    data: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SNIPE_PLUGINS", "hoard")
    rules = write_rules(tmp_path, rules_text("15"))
    args = ["lookahead", str(rules), "--data", str(data), "--cuts", "1", "--json", "--quiet"]
    assert main(args) == 1
    captured = capsys.readouterr()
    found = json.loads(captured.out)
    assert found["lookahead"] is True
    assert found["suspects"] == ["hoard"]
    (cut,) = found["cuts"]
    assert not cut["clean"]
    assert cut["differences"][0]["cut"] == "buy at $8.00, vetoed by plugin 'hoard'"
    assert captured.err.count("snipe lookahead: cut") == 0  # --quiet


def test_the_built_ins_are_clean(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SNIPE_PLUGINS", "")
    rules = write_rules(tmp_path, rules_text("15"))
    assert main(["lookahead", str(rules), "--data", str(data), "--cuts", "2", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "no look-ahead found" in out
    assert "LOOK-AHEAD" not in out


@pytest.mark.slow
@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_the_example_rules_are_clean(
    example: Path,
    sandbox_recording: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SNIPE_PLUGINS", "")
    args = ["lookahead", str(example), "--data", str(sandbox_recording), "--cuts", "1"]
    assert main([*args, "--quiet"]) == 0, capsys.readouterr()
    captured = capsys.readouterr()
    assert "no look-ahead found" in captured.out
    assert "nothing was compared" not in captured.err  # each example decides something


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (["--cuts", "0"], "--cuts: expected 1 to 100 cuts, got 0"),
        (["--cuts", "many"], "--cuts: expected a whole number, got 'many'"),
        (["--latency", "-1"], "--latency: must be zero or more"),
        (["--balance", "lots"], "--balance"),
    ],
)
def test_bad_options_exit_2_naming_the_option(
    extra: list[str],
    expected: str,
    data: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    rules = write_rules(tmp_path, rules_text("15"))
    try:
        status = main(["lookahead", str(rules), "--data", str(data), *extra])
    except SystemExit as exc:  # argparse's own refusals
        status = exc.code
    assert status == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert expected in captured.err


def test_a_missing_recording_exits_2_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rules = write_rules(tmp_path, rules_text("15"))
    assert main(["lookahead", str(rules), "--data", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert "recording.json is missing" in err
    assert str(tmp_path / "nope") in err


def test_bad_rules_exit_2_naming_the_line(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rules = write_rules(tmp_path, rules_text("{min: 30, versus: nowhere.price}"))
    assert main(["lookahead", str(rules), "--data", str(data)]) == 2
    err = capsys.readouterr().err
    assert f"{rules}:" in err
    assert "nowhere.price" in err


def test_snipe_backtest_tells_plugins_which_recording_it_replays(
    installed: None,
    data: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``prophet`` quotes nothing without ``replayed_recording()``: with it, its $30
    reference makes the $8 Redline a 73% discount, and the rule buys."""
    monkeypatch.setenv("SNIPE_PLUGINS", "prophet")
    rules = write_rules(tmp_path, rules_text("{min: 30, versus: prophet.last}"))
    args = ["backtest", str(rules), "--data", str(data), "--json", "--seed", "3"]
    assert main(args) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["totals"]["attempts"] >= 1
