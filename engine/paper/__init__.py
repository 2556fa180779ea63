"""Paper trading: ``snipe run --paper`` runs the real engine against the real market, with
its own ledger file and a simulated wallet, and never sends a purchase. Each would-be
purchase is judged honestly by what the engine sees next (:func:`judge`): it counts only
if the listing was still there, at that price, when the request would have arrived.
The paper ledger is an ordinary ledger (marked paper), so ``snipe portfolio`` values it
with the same code as a real one."""

from __future__ import annotations

import os
from pathlib import Path

from ._desk import (
    MODE_KEY,
    SNAPSHOT_AGE,
    START_KEY,
    PaperDesk,
    PaperSettings,
    PaperView,
    claim_paper_ledger,
    proves_gone,
    refuse_paper_ledger,
)
from ._judge import Judged, Pending, Sighting, Verdict, judge

__all__ = [
    "MODE_KEY",
    "SNAPSHOT_AGE",
    "START_KEY",
    "Judged",
    "PaperDesk",
    "PaperSettings",
    "PaperView",
    "Pending",
    "Sighting",
    "Verdict",
    "claim_paper_ledger",
    "judge",
    "paper_path_for",
    "proves_gone",
    "refuse_paper_ledger",
]


def paper_path_for(ledger: str | os.PathLike[str]) -> Path:
    """The paper ledger beside the real ledger ``ledger``: ``.paper`` before its suffix
    (``snipe.sqlite`` -> ``snipe.paper.sqlite``; ``ledger`` -> ``ledger.paper``)."""
    path = Path(ledger)
    if path.suffix:
        return path.with_name(f"{path.stem}.paper{path.suffix}")
    return path.with_name(f"{path.name}.paper")
