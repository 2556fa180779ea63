"""`snipe run --paper` as a real process against a real `snipe sandbox` process (one sped-up
clock, 120x), SIGKILLed ten times at random moments and restarted: the paper ledger then
has nothing counted twice, every would-be purchase judged once or still pending, and the
sandbox never received a purchase or a buy order. The real ledger is never created."""

from __future__ import annotations

import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from api.processes import SNIPE, Sped, environment, sandbox_process, wait_for

pytestmark = [
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals"),
    pytest.mark.slow,  # eleven engine processes and a sandbox: about a minute
]

KILLS = 10

# Broad enough that would-be purchases come every few real seconds at 60x.
RULES = """
version: 1
account:
  base_url: "https://market.example.com"
  api_key_env: SNIPE_API_KEY
  trade_link: "https://steamcommunity.com/tradeoffer/new/?partner=123456789&token=AbCdEfGh"
  ledger: snipe-ledger.sqlite
  snapshot_every: 10s
budgets: {per_day: "5000.00", total: "9000.00"}
rules:
  - name: broad
    match:
      patterns: ["AK-47 | *", "M4A4 | *", "AWP | *", "Glock-18 | *", "USP-S | *", "P250 | *"]
      game: csgo
    discount: 15
    max_price: "40.00"
"""


def _paper_run(
    rules: Path, url: str, ledger: Path, sped: Sped, log: Path
) -> subprocess.Popen[bytes]:
    command = [*SNIPE, "run", str(rules), "--paper", "--paper-balance", "5000.00"]
    command += ["--base-url", url, "--ledger", str(ledger), *sped.args]
    with log.open("ab") as out:  # a file, not a pipe: a killed reader never stalls it
        return subprocess.Popen(command, stdout=out, stderr=out, env=environment())


def _more(log: Path, word: str, seen: int) -> Callable[[], bool]:
    """Whether ``log`` holds ``word`` more than ``seen`` times."""
    return lambda: log.read_text().count(word) > seen


def _rows(path: Path, sql: str) -> list[tuple[Any, ...]]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        return db.execute(sql).fetchall()


def test_the_paper_ledger_survives_ten_sigkills(tmp_path: Path) -> None:
    rng = random.Random(19)
    sped = Sped(speed=120)
    real = tmp_path / "ledger.sqlite"
    paper = tmp_path / "ledger.paper.sqlite"
    log = tmp_path / "runs.log"
    kills_at: list[float] = []  # market time of each kill
    rules = tmp_path / "rules.yaml"
    rules.write_text(RULES)
    with sandbox_process(sped) as url:
        for round_ in range(KILLS):
            started = log.read_text().count("buying allowed") if log.exists() else 0
            run = _paper_run(rules, url, real, sped, log)
            if round_ % 3 == 0:  # right after a would-be purchase: likely still pending
                made = log.read_text().count("would buy") if log.exists() else 0
                wait_for("a would-be purchase", _more(log, "would buy", made))
            elif round_ % 3 == 1:  # while it runs: a search, a judgement, a snapshot...
                wait_for("a run to buy", _more(log, "buying allowed", started))
                time.sleep(rng.uniform(0.0, 2.5))
            else:  # anywhere, start-up included
                time.sleep(rng.uniform(0.3, 4.0))
            run.send_signal(signal.SIGKILL)
            run.wait(timeout=30)
            assert run.returncode == -signal.SIGKILL, log.read_text()
            kills_at.append(sped.origin + (time.time() - sped.origin) * sped.speed)
        started = log.read_text().count("buying allowed")
        last = _paper_run(rules, url, real, sped, log)
        wait_for("the last run to buy", lambda: log.read_text().count("buying allowed") > started)
        time.sleep(3.0)  # its first searches and judgements
        last.send_signal(signal.SIGTERM)
        assert last.wait(timeout=60) == 0, log.read_text()[-3000:]
        truth = httpx.get(f"{url}/_sandbox/ground-truth").json()

    text = log.read_text()
    assert "PAPER run of" in text
    assert "[PAPER, " in text
    assert not real.exists()  # the real ledger is never touched
    assert truth["purchases"] == []
    assert truth["purchase_requests"] == []
    assert not [k for k in truth["requests"] if "buy" in k or "order" in k]

    settings = dict(_rows(paper, "SELECT key, value FROM ledger_meta"))
    assert settings == {"mode": "paper", "paper.start_balance": "5000000"}
    purchases = _rows(
        paper, "SELECT project_id, item_id, state, price, charged_price, reason FROM purchases"
    )
    events = _rows(paper, "SELECT project_id, from_state, to_state, at FROM events ORDER BY id")
    assert len(purchases) >= 3, text[-3000:]  # there was something to keep
    by_purchase: dict[str, list[tuple[Any, ...]]] = {}
    for event in events:
        by_purchase.setdefault(event[0], []).append(event)
    judged_across_a_kill = 0
    for project_id, _item_id, state, price, charged, reason in purchases:
        moves = [(e[1], e[2]) for e in by_purchase[project_id]]
        assert moves[0] == (None, "INTENT")
        if state == "INTENT":  # pending: judged by a later run
            assert moves == [(None, "INTENT")]
            continue
        # judged exactly once, from its intent: never counted twice
        assert moves == [(None, "INTENT"), ("INTENT", state)], moves
        assert state in {"BOUGHT", "RESERVED", "FAILED"}
        if state == "FAILED":
            assert str(reason).startswith(("missed: ", "refused: the paper wallet")), reason
        else:
            assert charged == price
        intent_at, verdict_at = by_purchase[project_id][0][3], by_purchase[project_id][1][3]
        judged_across_a_kill += any(intent_at < k < verdict_at for k in kills_at)
    live = [p for p in purchases if p[2] != "FAILED"]
    assert len(live) == len({p[1] for p in live})  # no item held twice
    assert sum(int(p[3]) for p in live) <= 5_000_000  # within the simulated wallet
    states = [p[2] for p in purchases]
    why = Counter(str(p[5]).split(":")[1].strip() for p in purchases if p[2] == "FAILED")
    print(
        f"paper ledger after {KILLS} SIGKILLs: {len(purchases)} would-be purchases,"
        f" {states.count('BOUGHT') + states.count('RESERVED')} bought,"
        f" {states.count('FAILED')} missed or refused {dict(why)}, {states.count('INTENT')}"
        " pending;"
        f" {judged_across_a_kill} judged by a run after the one that made them"
    )
