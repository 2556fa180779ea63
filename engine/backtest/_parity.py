"""Backtest-to-live parity: the replay's decisions against the live run's, each
disagreement with its cause.

A decision here is a purchase attempt: a row of the ledger, written before the request
is sent (live: the run's ledger file; replay: the backtest's ledger in memory). Listings
are bought at most once, so the two sides are matched by ``item_id``:

- **agreed**: both decided to buy the listing (their outcomes may still differ, e.g. a
  purchase refused live: said, not counted against parity);
- **live-only** / **replay-only**: one side decided to buy it, the other did not.

Each one-sided decision gets a named cause (:data:`CAUSES`), from what the other side
made of the listing (its decision on it and the reasons: ``decisions.jsonl`` of a
``snipe run --record``, and the replay's own) and from the recording (was the listing
ever in it, and when). Sans-I/O: :func:`compare` takes plain dicts; the command line
reads the files.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from .._errors import ConfigError
from .._money import format_usd
from ._format import Record

__all__ = [
    "CAUSES",
    "Parity",
    "ParityRow",
    "Presence",
    "cause_of_reasons",
    "compare",
    "outcome",
    "presence",
    "read_decisions",
]

TIMING = "timing"
CAUSES: dict[str, str] = {
    TIMING: "the other side did not evaluate the listing while it was listed (its"
    " searches came at other moments)",
    "reference not yet learned": "a reference the rule reads had too few observations, or"
    " none, on the other side",
    "reference differed": "the references (learned at slightly different moments) put the"
    " discount on the other side of the rule's threshold",
    "stale reference": "a reference was older than the rule's max_age on the other side",
    "price list changed": "a price list (file.*) read a different version",
    "cap reached": "a budget, cap, max_count or the balance was used up on the other side",
    "answer not recorded": "the answer the live engine decided on is not in the recording"
    " (lost, unreadable, or a feed event)",
    "taken by another buyer": "the listing was gone before the other side could decide",
    "other": "the other side's rule turned it down for another reason (shown)",
    "unexplained": "the other side's decisions were not recorded",
}

_CHARGED = frozenset({"BOUGHT", "RESERVED", "COMPLETED", "REFUNDED"})
_NOT_BOUGHT = frozenset({"FAILED", "RELEASED"})


def outcome(state: str | None) -> str:
    """A ledger state as ``charged``, ``not bought`` or ``unknown``."""
    if state in _CHARGED:
        return "charged"
    return "not bought" if state in _NOT_BOUGHT else "unknown"


_BUDGET = ("rule max_count", "rule cap", "daily budget", "total budget", "balance")


def cause_of_reasons(reasons: Sequence[str]) -> str:
    """The named cause of a rejection, from the reasons the rule gave."""
    text = " | ".join(reasons)
    if any(r.startswith(_BUDGET) for r in reasons):
        return "cap reached"
    if "min_observations" in text or "no reference price" in text:
        return "reference not yet learned"
    if "max_age" in text:
        return "stale reference"
    if "file." in text:
        return "price list changed"
    if "discount" in text:
        return "reference differed"
    return "other"


@dataclass(frozen=True)
class Presence:
    """When a listing was in the recording: first seen, and gone (``None``: to the end)."""

    first: float
    gone: float | None = None


def presence(records: Iterable[Record], item_ids: set[str]) -> dict[str, Presence]:
    """When each of ``item_ids`` was listed, as the recording shows it (snapshots and
    search or catalogue answers)."""
    first: dict[str, float] = {}
    gone: dict[str, float] = {}

    def seen(item_id: str, t: float) -> None:
        if item_id in item_ids:
            first.setdefault(item_id, t)
            gone.pop(item_id, None)

    for record in records:
        body = record.body
        if record.k == "key":
            ids = set(body["rows"]["id"])
            for item_id in item_ids & first.keys():
                if item_id not in ids and item_id not in gone:
                    gone[item_id] = record.t
            for item_id in ids & item_ids:
                seen(item_id, record.t)
        elif record.k == "diff":
            for item_id in body["add"]["id"]:
                seen(item_id, record.t)
            for item_id in body["del"]:
                if item_id in first and item_id not in gone:
                    gone[item_id] = record.t
        elif record.k == "search":
            for entries in body["items"].values():
                for entry in entries:
                    seen(str(entry["item_id"]), record.t)
        elif record.k == "cat":
            for entry in body["items"]:
                seen(str(entry["item_id"]), record.t)
    return {i: Presence(t, gone.get(i)) for i, t in first.items()}


def read_decisions(path: str | Path) -> dict[str, list[dict[str, Any]]]:
    """``decisions.jsonl`` by item id (a line a crash cut short is ignored)."""
    out: dict[str, list[dict[str, Any]]] = {}
    file = Path(path)
    with file.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.endswith("\n"):
                break
            try:
                entry = json.loads(line)
                out.setdefault(str(entry["item_id"]), []).append(entry)
            except (ValueError, KeyError, TypeError) as exc:
                raise ConfigError(
                    f"not a decision line: {exc}", location=f"{file}:{number}"
                ) from None
    return out


@dataclass(frozen=True)
class ParityRow:
    """One listing some side decided to buy."""

    item_id: str
    name: str
    rule: str
    price: int
    verdict: str
    """``agreed``, ``live-only`` or ``replay-only``."""
    live_at: float | None
    replay_at: float | None
    live_state: str | None
    replay_state: str | None
    cause: str | None = None
    detail: str = ""


@dataclass
class Parity:
    """The comparison: every row, the counts, the causes."""

    rows: list[ParityRow] = field(default_factory=list)

    def count(self, verdict: str) -> int:
        return sum(1 for r in self.rows if r.verdict == verdict)

    @property
    def agreement(self) -> float | None:
        """Agreed decisions over all decisions either side made (``None``: none)."""
        return self.count("agreed") / len(self.rows) if self.rows else None

    def causes(self) -> Counter[str]:
        return Counter(r.cause for r in self.rows if r.cause is not None)

    def outcome_differences(self) -> list[ParityRow]:
        """Agreed decisions whose purchase ended otherwise: charged on one side and not on
        the other, or unknown (a trade's later fate, completed or refunded, is the
        market's, not a decision's, and is not compared)."""
        return [
            r
            for r in self.rows
            if r.verdict == "agreed" and outcome(r.live_state) != outcome(r.replay_state)
        ]

    def to_json(self) -> dict[str, Any]:
        return {
            "agreed": self.count("agreed"),
            "live_only": self.count("live-only"),
            "replay_only": self.count("replay-only"),
            "agreement": self.agreement,
            "causes": dict(self.causes().most_common()),
            "outcome_differences": len(self.outcome_differences()),
            "rows": [asdict(r) for r in self.rows],
        }

    def table(self) -> Iterator[str]:
        """The comparison as lines of text: the disagreements, then the figures."""
        shown = [r for r in self.rows if r.verdict != "agreed"]
        if shown:
            yield f"{'verdict':<12} {'at':>10} {'rule':<14} {'price':>10}  item / cause"
        for r in shown:
            at = r.live_at if r.live_at is not None else r.replay_at
            yield (
                f"{r.verdict:<12} {at or 0:>10.1f} {r.rule[:14]:<14} {format_usd(r.price):>10}"
                f"  {r.name} [{r.item_id}]: {r.cause}{': ' + r.detail if r.detail else ''}"
            )
        differences = self.outcome_differences()
        if differences:
            yield f"agreed decisions whose outcome differs: {len(differences)}"
            for r in differences:
                yield f"  {r.name} [{r.item_id}]: live {r.live_state}, replay {r.replay_state}"
        share = "-" if self.agreement is None else f"{self.agreement * 100:.1f}%"
        yield (
            f"decisions: {len(self.rows)}; agreed {self.count('agreed')}, live-only"
            f" {self.count('live-only')}, replay-only {self.count('replay-only')};"
            f" agreement {share}"
        )
        for cause, n in self.causes().most_common():
            yield f"  {n} x {cause}: {CAUSES.get(cause, '')}"


def _first_by_item(purchases: Iterable[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    out: dict[str, Mapping[str, Any]] = {}
    for p in sorted(purchases, key=lambda p: p["created_at"]):
        out.setdefault(str(p["item_id"]), p)
    return out


def compare(
    live: Iterable[Mapping[str, Any]],
    replay: Iterable[Mapping[str, Any]],
    *,
    live_decisions: Mapping[str, list[dict[str, Any]]] | None,
    replay_decisions: Mapping[str, list[dict[str, Any]]],
    listed: Mapping[str, Presence],
    start: float | None = None,
) -> Parity:
    """Match the two sides' purchase attempts by item and name a cause for each one-sided
    decision (see the module docstring). ``live`` attempts made before ``start`` (the
    recording's first record) are left out: the replay could not have made them."""
    live_by = _first_by_item(p for p in live if start is None or p["created_at"] >= start)
    replay_by = _first_by_item(replay)
    parity = Parity()
    every = sorted(live_by.keys() | replay_by.keys(), key=lambda i: _at(i, live_by, replay_by))
    for item_id in every:
        ours, theirs = live_by.get(item_id), replay_by.get(item_id)
        some = ours or theirs
        assert some is not None
        row = ParityRow(
            item_id=item_id,
            name=str(some["name"]),
            rule=str(some["rule"]),
            price=int(some["price"]),
            verdict="agreed",
            live_at=ours["created_at"] if ours else None,
            replay_at=theirs["created_at"] if theirs else None,
            live_state=ours["state"] if ours else None,
            replay_state=theirs["state"] if theirs else None,
        )
        if ours and theirs:
            parity.rows.append(row)
        elif ours:
            at = float(ours["created_at"])
            cause, detail = _explain(item_id, at, replay_decisions, listed, side="replay")
            parity.rows.append(replace(row, verdict="live-only", cause=cause, detail=detail))
        else:
            assert theirs is not None
            at = float(theirs["created_at"])
            cause, detail = _explain(item_id, at, live_decisions, listed, side="live")
            parity.rows.append(replace(row, verdict="replay-only", cause=cause, detail=detail))
    return parity


def _at(item_id: str, *sides: Mapping[str, Mapping[str, Any]]) -> float:
    return min(float(s[item_id]["created_at"]) for s in sides if item_id in s)


def _explain(
    item_id: str,
    at: float,
    other: Mapping[str, list[dict[str, Any]]] | None,
    listed: Mapping[str, Presence],
    *,
    side: str,
) -> tuple[str, str]:
    """Why ``side`` did not decide to buy ``item_id`` when the other side did at ``at``."""
    where = listed.get(item_id)
    if where is None:
        return "answer not recorded", "the listing is nowhere in the recording"
    if other is None:
        return "unexplained", f"the {side} run's decisions were not recorded"
    mine = other.get(item_id, [])
    if mine:
        # the other side's verdict nearest the decision: what it made of the same listing
        entry = min(mine, key=lambda e: abs(float(e["t"]) - at))
        if entry.get("accepted"):
            return TIMING, f"the {side} accepted it too at {entry['t']:.1f} but did not send it"
        reasons = [str(r) for r in entry.get("reasons", ())]
        cause = cause_of_reasons(reasons)
        return cause, f"the {side} at {entry['t']:.1f}: {'; '.join(reasons)[:200]}"
    if where.gone is not None and where.gone <= at + 1.0:
        return "taken by another buyer", f"listed {where.first:.1f} to {where.gone:.1f}"
    span = f"{where.first:.1f} to {'the end' if where.gone is None else f'{where.gone:.1f}'}"
    return TIMING, f"listed {span}; the {side} never evaluated it"
