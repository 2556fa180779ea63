"""``snipe backtest RULES DIR --against LEDGER``: replay a live run's recording (``snipe
run --record``) and compare the replay's decisions with the live ledger's (:mod:`._parity`).

The replay is the ordinary backtest, with what the live run knew of the market in place
of the models: listings live lost to another buyer are lost in the replay too (the
competitor model is off), and price lists are read in the versions live read. The
replay's own decisions are kept (through the ``snipe_decisions`` hook) to explain
live-only purchases, as the live run's ``decisions.jsonl`` explains replay-only ones.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from .._clock import SystemClock
from .._errors import ConfigError, LedgerError, PurchaseRefusal
from .._plugins import PluginHost
from ..client import classify_refusal
from ..hookspecs import hookimpl
from ..ledger import Ledger
from ..rules import RuleSet
from ._format import read_records, recording_span
from ._network import REQUESTS_FILE, NetworkLog
from ._parity import Parity, compare, outcome, presence, read_decisions
from ._run import BacktestOptions, BacktestRun, run_backtest
from ._tee import DECISIONS_FILE
from ._versions import ListVersions

__all__ = ["ReplayDecisions", "live_purchases", "run_against", "taken_by_others"]


class ReplayDecisions:
    """The replay's decisions on listings a rule could afford, by item id (a plugin)."""

    def __init__(self, ruleset: RuleSet) -> None:
        self.ceilings = {r.name: r.max_price for r in ruleset.rules}
        self.by_item: dict[str, list[dict[str, Any]]] = {}

    @hookimpl
    def snipe_decisions(self, decisions: Sequence[Any], context: Any) -> None:
        for d in decisions:
            if not d.accepted and d.price > self.ceilings.get(d.rule, 0):
                continue
            self.by_item.setdefault(d.listing.item_id, []).append(
                {"t": context.now, "accepted": d.accepted, "reasons": list(d.reasons)}
            )


async def live_purchases(ledger: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every purchase attempt of a live ledger file (opened read-only)."""
    try:
        async with await Ledger.open(ledger, clock=SystemClock(), readonly=True) as book:
            return [p.to_json() for p in await book.purchases()]
    except LedgerError as exc:
        raise ConfigError(str(exc), location=str(ledger)) from None


def taken_by_others(purchases: Sequence[dict[str, Any]]) -> frozenset[str]:
    """The listings live tried to buy and the service said were sold already."""
    return frozenset(
        str(p["item_id"])
        for p in purchases
        if p["state"] == "FAILED" and classify_refusal(p.get("reason")) is PurchaseRefusal.ITEM_SOLD
    )


async def run_against(
    ruleset: RuleSet,
    recording: str | os.PathLike[str],
    ledger: str | os.PathLike[str],
    *,
    host: PluginHost,
    options: BacktestOptions | None = None,
    progress: Callable[[float], None] | None = None,
) -> tuple[Parity, BacktestRun]:
    """Replay ``recording`` (see the module docstring) and compare with ``ledger``."""
    directory = Path(recording)
    live = await live_purchases(ledger)
    start, end = recording_span(directory)
    tap = ReplayDecisions(ruleset)
    host.register(tap, "backtest.decisions", source="--against")
    try:
        lists = ListVersions(directory)
        requests = directory / REQUESTS_FILE
        network = NetworkLog.load(requests) if requests.exists() else None
        if network is not None:
            network.charged = frozenset(
                str(p["item_id"]) for p in live if outcome(p["state"]) == "charged"
            )
        # the replay starts when live sent its first request (its answer is the first
        # record), so that request meets its live latency as the rest do
        options = replace(
            options or BacktestOptions(),
            race_factor=0.0,
            taken=taken_by_others(live),
            start=network.first_sent if network is not None else None,
        )
        run = await run_backtest(
            ruleset,
            read_records(directory),
            host=host,
            end=end,
            options=options,
            progress=progress,
            lists=lists if lists.exists else None,
            network=network,
            live=True,
        )
    finally:
        host.pm.unregister(name="backtest.decisions")
    decisions_path = directory / DECISIONS_FILE
    live_decisions = read_decisions(decisions_path) if decisions_path.exists() else None
    # live attempts after the replay stopped (the recording's last record) are not
    # the replay's to make
    in_span = [p for p in live if p["created_at"] <= run.end]
    ids = {str(p["item_id"]) for p in in_span} | {str(p["item_id"]) for p in run.purchases}
    listed = presence(read_records(directory), ids)
    parity = compare(
        in_span,
        run.purchases,
        live_decisions=live_decisions,
        replay_decisions=tap.by_item,
        listed=listed,
        start=start,
    )
    return parity, run
