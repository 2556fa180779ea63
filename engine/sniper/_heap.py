"""The live engine's policy for Python's cyclic garbage collector: long-lived objects
frozen out of its full passes, so that no pass holds the event loop for long.

Why: the collector's full (generation 2) pass walks every tracked object of the process,
about 1 us an object on a small VM, with the event loop held meanwhile. A ``snipe run``
process holds ~72,000 tracked objects once its modules are imported (httpx, pydantic and
its schemas, anyio, trio, sqlite, the rules, the plugins): a full pass over them is a
stall of ~85 ms, where the feed's target is 50 ms (issue 17,
``bench/bench_feed_decode.py``). None of them is garbage: they live as long as the
process. :func:`gc.freeze` moves every object alive into a *permanent* generation that no
pass walks; passes then walk only what was allocated since.

When (:class:`HeapPolicy`, owned by :meth:`Engine.run`):

- **at start-up**, once :meth:`Engine.start` is done (the rules compiled, the plugins and
  references loaded, the ledger open, the start-up gate passed) and before the steps and
  the feed run: a full collection first, so no garbage is frozen, then the freeze;
- **after a successful snapshot poll** (the full audit while the feed is trusted), at
  most once per ``refreeze_every`` seconds (an hour) of the engine's clock: what the
  engine learnt since (the name index of every name seen, reference prices, the item
  ids the feed told) is long-lived too; the collection before the freeze is a pass over
  what is not frozen yet, no longer than the ones the collector runs on its own;
- **at the end** of :meth:`Engine.run`: :func:`gc.unfreeze`, so whatever the process does
  next (a test, another engine) has every object collectable again.

What it can leak: a frozen object is still freed by reference counting the moment
nothing refers to it (most of the engine's state: dicts, tuples, listings); only a
frozen object that becomes garbage *in a reference cycle* is never collected until
:meth:`HeapPolicy.release`. Those are: a ruleset replaced by the operator (its compiled
rules; kilobytes, once per replacement), and transient cycles alive at the instant of a
freeze (a request's coroutine frames, an exception and its traceback), which a freeze
right after a step keeps few; at most once an hour by default. Switched off with
``snipe run --no-gc-freeze`` (:attr:`HeapSettings.freeze`); off in the library's
default :class:`EngineSettings`, because the collector is the whole process's, not the
engine's: the runner (``snipe run``) turns it on.
"""

from __future__ import annotations

import gc
import logging
from dataclasses import dataclass

from .._clock import Clock

__all__ = ["HeapPolicy", "HeapSettings", "freeze_heap"]

log = logging.getLogger("snipe.engine")


@dataclass(frozen=True)
class HeapSettings:
    """The cyclic GC's policy of a live run (see the module docstring)."""

    freeze: bool = False
    """Freeze the start-up heap out of the collector's passes, and again after a
    snapshot poll at most every ``refreeze_every`` seconds."""
    refreeze_every: float = 3600.0


def freeze_heap() -> int:
    """Collect every generation, then freeze what is alive (:func:`gc.freeze`): the
    number of objects frozen now (the permanent generation's size)."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


class HeapPolicy:
    """Applies :class:`HeapSettings` for one run of an engine."""

    def __init__(self, settings: HeapSettings, clock: Clock) -> None:
        self.settings = settings
        self.clock = clock
        self.frozen_at: float | None = None
        self.freezes = 0

    def started(self) -> None:
        """The engine has started: freeze its start-up heap."""
        if self.settings.freeze:
            self._freeze("start-up")

    def polled(self) -> None:
        """A snapshot poll succeeded: freeze again if the last freeze is old enough."""
        if self.frozen_at is None:  # not frozen at start-up (off, or not running live)
            return
        if self.clock.now() - self.frozen_at >= self.settings.refreeze_every:
            self._freeze("after a snapshot poll")

    def release(self) -> None:
        """The run is over: every frozen object is the collector's again."""
        if self.frozen_at is not None:
            gc.unfreeze()
            self.frozen_at = None

    def _freeze(self, when: str) -> None:
        frozen = freeze_heap()
        self.frozen_at = self.clock.now()
        self.freezes += 1
        log.debug("cyclic GC: %d objects frozen out of its passes (%s)", frozen, when)
