"""Objects of a frozen slots dataclass made without its ``__init__``, for hot paths.

A frozen dataclass's ``__init__`` sets each field through ``object.__setattr__`` by name
(it must get past the class's own ``__setattr__``, which refuses): about twice the cost
of calling each slot's own setter. :func:`slots_maker` generates the function that does
the latter: the same type, equal to what the constructor makes, as immutable (only the
slots' setters, never the instance's ``__setattr__``, fill each slot, once, before anyone
holds the object). Used where one is made per feed event: the engine's ``EvalContext``
(engine/rules/_contract.py) and a replay's feed event objects
(engine/backtest/_feedrecord.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from typing import Any, TypeVar

__all__ = ["slots_maker"]

_T = TypeVar("_T")


def slots_maker(cls: type[_T], names: tuple[str, ...]) -> Callable[..., _T]:
    """``make(*values)``: a ``cls`` whose fields, ``names`` in order, hold ``values``.

    ``names`` are what the callers pass, checked against the class's fields: a field
    added, renamed or moved, or a ``__post_init__``, fails here, at import, not in a
    replay. The function is generated as source from those names (field names are
    identifiers: nothing else enters it)."""
    if tuple(f.name for f in fields(cls)) != names:  # type: ignore[arg-type]
        raise TypeError(f"{cls.__name__}'s fields are not {names}")
    if hasattr(cls, "__post_init__"):
        raise TypeError(f"{cls.__name__} has a __post_init__: use its constructor")
    namespace: dict[str, Any] = {"_new": object.__new__, "_cls": cls}
    lines = [f"def make({', '.join(names)}):", "    made = _new(_cls)"]
    for i, name in enumerate(names):
        namespace[f"_set_{i}"] = getattr(cls, name).__set__  # the slot's own setter
        lines.append(f"    _set_{i}(made, {name})")
    lines.append("    return made")
    exec("\n".join(lines) + "\n", namespace)
    made: Callable[..., _T] = namespace["make"]
    return made
