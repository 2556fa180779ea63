"""``snipe backtest`` and ``snipe record`` from the command line."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from engine.cli import main

from .support import REDLINE, T0, TRADE_LINK, listing, market, told, up, write, write_with_feed

RULES = f"""
version: 1
account: {{base_url: "http://replay", trade_link: "{TRADE_LINK}"}}
budgets: {{per_day: "100.00", total: "100.00"}}
rules:
  - name: deals
    match: {{names: ["{REDLINE}"], game: csgo}}
    discount: 15
    max_price: "50.00"
"""


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    rules = tmp_path / "rules.yaml"
    rules.write_text(RULES)
    steps = market(300, [listing("1", 8000), listing("2", 9500)])
    steps.append((30.0, "snap", [listing("1", 8000), listing("2", 9500), listing("3", 7000)]))
    data = write(tmp_path / "rec", sorted(steps, key=lambda s: s[0]))
    return rules, data


def test_json_summary_and_the_same_fingerprint_twice(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    rules, data = files
    outputs = []
    for _ in range(2):
        assert main(["backtest", str(rules), "--data", str(data), "--json", "--seed", "3"]) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1]
    summary = json.loads(outputs[0])
    assert summary["totals"]["attempts"] >= 1
    assert set(summary["rules"]) == {"deals"}
    assert len(summary["fingerprint"]) == 64


def test_the_summary_says_which_source_saw_the_purchases_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text(RULES)
    steps = [(0.0, "feed", up(T0)), *market(60, [listing("1", 9000)])]
    steps.append((25.5, "feed", told(T0 + 25.5, "77", 6000)))
    data = write_with_feed(tmp_path / "rec", sorted(steps, key=lambda s: s[0]))
    report = tmp_path / "report"
    # seed 0: the competing buyer lets this deal through
    args = ["backtest", str(rules), "--data", str(data), "--seed", "0"]
    assert main([*args, "--report", str(report)]) == 0
    printed = capsys.readouterr().out
    assert "seen first by: feed 1, snapshot 0, catalogue 0, search 0" in printed
    assert "live feed: 1 connection(s), 1 gap(s) healed, 0 listing(s) missed" in printed
    markdown = (report / "report.md").read_text()
    assert "| seen first |" in markdown
    assert "| feed |" in markdown


def test_report_files_are_written_and_byte_identical(
    files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rules, data = files
    for out in ("a", "b"):
        args = ["backtest", str(rules), "--data", str(data), "--report", str(tmp_path / out)]
        # a seed under which a purchase goes through: a replay that buys nothing draws
        # no chart (test_nothing_bought.py)
        assert main([*args, "--quiet", "--seed", "3"]) == 0
    printed = capsys.readouterr().out
    assert printed.count("fingerprint ") == 2
    for name in ("report.json", "ledger.jsonl", "report.md"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    assert (tmp_path / "a" / "chart.png").read_bytes()[:4] == b"\x89PNG"
    assert "chart.png" in (tmp_path / "a" / "report.md").read_text()
    assert "data:image/png;base64," in (tmp_path / "a" / "report.html").read_text()


def test_a_truncated_recording_is_an_error_naming_the_file(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    rules, data = files
    segment = data / "seg-000001.jsonl.gz"
    segment.write_bytes(segment.read_bytes()[:-40])
    assert main(["backtest", str(rules), "--data", str(data), "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # never a partial summary
    assert "seg-000001.jsonl.gz" in captured.err
    assert "truncated" in captured.err


def test_a_bad_line_is_an_error_naming_file_and_line(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    rules, data = files
    segment = data / "seg-000001.jsonl.gz"
    lines = gzip.decompress(segment.read_bytes()).splitlines(keepends=True)
    segment.write_bytes(gzip.compress(b"".join([*lines[:4], b"[1, 2\n", *lines[5:]])))
    assert main(["backtest", str(rules), "--data", str(data), "--quiet"]) == 2
    assert "seg-000001.jsonl.gz:5:" in capsys.readouterr().err


@pytest.mark.slow
def test_a_sweep_ranks_variants_run_in_processes(
    files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, data = files
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(
        "rules: rules.yaml\nseed: 1\nvariants:\n  - name: base\n"
        "grid:\n  deals.max_price: ['1.00', '75.00']\n"
    )
    args = ["backtest", "--sweep", str(sweep), "--data", str(data), "--json", "--jobs", "2"]
    assert main(args) == 0
    ranked = json.loads(capsys.readouterr().out)
    assert [r["rank"] for r in ranked] == [1, 2, 3]
    assert ranked[-1]["variant"] == "deals.max_price=1.00"  # buys nothing: no margin
    assert ranked[-1]["totals"]["purchases"] == 0
    assert ranked[0]["totals"]["purchases"] > 0


@pytest.mark.slow
def test_a_sweep_on_a_local_ray_instance_matches_the_processes(
    files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("ray")  # the optional extra snipe[ray]
    _, data = files
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text("rules: rules.yaml\ngrid:\n  deals.discount: [10, 30]\n")
    base = ["backtest", "--sweep", str(sweep), "--data", str(data), "--json"]
    assert main([*base, "--jobs", "2"]) == 0
    processes = json.loads(capsys.readouterr().out)
    assert main([*base, "--ray", "local"]) == 0
    on_ray = json.loads(capsys.readouterr().out)
    assert on_ray == processes


@pytest.mark.parametrize(
    ("option", "where"),
    [
        (["--feed-url", "ftp://host"], "--feed-url"),
        (["--feed-url", "https://host/?key=1"], "--feed-url"),
        (["--base-url", "nowhere"], "--base-url"),
    ],
)
def test_record_refuses_a_bad_feed_address(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: list[str], where: str
) -> None:
    out = tmp_path / "rec"
    assert main(["record", "--out", str(out), *option]) == 2
    assert where in capsys.readouterr().err
    assert not out.exists()  # nothing written for bad input
