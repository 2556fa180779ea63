"""`snipe run --api` refuses, in one line with exit 2 and before anything starts, an
address beyond loopback without TLS or a stated proxy, a malformed address, and a run
without a control token."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.cli import main

RULES = """
version: 1
account: {base_url: "http://127.0.0.1:9"}
budgets: {per_day: "5.00", total: "10.00"}
rules:
  - {name: r, match: {names: [X]}, max_price: "1.00"}
"""
CONTROL = "c" * 32


@pytest.mark.parametrize(
    ("listen", "environ", "said"),
    [
        (
            "0.0.0.0:8788",
            {"SNIPE_API_CONTROL_TOKEN": CONTROL},
            "refusing to listen on 0.0.0.0:8788",
        ),
        ("192.168.1.5:8788", {"SNIPE_API_CONTROL_TOKEN": CONTROL}, "api.certfile and api.keyfile"),
        ("nope", {"SNIPE_API_CONTROL_TOKEN": CONTROL}, "--api: expected HOST:PORT"),
        ("127.0.0.1:0", {}, "no control token: set SNIPE_API_CONTROL_TOKEN"),
    ],
)
def test_an_unsafe_or_unusable_api_stops_the_run_at_once(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    listen: str,
    environ: dict[str, str],
    said: str,
) -> None:
    monkeypatch.setenv("SNIPE_API_KEY", "not-used")
    monkeypatch.delenv("SNIPE_API_CONTROL_TOKEN", raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    rules = tmp_path / "rules.yaml"
    rules.write_text(RULES)
    ledger = tmp_path / "l.sqlite"
    code = main(["run", str(rules), "--ledger", str(ledger), "--for", "1", "--api", listen])
    err = capsys.readouterr().err
    assert code == 2
    (line,) = [x for x in err.splitlines() if x.startswith("snipe run: ")]
    assert said in line
    assert CONTROL not in err
    assert not ledger.exists()  # nothing started
