"""The base of every model of the rules file, in a module of its own so that the file's
sections (``_schema.py``, the ``prices:`` section in ``_prices.py``) and the criteria plugins
can all build on it without importing each other."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["StrictModel"]


class StrictModel(BaseModel):
    """Base of every model of the rules file: unknown keys are errors, values immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)
