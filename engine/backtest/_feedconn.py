"""The replay market's feed connections (engine/backtest/_market.py): how the records
read so far leave the feed (up or down: a ``head`` or ``resume`` that changes it stops
the backtest's clock like a feed record), and the :class:`~engine.client.FeedConnected`
and :class:`~engine.client.FeedDisconnected` events the applied records make, numbered
by the replay itself (a restarted recorder counts from 1 again)."""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from typing import Any

from ..client import FeedDisconnected, FeedEvent
from ._feedrecord import FeedRecordError, connected_from
from ._format import Record

__all__ = ["FeedConnections"]


class FeedConnections:
    """See the module docstring. ``events``: where the connection events go (the
    market's queue of feed events for the driver)."""

    def __init__(self, events: deque[FeedEvent]) -> None:
        self.events = events
        self.up = False
        """Whether the feed is up as the records applied leave it."""
        self.generation = 0
        """The replay's number of the latest connection (0: none yet)."""
        self._segment_state: dict[str, Any] | None = None
        # as the records read so far (ahead of the ones applied) leave it
        self._read_up = False
        self._read_segment_up = False

    def read_event(self, ev: Any) -> None:
        """A watched feed record was read (``ev``: its kind)."""
        self._read_up = True if ev == "up" else False if ev == "down" else self._read_up

    def changes(self, record: Record) -> bool:
        """Whether a ``head`` or ``resume`` read now ends or starts a connection (the same
        rules as :meth:`apply_marker`, on the state as read)."""
        was = self._read_up
        if record.k == "head":
            if "feed" not in record.body:  # version 1: the feed is not recorded
                return False
            self._read_segment_up = record.body["feed"] is not None
            self._read_up = self._read_segment_up
            return self._read_up != was
        # resume: what was up ended; up again when the segment began with it up
        self._read_up = self._read_segment_up
        return was or self._read_up

    def apply_marker(self, record: Record) -> None:
        """A segment's ``head`` says whether the feed was up then (version 2); ``resume``:
        the recorder stopped, so did its feed; the new one's state is the head's."""
        if record.k == "head":
            state = record.body.get("feed")
            if state is not None and not isinstance(state, dict):
                raise FeedRecordError("field feed: not the feed's state (an object or null)")
            self._segment_state = state
            if state is None:
                if self.up and "feed" in record.body:
                    self.disconnect("closed", "the segment starts with the feed down", record.t)
                return
        elif self.up:
            self.disconnect("closed", "the recorder restarted", record.t)
        if self._segment_state is not None and not self.up:
            self.connect(record.t, self._segment_state)

    def connect(self, t: float, state: Mapping[str, Any]) -> None:
        if self.up:  # an up without a down: the old connection ended unseen
            self.disconnect("closed", "a new connection", t)
        self.generation += 1
        self.up = True
        self.events.append(connected_from(state, t, generation=self.generation))

    def disconnect(self, reason: str, detail: str, t: float) -> None:
        if self.up:
            self.up = False
            self.events.append(FeedDisconnected(self.generation, t, reason, detail))
