"""`snipe check` and `snipe plugins`, and the shipped rule files."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.cli import main
from engine.rules import load_rules

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = [ROOT / "rules.example.yaml", *sorted((ROOT / "strategies").glob("*.yaml"))]


@pytest.fixture(autouse=True)
def no_installed_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SNIPE_PLUGINS", "")


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_shipped_rule_files_pass_snipe_check(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", str(path)]) == 0
    out = capsys.readouterr().out
    assert "error" not in out
    assert out.rstrip().endswith(f"ok: {path}")


def test_there_are_at_least_four_strategies() -> None:
    assert len(SHIPPED) >= 5


def test_the_example_uses_every_builtin_key_and_action() -> None:
    rules = load_rules(ROOT / "rules.example.yaml")
    everything = [*rules.rules, *rules.buy_order_rules]
    used = {key for rule in everything for key in rule.criteria}
    assert used >= {"match", "price", "discount", "float", "phases", "stickers", "hold"}
    assert {r.action for r in everything} == {"buy", "bulk", "buy_order"}
    assert rules.disabled == ("paused-rule",)


def test_check_prints_a_summary(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(ROOT / "strategies" / "doppler-hunter.yaml")]) == 0
    out = capsys.readouterr().out
    assert "budgets     $1,500.00 per day, $3,000.00 in total" in out
    assert "3 rules, 4 names watched" in out  # the Phase 2 name is searched by its base
    assert "★ Karambit | Doppler (Factory New)" in out
    assert "gem-dopplers: patterns" not in out
    assert "emerald-gammas: patterns ★ * | Gamma Doppler (Factory New)" in out


def test_check_prints_every_error_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(
        "account: {base_url: 'https://m.example'}\n"
        "budgets: {per_day: 10, total: 10}\n"
        "rules:\n"
        "  - name: r\n"
        "    match: {names: [x]}\n"
        "    max_price: 1\n"
        "    flaot: {max: 0.1}\n"
        "    max_count: -1\n",
        "utf-8",
    )
    assert main(["check", str(path)]) == 2
    out = capsys.readouterr().out
    assert f"error: {path}:7:5: rules[0].flaot: unknown key 'flaot'; did you mean 'float'?" in out
    assert (
        f"error: {path}:8:16: rules[0].max_count: Input should be greater than or equal to 1" in out
    )
    assert out.rstrip().endswith(f"{path}: 2 errors")


def test_check_of_a_missing_file_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", str(tmp_path / "nope.yaml")]) == 2
    assert "cannot read the file" in capsys.readouterr().out


def test_plugins_lists_the_builtins_and_their_hooks(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plugins"]) == 0
    out = capsys.readouterr().out
    assert "builtin.price  (built in)" in out
    assert "hooks: snipe_register_criteria, snipe_register_price_sources" in out
    assert "adds:  key price, key discount, price source platform_price" in out


def test_plugins_reports_an_allowed_plugin_that_is_missing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SNIPE_PLUGINS", "no-such-plugin")
    assert main(["plugins"]) == 1
    out = capsys.readouterr().out
    assert "failed: plugin 'no-such-plugin' failed in load: SNIPE_PLUGINS names it" in out


def test_check_explains_which_rules_watch_a_name(capsys: pytest.CaptureFixture[str]) -> None:
    path = ROOT / "strategies" / "doppler-hunter.yaml"
    name = "★ Karambit | Doppler Ruby (Factory New)"
    assert main(["check", str(path), "--why", name, "--why", "Kilowatt Case"]) == 0
    out = capsys.readouterr().out
    assert f"why {name}" in out
    assert "watched by 'gem-dopplers'" in out
    assert "rule 'emerald-gammas' does not watch" in out
    assert "no enabled rule watches 'Kilowatt Case'" in out
