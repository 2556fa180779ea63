"""Argument types shared by the subcommands, so one kind of value reads the same everywhere
(and the same as in a rules file)."""

from __future__ import annotations

import argparse

from ..rules import parse_duration

__all__ = ["duration", "positive"]


def duration(text: str) -> float:
    """A positive duration: ``"10m"``, ``"1h30m"``, ``"90s"``, ``"2d"`` (the rules file's
    own parser), or a number of seconds (``600``, ``0.5``)."""
    try:
        seconds = float(text)
    except ValueError:
        try:
            seconds = float(parse_duration(text))
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected a duration such as 600, 90s, 10m, 1h30m or 2d, got {text!r}"
            ) from None
    if not seconds > 0:
        raise argparse.ArgumentTypeError(f"expected a positive duration, got {text!r}")
    return seconds


def positive(text: str) -> float:
    """A positive number."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value
