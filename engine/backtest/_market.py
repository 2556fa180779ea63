"""The replay market: the recorded market as of a simulated time, and the fill model.

Sans-I/O: :class:`ReplayMarket` applies recorded records strictly in time order and only
up to the time it is asked for (:meth:`ReplayMarket.advance_to`), so nothing served to the
engine can come from later than the engine's clock. Purchases go through :meth:`buy`:

- the listing must still be listed when the request arrives (the transport moves the
  clock on by the latency first);
- a competing buyer takes it first with probability ``min(race_max, discount x
  race_factor)`` where ``discount`` is how far the price is under the reference price,
  drawn from a generator seeded by ``(seed, item_id)`` (so it does not depend on order);
- a trade-locked purchase is reserved until its recorded ``unlock_at`` and completes
  then, or is refunded when its recorded ``send_until`` comes first.

Listings we bought, or lost to the competitor, stay gone until the recording itself
removes them.

The live feed's records (format version 2) are applied like the others: a ``new`` or
``update`` listing is learned as a search's listing is (so a buy of a listing only the
feed told is answered against it), a removal removes it (not a sale: it may come back).
Each becomes the :class:`~engine.client.FeedEvent` the live client would have yielded,
queued in :attr:`ReplayMarket.feed_events` for the backtest's driver to hand to the
engine; connections are numbered by the replay (``up`` records, a segment ``head`` that
says the feed was up, and ``down``/``resume`` ending one). :meth:`next_feed_at` looks
ahead for the next feed record without applying anything. Events of names no rule
watches are counted, not decoded (the engine would only count them too).

For the report, the market notes which source first showed the engine each listing
(:meth:`sighted`): ``feed``, ``snapshot`` (a served snapshot held it: the way a
snapshot-flagged search starts), ``catalogue`` or ``search``.
"""

from __future__ import annotations

import heapq
import random
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import chain, repeat
from typing import Any

from ..client import FeedConnected, FeedDisconnected, FeedEvent
from ._feedconn import FeedConnections
from ._feedrecord import FeedRecordError, decode_feed, listing_event, removal_event
from ._format import Record, RecordingError, RecordReader, UnwatchedRun, WatchedRecord
from ._ranked import Pending, Prices, Ranked, epoch, find, rank, resort, settle, unsort
from ._snaprows import apply_diff, apply_key
from ._trade import BuyAnswer, FillModel, ReplayTrade

__all__ = ["BuyAnswer", "FillModel", "ReplayMarket", "ReplayTrade"]

Held = tuple[str, int, int | None, int | None]
"""A listing in the replay market: ``(name, price, unlock_at, send_until)``."""

_ALL = 1 << 62
"""A position past any listing: an answer that looked at every listing of its name."""

_FILL = FillModel()

_ABSENT = -1 << 64  # (no price: not one array('q') holds)

_LOWEST, _HIGHEST = -(2**63), 2**63 - 1
"""The prices a name's sorted listings hold (``array('q')``): a price out of them is a
malformed record, refused where it is applied, not when its name is read."""

_LISTING_EVENTS = frozenset({"new", "update", "removed"})

SOURCES = ("feed", "snapshot", "catalogue", "search")
"""Where the engine may first see a listing (:meth:`ReplayMarket.sighted`); at one
instant, the first in this order counts."""


@dataclass
class _Counters:
    events: int = 0
    records: int = 0
    refusals: dict[str, int] = field(default_factory=dict)
    unseen_candidates: int = 0
    unseen_by_name: dict[str, int] = field(default_factory=dict)


class ReplayMarket:
    """The recorded market at a simulated time. See the module docstring."""

    def __init__(
        self,
        records: Iterator[Record],
        *,
        fill: FillModel = _FILL,
        keep: Callable[[str], bool] | None = None,
        ceiling: Callable[[str], int | None] | None = None,
        balance: int = 1_000_000,
        value_after: float = 86_400.0,
        taken: frozenset[str] = frozenset(),
    ) -> None:
        self._reader = records if isinstance(records, RecordReader) else None
        if self._reader is not None:
            # feed events of names not kept are read unbuilt, their times only: counted
            self._reader.watched = self.kept
        self._records = iter(records)  # a RecordReader's generator: no call of its own
        # read but not yet applied (a look-ahead for the next feed record); the times of
        # the feed records among them, in order
        self._pending: deque[Record] = deque()
        self._pending_feed: deque[Record] = deque()
        self._read_all = False
        self.taken = taken
        """Listings another buyer took first, as a live run found (``--against``): the
        replay loses them too, in place of the competitor model's draw."""
        self.fill = fill
        self._keep_fn = keep
        self._keep: dict[str, bool] = {}
        self._ceiling = ceiling or (lambda name: None)
        self._names: dict[str, tuple[bool, int | None]] = {}
        self.listings: dict[str, Held] = {}
        """item_id -> (name, price, unlock_at, send_until); tuples, not lists: the garbage
        collector stops tracking them, which keeps a 100,000-listing replay fast."""
        self.by_name: dict[str, Ranked] = {}
        """name -> ``(price, item_id)`` of its listings, sorted: kept sorted as they change
        (a bisect each), so a search answer is its first 50, not a sort of the whole name
        (re-sorting every searched name was a fifth of a backtest's time, issue 20). A
        name no answer looked at since its last change may lag (its changes pending in
        :attr:`_stale`): read it by :meth:`ranked`."""
        self._prices: dict[str, Prices] = {}
        """name -> the prices of :attr:`by_name`'s listings, in its order: where a place is
        looked for (engine/backtest/_ranked.py)."""
        self.name_versions: dict[str, int] = {}
        """name -> a number that changes whenever what a search of it shows may change
        (a listing, its details, the name's reference): answers are kept while it holds.
        A change past the listings the last answers looked at (most of a big name's) does
        not count (:meth:`_changed`)."""
        self._reach: dict[str, int] = {}
        self._stale: dict[str, Pending] = {}
        """name -> its changes not yet in :attr:`by_name`: only a name not in
        :attr:`_reach` has any (engine/backtest/_ranked.py)."""
        self.journal: dict[str, bool | None] | None = None
        """Item ids whose listing changed (added, repriced, removed) since the journal was
        last drained; kept only once :meth:`keep_journal` is called (the transport's
        snapshot changes). True: first listed since then, so no served snapshot holds it;
        its removal takes it out again (a feed replay may serve no snapshot for hours:
        the journal stays within the listings, ~24,000 in the feed hour, not 143,000)."""
        self._order: dict[str, int] = {}
        self._serial = 0
        self.details: dict[str, dict[str, Any]] = {}
        self.references: dict[str, int] = {}
        self._gone: set[str] = set()
        self._candidates: set[str] = set()
        self.candidate_marks: dict[str, int] = {}
        """name -> :attr:`search_epoch` when a listing of it last became a candidate: a
        search's part of a name made before then may show a candidate again, one made
        after cannot (every one it showed was seen)."""
        self.search_epoch = 0
        """How many searches :meth:`saw_all` has been told of."""
        self.trades: dict[str, ReplayTrade] = {}
        self._trade_ids = 0
        self.initial_balance = balance
        self.value_after = value_after
        self.snapshot_version = 0
        self.applied_until = float("-inf")
        """The time of the latest record applied: never later than the clock."""
        self.counters = _Counters()
        self._marks: list[tuple[float, int, str, Callable[[int | None, bool], None]]] = []
        self._mark_order = 0
        self.feed_events: deque[FeedEvent] = deque()
        """Feed events applied and not yet taken by the driver, oldest first."""
        self.feed_records = 0
        self._connections = FeedConnections(self.feed_events)
        self.sightings: dict[str, tuple[float, str]] = {}
        """item_id -> (time, source) the engine was first shown the listing."""
        self._unsnapshotted: dict[str, None] = {}
        """Candidate listings no served snapshot has shown yet."""

    # -- time ----------------------------------------------------------------------------

    def _read_one(self) -> bool:
        if self._read_all:
            return False
        record = next(self._records, None)
        if record is None:
            self._read_all = True
            return False
        self._pending.append(record)
        if type(record) is WatchedRecord:  # (the reader asked kept: a listing or removal)
            self._pending_feed.append(record)
        elif record.k == "feed":
            # An unwatched event (most of the feed) is the one feed record not queued
            # here: advance_to tells it by that, and only counts it. A listing or removal
            # of a name no rule watches: the market holds none of its listings and the
            # engine ignores it (it only counts it), so it is applied without being
            # decoded (like a search's entries of such names), and never stops the clock.
            body = record.body
            if isinstance(body, UnwatchedRun):  # the reader skipped events (RecordReader)
                return True
            ev = body.get("ev")
            if ev in _LISTING_EVENTS:
                item = body.get("item")
                name = item.get("name") if isinstance(item, dict) else None
                if isinstance(name, str):
                    keep = self._keep.get(name)
                    if not (self.kept(name) if keep is None else keep):
                        return True
            self._pending_feed.append(record)
            if ev == "up" or ev == "down":  # (the others leave the connection as it is)
                self._connections.read_event(ev)
        elif (record.k == "head" or record.k == "resume") and self._connections.changes(record):
            self._pending_feed.append(record)
        return True

    def _peek(self) -> Record | None:
        if not self._pending and not self._read_one():
            return None
        return self._pending[0]

    @property
    def first_time(self) -> float | None:
        """The time of the next record not yet applied (the first, before any)."""
        record = self._peek()
        return record.t if record is not None else None

    @property
    def exhausted(self) -> bool:
        return self._peek() is None and not (self._reader and self._reader.untaken)

    def next_feed_at(self, limit: float) -> float | None:
        """The time of the next feed record not yet applied, if it is at or before
        ``limit``; nothing is applied (records are read ahead up to ``limit``)."""
        pending, pending_feed = self._pending, self._pending_feed  # (once per feed record)
        while not pending_feed and (not pending or pending[-1].t <= limit):
            if not self._read_one():
                break
        if pending_feed:
            at = pending_feed[0].t
            if at <= limit:
                return at
        return None

    def advance_to(self, when: float, *, settle: bool = True) -> None:
        """Apply every record (and resolve every price mark) due at or before ``when``.

        ``settle=False``: the events a RecordReader skipped are not taken on the way out
        (only before a mark), so :attr:`applied_until` and the counters may lag behind
        until the next call that settles (the backtest's driver between feed events:
        nothing reads them until a step's advance settles)."""
        # Hot (once per feed record): locals; the unwatched counted here and added once,
        # on the way out. The events a RecordReader skipped (names not kept) are taken by
        # time, before each mark and on the way out: every one at or before the bound has
        # been read by then (the record read after it is later than the bound).
        pending, pending_feed, marks = self._pending, self._pending_feed, self._marks
        read_one, unwatched, applied = self._read_one, 0, self.applied_until
        reader = self._reader
        try:
            while True:
                if pending or read_one():
                    record = pending[0]
                    t = record.t
                    if t <= when and (not marks or t <= marks[0][0]):
                        pending.popleft()
                        if pending_feed and pending_feed[0] is record:
                            pending_feed.popleft()
                            applied = t
                            self._apply(record)
                        elif record.k == "feed":  # unwatched (see _read_one): counted only
                            if not isinstance(record.body, UnwatchedRun):
                                applied = t
                                unwatched += 1
                        else:
                            applied = t
                            self._apply(record)
                        continue
                mark_due = bool(marks) and marks[0][0] <= when
                if reader is not None and (settle or mark_due):
                    count, last = reader.take_skipped(marks[0][0] if mark_due else when)
                    if count:
                        unwatched += count
                        applied = max(applied, last)
                if mark_due:
                    self.applied_until = applied  # (a mark's call may read it)
                    _, _, name, done = heapq.heappop(marks)
                    done(self.cheapest(name), False)
                    continue
                return
        finally:
            self.applied_until = applied
            if unwatched:
                counters = self.counters
                counters.records += unwatched
                counters.events += unwatched
                self.feed_records += unwatched

    def finish(self) -> None:
        """Resolve the price marks still pending with the last state (flagged as such)."""
        while self._marks:
            _, _, name, done = heapq.heappop(self._marks)
            done(self.cheapest(name), True)

    def mark(self, name: str, at: float, done: Callable[[int | None, bool], None]) -> None:
        """Call ``done(cheapest price of name at that time, past_end)`` once replay reaches
        ``at`` (for the report's later market value; never seen by the engine)."""
        self._mark_order += 1
        heapq.heappush(self._marks, (at, self._mark_order, name, done))

    # -- what the engine may see -----------------------------------------------------------

    def kept(self, name: str) -> bool:
        keep = self._keep.get(name)
        if keep is None:
            keep = self._keep[name] = self._keep_fn is None or self._keep_fn(name)
        return keep

    def cheapest(self, name: str) -> int | None:
        ranked = self.ranked(name)
        return ranked[0][0] if ranked else None

    def ranked(self, name: str) -> Ranked | None:
        """``name``'s listings as ``(price, item_id)``, sorted (None: it has none)."""
        pending = self._stale.pop(name, None)
        if pending is None:
            return self.by_name.get(name)
        return settle(self.by_name, self._prices, pending, self.listings, name)

    def all_ranked(self) -> dict[str, Ranked]:
        """Every name's :meth:`ranked` (:attr:`by_name`, every name brought up to date)."""
        for name in list(self._stale):
            self.ranked(name)
        return self.by_name

    def listings_of(
        self, name: str, *, include_hold: bool, now: float
    ) -> tuple[list[tuple[str, Held]], float]:
        """Up to 50 listings of ``name``, cheapest first (ties by item_id), and until when
        that stays the answer unless the name changes (:attr:`name_versions`): the first
        ``unlock_at`` after ``now`` among the listings looked at (a lock that ends changes
        a listing's entry, or lets a held-back one in)."""
        ranked = self.ranked(name)
        if not ranked:
            return [], float("inf")
        listings = self.listings
        until = float("inf")
        out: list[tuple[str, Held]] = []
        if include_hold:
            for _, item_id in ranked[:50]:
                row = listings[item_id]
                out.append((item_id, row))
                if row[2] is not None and now < row[2] < until:
                    until = row[2]
            self._looked(name, 49 if len(out) == 50 else _ALL)
            return out, until
        looked = _ALL  # every listing, unless 50 are found before the end
        for at, (_, item_id) in enumerate(ranked):
            row = listings[item_id]
            if row[2] is not None and row[2] > now:
                until = min(until, row[2])
                continue
            out.append((item_id, row))
            if len(out) == 50:
                looked = at
                break
        self._looked(name, looked)
        return out, until

    def shown(self, name: str, count: int) -> None:
        """An answer showed ``name``'s first ``count`` listings, locked or not (at most
        50: as :meth:`listings_of` with ``include_hold``)."""
        self._looked(name, 49 if count == 50 else _ALL)

    def _looked(self, name: str, at: int) -> None:
        """An answer looked at ``name``'s listings up to position ``at`` (as :meth:`ranked`
        gives them: a name in :attr:`_reach` has no changes pending)."""
        if name in self._stale:  # (answers read it by ranked() first; a caller that did
            # not would leave a name in _reach with changes pending: its bisects would lie)
            self.ranked(name)
        reach = self._reach.get(name)
        self._reach[name] = at if reach is None else max(reach, at)

    def _changed(self, name: str, at: int) -> None:
        """``name``'s sorted listings changed from position ``at`` on (-1: its reference
        or more): a new version unless every answer since the last one looked only at
        listings before ``at`` (a change after them shows in none)."""
        reach = self._reach.get(name)
        if reach is None or at <= reach:
            self.name_versions[name] = self.name_versions.get(name, 0) + 1
            if reach is not None:
                del self._reach[name]

    def _defer(self, name: str, item_id: str, old: int | None, price: int | None) -> None:
        """A listing of ``name``, not in :attr:`_reach`, changed: its place is found when
        the name is read (:meth:`ranked`); ``old``, its price in :attr:`by_name` (None:
        not there), ``price`` its new one (None: removed). A new version, as
        :meth:`_changed` would make."""
        if price is not None and not _LOWEST <= price <= _HIGHEST:  # (as the array refuses)
            raise OverflowError(
                f"signed integer is {'greater than maximum' if price > 0 else 'less than minimum'}"
            )
        pending = self._stale.get(name)
        if pending is None:
            self._stale[name] = {item_id: old}
        else:
            was = pending.get(item_id, _ABSENT)
            if was is _ABSENT:
                pending[item_id] = old
            elif was is None and price is None:  # (added since, gone again: nothing to do)
                del pending[item_id]
        versions = self.name_versions
        versions[name] = versions.get(name, 0) + 1

    def keep_journal(self) -> None:
        """Start noting in :attr:`journal` the item ids whose listing changes, and each
        listing's place in :attr:`listings` (:meth:`in_order`)."""
        if self.journal is None:
            self.journal = {}
            for item_id in self.listings:
                self._order[item_id] = self._serial
                self._serial += 1

    def drain_journal(self) -> list[str]:
        """The item ids noted since the last drain (see :attr:`journal`)."""
        if not self.journal:
            return []
        ids = list(self.journal)
        self.journal.clear()
        return ids

    def in_order(self, item_ids: list[str]) -> list[str]:
        """``item_ids`` in the order of :attr:`listings` (a re-listed id is last, as in
        the dict; ids no longer listed after the others), without walking the market."""
        last = self._serial
        return sorted(item_ids, key=lambda item_id: self._order.get(item_id, last))

    def saw(self, item_id: str, source: str = "search", now: float = 0.0) -> None:
        """A search or catalogue page (``source``) showed the engine this listing at
        ``now``: it is no longer an unseen candidate."""
        self._candidates.discard(item_id)
        self.sighted(item_id, source, now)

    def saw_all(
        self, shown: list[list[str]], source: str, now: float, unsighted: list[str] | None = None
    ) -> None:
        """:meth:`saw` for the listings of the lists ``shown`` (a search answer's parts),
        in C-level passes (a search answer shows ~2,000). ``unsighted``: the ones among
        them that may not have been sighted yet (sightings are never forgotten: a
        search's listings shown before need no second look in the large dict)."""
        self.search_epoch += 1
        if self._candidates:
            self._candidates.difference_update(*shown)
        first = chain.from_iterable(shown) if unsighted is None else unsighted
        deque(map(self.sightings.setdefault, first, repeat((now, source))), maxlen=0)

    def sighted(self, item_id: str, source: str, now: float) -> None:
        """``source`` (one of :data:`SOURCES`) showed the engine ``item_id`` at ``now``;
        only the first sighting is kept."""
        if item_id not in self.sightings:
            self.sightings[item_id] = (now, source)

    def snapshot_served(self, now: float, *, include_hold: bool) -> None:
        """A snapshot was served at ``now``: the candidates in it are sighted."""
        if include_hold:  # every one still listed, in C-level passes (as sighted does)
            listed = filter(self.listings.__contains__, self._unsnapshotted)
            deque(map(self.sightings.setdefault, listed, repeat((now, "snapshot"))), maxlen=0)
            self._unsnapshotted = {}
            return
        keep: dict[str, None] = {}
        for item_id in self._unsnapshotted:
            row = self.listings.get(item_id)
            if row is None:
                continue
            if not include_hold and row[2] is not None and row[2] > now:
                keep[item_id] = None
                continue
            self.sighted(item_id, "snapshot", now)
        self._unsnapshotted = keep

    @property
    def feed_up(self) -> bool:
        """Whether the feed is up as the records applied so far leave it."""
        return self._connections.up

    def take_feed(self) -> list[FeedEvent]:
        """The feed events applied so far and not taken yet, oldest first."""
        events = list(self.feed_events)
        self.feed_events.clear()
        return events

    def reference(self, item_id: str, name: str) -> int | None:
        detail = self.details.get(item_id)
        if detail is not None:
            value = detail.get("platform_price", detail.get("platform_price_number"))
            if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
                return int(value)
        return self.references.get(name)

    # -- purchases -------------------------------------------------------------------------

    def balance(self, now: float) -> int:
        spent = sum(t.price for t in self.trades.values() if t.status(now)[0] != 6)
        return self.initial_balance - spent

    def buy(
        self, item_id: str, ceiling: int, *, allow_locked: bool, project_id: str | None, now: float
    ) -> BuyAnswer:
        """One purchase arriving at ``now`` (the latency already added by the caller)."""
        row = self.listings.get(item_id)
        if row is None:
            return self._refuse("gone", "Item sold")
        name, price, unlock_at, send_until = row
        if unlock_at is not None and unlock_at > now and not allow_locked:
            msg = "Item is trade-locked: pass allow_trade_locked=1 to buy it"
            return self._refuse("trade-locked", msg)
        if price > ceiling:
            return self._refuse("price changed", "Price changed", new_price=price)
        if price > self.balance(now):
            return self._refuse("balance", "Not enough money")
        reference = self.reference(item_id, name)
        if item_id in self.taken or self._competitor_wins(item_id, price, reference):
            self._remove(item_id, gone=True)
            return self._refuse("lost race", "Item sold")
        self._remove(item_id, gone=True)
        self._trade_ids += 1
        locked = unlock_at is not None and unlock_at > now
        trade = ReplayTrade(
            id=self._trade_ids,
            project_id=project_id,
            item_id=item_id,
            name=name,
            price=price,
            created=now,
            unlock_at=unlock_at if locked else None,
            send_until=send_until if locked else None,
            reference=reference,
        )
        self.trades[project_id or f"#{trade.id}"] = trade
        self.mark(name, now + self.value_after, lambda price, past: _later(trade, price, past))
        return BuyAnswer(trade=trade)

    def _refuse(self, why: str, msg: str, *, new_price: int | None = None) -> BuyAnswer:
        refusals = self.counters.refusals
        refusals[why] = refusals.get(why, 0) + 1
        return BuyAnswer(msg=msg, new_price=new_price, why=why)

    def _competitor_wins(self, item_id: str, price: int, reference: int | None) -> bool:
        if not reference or price >= reference:
            return False
        discount = 1.0 - price / reference
        chance = min(self.fill.race_max, discount * self.fill.race_factor)
        return random.Random(f"{self.fill.seed}:{item_id}").random() < chance

    # -- applying records ------------------------------------------------------------------

    def _apply(self, record: Record) -> None:
        self.counters.records += 1
        kind = record.k
        body = record.body
        try:
            if kind == "feed":
                # Hot (a watched listing or removal: once per such event): decode_feed's
                # two ways, taken here, with the item looked up once.
                self.feed_records += 1
                ev = body.get("ev")
                event: FeedEvent
                if ev == "new" or ev == "update":
                    item: Any = body.get("item")  # (an object once listing_event took it)
                    event = listing_event(ev, item, record.t, self._connections.generation)
                    self._apply_entry(item)
                elif ev == "removed":
                    item = body.get("item")
                    event = removal_event(item, record.t, self._connections.generation)
                    self._remove(event.removal.item_id, gone=False)
                else:
                    self._apply_connection(record)
                    return
                self.counters.events += 1
                self.feed_events.append(event)
            elif kind == "head" or kind == "resume":
                self._connections.apply_marker(record)
            elif kind == "diff":
                apply_diff(self, body)
                self.snapshot_version += 1
            elif kind == "key":
                apply_key(self, body["rows"])
                self.snapshot_version += 1
            elif kind == "search":
                for entries in body["items"].values():
                    self._apply_entries(entries)
            elif kind == "cat":
                self._apply_entries(body["items"])
        except RecordingError:
            raise
        except FeedRecordError as exc:
            raise RecordingError(
                f"malformed {kind!r} record: {exc}", location=record.where
            ) from None
        except (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError) as exc:
            raise RecordingError(
                f"malformed {kind!r} record: {type(exc).__name__}: {exc}", location=record.where
            ) from None

    def _apply_connection(self, record: Record) -> None:
        """A feed record that is not a listing or removal: ``up`` or ``down`` (an unwatched
        event is only counted, by :meth:`advance_to`; a watched one is applied by
        :meth:`_apply`)."""
        connections = self._connections
        event = decode_feed(record.body, record.t, generation=connections.generation)
        if isinstance(event, FeedConnected):
            connections.connect(record.t, record.body)
        elif isinstance(event, FeedDisconnected):
            connections.disconnect(event.reason, event.detail, record.t)

    def _about(self, name: str) -> tuple[bool, int | None]:
        """Whether ``name`` is kept, and its rules' highest max_price (cached)."""
        known = self._names[name] = (self.kept(name), self._ceiling(name))
        return known

    def _maybe_candidate(self, item_id: str, name: str, price: int) -> None:
        known = self._names.get(name) or self._about(name)
        limit = known[1]
        if limit is not None and price <= limit:
            self._candidate(item_id, name)

    def _candidate(self, item_id: str, name: str) -> None:
        """A listing of ``name`` some rule could buy: unseen until a search or a snapshot
        shows it (engine/backtest/_snaprows.py and :meth:`_apply_entry` do the same inline)."""
        self._candidates.add(item_id)
        self._unsnapshotted[item_id] = None
        self.candidate_marks[name] = self.search_epoch

    def _apply_entries(self, entries: list[dict[str, Any]]) -> None:
        apply = self._apply_entry
        for entry in entries:
            apply(entry)
        self.counters.events += len(entries)

    def _apply_entry(self, entry: dict[str, Any]) -> None:
        """One listing as a search, a page or the feed shows it (its wire entry): learned,
        or moved to its new place and its details changed (one change, from the first
        place that moved). Hot (once per watched feed event): ``add_rows``'s work for
        one row, without building columns, and locals."""
        name = entry["name"]
        known = self._names.get(name)  # (kept, as kept() says, and the rules' ceiling)
        if known is None:
            if not self.kept(name):
                return
        elif not known[0]:
            return
        item_id = entry["item_id"]
        if type(item_id) is not str:
            item_id = str(item_id)
        price = entry["price"]
        if type(price) is not int:
            price = int(price)
        self.details[item_id] = entry
        reference = entry.get("platform_price")
        if reference is None and "platform_price" not in entry:
            reference = entry.get("platform_price_number")
        if reference and isinstance(reference, int | float):
            reference = int(reference)
            if self.references.get(name) != reference:
                self._changed(name, -1)
                self.references[name] = reference
        unlock_at, send_until = entry.get("unlock_at"), entry.get("send_until")
        if unlock_at is not None:
            unlock_at = epoch(unlock_at)
        if send_until is not None:
            send_until = epoch(send_until)
        if type(name) is not str:
            raise ValueError(f"listing {item_id!r}: bad id, name or price")
        if known is None:
            known = self._about(name)
        listings = self.listings
        row = listings.get(item_id)
        if item_id in self._gone:
            if row is not None:  # (never: a gone or unkept listing is not held)
                name = row[0]
                ranked = self.ranked(name) or []
                self._changed(name, find(ranked, self._prices[name], row[1], item_id))
            return
        journal = self.journal
        if row is None:
            listings[item_id] = (name, price, unlock_at, send_until)
            if journal is not None:
                journal.setdefault(item_id, True)  # (new since the last drain)
                self._order[item_id] = self._serial
                self._serial += 1
            if name in self._reach or name not in self.by_name:
                self._changed(name, rank(self.by_name, self._prices, name, price, item_id))
            else:
                self._defer(name, item_id, None, price)
        else:
            name = row[0]
            listings[item_id] = (name, price, row[2], row[3])
            if price != row[1]:
                if journal is not None:
                    journal.setdefault(item_id, None)
                if name in self._reach:
                    self._changed(
                        name, resort(self.by_name[name], self._prices[name], row[1], price, item_id)
                    )
                else:
                    self._defer(name, item_id, row[1], price)
            elif name in self._reach:  # its details are new: changed from its place on
                self._changed(name, find(self.by_name[name], self._prices[name], price, item_id))
            else:  # (_changed without its call: no answer looked since the last change)
                versions = self.name_versions
                versions[name] = versions.get(name, 0) + 1
        limit = known[1]
        if limit is not None and price <= limit:  # a candidate (_candidate inline)
            self._candidates.add(item_id)
            self._unsnapshotted[item_id] = None
            self.candidate_marks[name] = self.search_epoch

    def _remove(self, item_id: str, *, gone: bool) -> None:
        row = self.listings.pop(item_id, None)
        self.details.pop(item_id, None)
        if row is not None:
            name = row[0]
            if name in self._reach:
                self._changed(name, unsort(self.by_name, self._prices, name, row[1], item_id))
            else:
                self._defer(name, item_id, row[1], None)
            journal = self.journal
            if journal is not None:
                if journal.get(item_id) is True:  # (no served answer held it)
                    del journal[item_id]
                else:
                    journal[item_id] = None
                del self._order[item_id]
            candidates = self._candidates
            if item_id in candidates:
                candidates.discard(item_id)
                if not gone:
                    counters = self.counters
                    counters.unseen_candidates += 1
                    by_name = counters.unseen_by_name
                    by_name[name] = by_name.get(name, 0) + 1
        else:
            self._candidates.discard(item_id)
        if gone:
            self._gone.add(item_id)


def _later(trade: ReplayTrade, price: int | None, past_end: bool) -> None:
    trade.later_price = price
    trade.later_past_end = past_end
