"""Checks shared by the money scenarios: the ledger against the sandbox's ground truth, the
caps, and exactly-once on the requests that were sent."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from engine import VirtualClock
from engine.ledger import Ledger
from engine.sandbox import MarketConfig, Sandbox, SandboxConfig


def scenario_sandbox(
    clock: VirtualClock, tmp_path: Path, scenario: str, *, seed: int = 3
) -> Sandbox:
    """A quiet market (as ``harness.quiet_sandbox``) with a scenario file's faults."""
    path = tmp_path / "scenario.yaml"
    path.write_text(scenario, encoding="utf-8")
    market = MarketConfig(size=300, deal_share=0.0, hold_share=0.0, mean_lifetime=10**9)
    return Sandbox(SandboxConfig(seed=seed, market=market), clock=clock, scenario=path)


def truth_committed(sandbox: Sandbox) -> int:
    """What really left the default account for purchases: charged minus refunded."""
    truth = sandbox.ground_truth()
    account = truth["default_account"]
    charged = sum(c["amount"] for c in truth["charges"] if c["account"] == account)
    refunded = sum(r["amount"] for r in truth["refunds"] if r["account"] == account)
    return int(charged - refunded)


async def assert_books_balance(ledger: Ledger, sandbox: Sandbox, *, caps: tuple[int, ...]) -> None:
    """Nothing left unresolved; the ledger's committed total is the ground truth's charged
    minus refunded, to the unit; no cap is exceeded, in the ledger or in reality."""
    totals = await ledger.totals()
    assert await ledger.unresolved() == []
    truth = truth_committed(sandbox)
    assert totals.committed == truth, (totals, truth)
    for cap in caps:
        assert totals.committed <= cap
        assert truth <= cap


def assert_sent_once(sandbox: Sandbox, *, per_item: bool = True) -> None:
    """One purchase request per project_id; with ``per_item``, one per listing too (a
    buyer that resent a lost purchase under a new project_id would send a listing twice,
    even though the sandbox answers the resend "Item sold")."""
    sent = sandbox.purchase_requests
    assert sent, "no purchase request was sent"
    by_project = Counter(r["project_id"] for r in sent)
    assert all(pid is not None for pid in by_project)
    assert max(by_project.values()) == 1, by_project
    if per_item:
        by_item = Counter(r["item_id"] for r in sent)
        assert max(by_item.values()) == 1, by_item
