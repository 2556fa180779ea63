"""What an item's market name says: its exterior, and a Doppler phase written into it.

The CSV snapshot and some listings write the phase into the name
(``"★ Karambit | Doppler Phase 2 (Factory New)"``) instead of the ``phase`` field. Rules
are written against the base name (``"★ Karambit | Doppler (Factory New)"``) plus a set of
phases, so both forms must reach the same rule with the same phase.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources

from ..models import PHASES

__all__ = [
    "EXTERIORS",
    "NameParts",
    "doppler_phases",
    "known_phases",
    "split_name",
]

EXTERIORS: dict[str, str] = {
    "Factory New": "FN",
    "Minimal Wear": "MW",
    "Field-Tested": "FT",
    "Well-Worn": "WW",
    "Battle-Scarred": "BS",
}
"""Exterior written in a CS2 name -> the code the catalogue filter uses."""

_PHASE_ALTERNATIVES = "|".join(sorted((re.escape(p) for p in PHASES), key=len, reverse=True))
_PHASE_IN_NAME = re.compile(
    rf"^(?P<head>.*\bDoppler) (?P<phase>{_PHASE_ALTERNATIVES})(?P<tail>.*)$"
)
_EXTERIOR_IN_NAME = re.compile(r"\((?P<ext>[A-Za-z -]+)\)\s*$")


@dataclass(frozen=True, slots=True)
class NameParts:
    """A market name taken apart.

    ``base_name`` is the name without a phase written into it (the name itself when there
    was none); ``phase`` is that phase; ``exterior`` is ``FN``/``MW``/``FT``/``WW``/``BS``
    or ``None``.
    """

    name: str
    base_name: str
    phase: str | None
    exterior: str | None


def split_name(name: str) -> NameParts:
    """Take ``name`` apart (see :class:`NameParts`)."""
    base, phase = name, None
    match = _PHASE_IN_NAME.match(name)
    if match is not None:
        base, phase = match["head"] + match["tail"], match["phase"]
    ext_match = _EXTERIOR_IN_NAME.search(name)
    exterior = EXTERIORS.get(ext_match["ext"]) if ext_match else None
    return NameParts(name=name, base_name=base, phase=phase, exterior=exterior)


@cache
def doppler_phases() -> dict[str, frozenset[str]]:
    """Every Doppler and Gamma Doppler base name -> the phases it really comes in.

    From the package data ``engine/data/doppler_phases.json`` (origin and licence in
    ``engine/data/README.md``).
    """
    raw = resources.files("engine").joinpath("data/doppler_phases.json").read_text("utf-8")
    table: dict[str, dict[str, int]] = json.loads(raw)
    return {name: frozenset(phases) for name, phases in table.items()}


def known_phases(name: str) -> frozenset[str] | None:
    """The phases the item called ``name`` comes in: empty for an item known to have none
    (a name that is not a Doppler), ``None`` when the table does not know the Doppler."""
    parts = split_name(name)
    table = doppler_phases()
    if parts.base_name in table:
        return table[parts.base_name]
    if "Doppler" in parts.base_name:
        return None
    return frozenset()
