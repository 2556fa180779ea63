"""A living market, deterministic for a seed and a clock. Sans-I/O.

Listings arrive, get repriced and leave (other buyers, delistings) on a schedule drawn from
a seeded ``random.Random``. Nothing runs in the background: :meth:`Market.advance_to` plays
every event up to a time, so the market at market time ``t`` is the same whether it was
asked once at ``t`` or a thousand times on the way. The schedule is drawn when a listing is
created, never when a request arrives, so requests cannot change what the market does
(except by buying: a bought listing's later events are skipped).

Every change a buyer could see (a listing appears, its price changes, it leaves) is also
written to :attr:`Market.changes`, a bounded log that readers follow with their own
cursor: the live listing feed is read from it. Writing it draws nothing from the seeded
source, so the market is the same with or without anyone reading.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import random
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Literal

from ._catalogue import CatalogueItem, build_catalogue, phase_multiplier, sticker_kinds

__all__ = [
    "Change",
    "ChangeKind",
    "ChangeLog",
    "Listing",
    "Market",
    "MarketConfig",
    "PlacedSticker",
    "phased_name",
]

_RARE_PHASES = frozenset({"Ruby", "Sapphire", "Black Pearl", "Emerald"})
_STICKER_COUNT_WEIGHTS = (50, 20, 12, 8, 5, 5)  # 0..5 stickers


@dataclass(frozen=True, slots=True)
class MarketConfig:
    """How big and how lively the market is. Times are market seconds."""

    size: int = 3000
    games: tuple[str, ...] = ("csgo", "dota2", "rust", "tf2")
    deal_share: float = 0.06
    hold_share: float = 0.15
    reprice_share: float = 0.35
    mean_lifetime: float = 3 * 3600.0
    deal_mean_lifetime: float = 600.0
    hold_send_window: float = 12 * 3600.0
    featured: tuple[str, ...] = ()
    """Names that make up ``featured_share`` of all listings (``snipe demo`` features the
    names its rules watch, so a short demo sees their deals)."""
    featured_share: float = 0.3
    churn_per_second: float = 0.0
    """Feed traffic on top of the listings above, as the live market makes it: this many
    changes a second on average (``new``, ``update``, ``removed`` in turn) of short-lived
    ordinary listings (never deals), bursts included. The live feed carries about 430 a
    second over every game; the default market (3,000 listings) makes well under one, so
    0 (none) is the default. Drawn from a source of its own: the rest of the market is
    the same with or without it."""
    churn_lifetime: float = 20.0
    """Seconds a churn listing stays on average (its pool is the rate / 3 times this)."""
    burst_every: float = 0.0
    """Seconds between the starts of two bursts of churn (0: no bursts)."""
    burst_seconds: float = 2.0
    burst_per_second: float = 2800.0
    """The churn's rate during a burst; between bursts it is lower, so that the mean is
    ``churn_per_second``."""

    def __post_init__(self) -> None:
        if self.churn_per_second < 0 or self.churn_lifetime <= 0:
            raise ValueError("churn_per_second must be >= 0 and churn_lifetime > 0")
        if self.burst_every and not (
            0 < self.burst_seconds < self.burst_every
            and self.burst_per_second * self.burst_seconds
            <= self.churn_per_second * self.burst_every
        ):
            raise ValueError(
                "bursts must be shorter than their period and carry at most the churn's "
                "whole mean rate"
            )
        if self.size < 0:
            raise ValueError("market size must be >= 0")
        if not 0.0 <= self.featured_share < 1.0:
            raise ValueError(f"featured_share must be within 0..1, got {self.featured_share}")
        for share in (self.deal_share, self.hold_share, self.reprice_share):
            if not 0.0 <= share <= 1.0:
                raise ValueError(f"shares must be within 0..1, got {share}")


@dataclass(frozen=True, slots=True)
class PlacedSticker:
    name: str
    image: str
    wear: float | None
    slot: int
    price: int


@dataclass(slots=True, eq=False)
class Listing:
    """An item for sale. ``unlock_at``/``send_until`` are set on trade-locked listings; the
    lock is over once market time passes ``unlock_at``."""

    item_id: int
    item: CatalogueItem
    price: int
    listed_at: float
    phase: str | None
    float_value: float | None
    stickers: tuple[PlacedSticker, ...]
    unlock_at: float | None
    send_until: float | None
    paintseed: int
    initial_price: int
    edits: list[tuple[float, int]] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.item.name

    @property
    def game(self) -> str:
        return self.item.game

    @property
    def platform_price(self) -> int:
        return round(self.item.reference * phase_multiplier(self.phase))

    @property
    def snapshot_name(self) -> str:
        """The name with the phase written in, as the CSV snapshot does
        (``★ Karambit | Doppler Phase 2 (Factory New)``)."""
        return phased_name(self.name, self.phase) if self.phase else self.name

    def locked(self, now: float) -> bool:
        return self.unlock_at is not None and self.unlock_at > now

    def price_at(self, when: float) -> int:
        """The asking price at market time ``when`` (the cursor sorts by it)."""
        price = self.initial_price
        for at, new_price in self.edits:
            if at > when:
                break
            price = new_price
        return price


_ARRIVE, _LEAVE, _REPRICE, _RELIST, _CHURN = 0, 1, 2, 3, 4

ChangeKind = Literal["new", "update", "removed"]
_CHURN_KINDS: tuple[ChangeKind, ...] = ("new", "update", "removed")


@dataclass(frozen=True, slots=True)
class Change:
    """One change of the market as a buyer watching it would see it. ``price`` is the
    asking price the change left (for ``removed``, the last one)."""

    seq: int
    kind: ChangeKind
    at: float
    listing: Listing
    price: int


class ChangeLog:
    """The market's changes in order, the newest ``capacity`` kept. Readers keep their own
    cursor (:attr:`cursor` when they start: nothing before is replayed) and
    :meth:`read` from it; a reader that fell more than ``capacity`` behind is told how
    many it lost. ``on_record`` (if set) is called after each change is written, so an I/O
    layer can wake its readers."""

    def __init__(self, capacity: int = 65_536) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self._kept: deque[Change] = deque(maxlen=capacity)
        self._next = 0
        self.on_record: Callable[[], None] | None = None

    @property
    def cursor(self) -> int:
        """Where a new reader starts: after every change written so far."""
        return self._next

    def record(self, kind: ChangeKind, at: float, listing: Listing, price: int) -> None:
        self._kept.append(Change(self._next, kind, at, listing, price))
        self._next += 1
        if self.on_record is not None:
            self.on_record()

    def read(self, cursor: int) -> tuple[list[Change], int, int]:
        """(changes since ``cursor``, the cursor to read from next, how many were lost
        because the reader fell behind)."""
        oldest = self._next - len(self._kept)
        start = max(cursor, oldest)
        changes = [self._kept[i - oldest] for i in range(start, self._next)]
        return changes, self._next, max(0, oldest - cursor)

    def __len__(self) -> int:
        return len(self._kept)


def _weights(items: list[CatalogueItem], config: MarketConfig) -> list[float]:
    featured = set(config.featured)
    chosen = [item for item in items if item.name in featured]
    if not chosen:
        return [item.popularity for item in items]
    others = sum(item.popularity for item in items if item.name not in featured)
    each = others * config.featured_share / (1 - config.featured_share) / len(chosen)
    return [each if item.name in featured else item.popularity for item in items]


def phased_name(name: str, phase: str) -> str:
    """Write the phase into a market name, before the exterior."""
    head, sep, tail = name.rpartition(" (")
    return f"{head} {phase}{sep}{tail}" if sep else f"{name} {phase}"


class Market:
    """All listings and their schedule. ``on_arrival`` is told of every new listing and may
    claim it (a buy order filled) by returning ``True``."""

    def __init__(
        self,
        *,
        seed: int,
        start: float,
        config: MarketConfig | None = None,
        catalogue: Iterable[CatalogueItem] | None = None,
    ) -> None:
        self.config = config or MarketConfig()
        self.now = start
        self.on_arrival: Callable[[Listing], bool] = lambda listing: False
        self.relister: Callable[[int, float], tuple[float, int, float] | None] | None = None
        """Asked (price, when) for every listing that leaves on schedule; may answer
        (back at, new price, leaves again at) to bring it back (a relist fault)."""
        self._relisting: dict[int, Listing] = {}
        self._rng = random.Random(f"market:{seed}")
        items = [i for i in (catalogue or build_catalogue()) if i.game in self.config.games]
        if not items:
            raise ValueError(f"no catalogue items for games {self.config.games}")
        self.items: tuple[CatalogueItem, ...] = tuple(items)
        self.items_by_name = {item.name: item for item in self.items}
        # "★ Karambit | Doppler Phase 2 (Factory New)" -> (base name, phase)
        self.phased_names = {
            phased_name(item.name, phase): (item.name, phase)
            for item in self.items
            for phase in item.phases
        }
        self._cum_weights = list(itertools.accumulate(_weights(items, self.config)))
        self.listings: dict[int, Listing] = {}
        self.by_name: dict[str, dict[int, Listing]] = {}
        self._events: list[tuple[float, int, int, int, int]] = []
        self._seq = itertools.count()
        self._ids = itertools.count(31_000_001)
        self.departed = 0
        self.changes = ChangeLog()
        self._churn_rng = random.Random(f"churn:{seed}")
        self._churn: deque[Listing] = deque()
        self._churn_turn = 0
        self._churn_ids = itertools.count(80_000_000_001)  # the others' ids stay as they were
        self._populate(start)
        self._start_churn(start)

    # -- schedule ---------------------------------------------------------------------

    def _populate(self, start: float) -> None:
        for _ in range(self.config.size):
            # Listed in the past; lifetimes are memoryless, so they are drawn from now.
            listed_at = start - self._rng.uniform(0.0, 2 * 86400.0)
            self._add(self._new_listing(listed_at, alive_from=start))
        if self.config.size:
            self._push(start + self._next_gap(), _ARRIVE, 0, 0)

    def _mean_gap(self) -> float:
        c = self.config
        mean_life = c.deal_share * c.deal_mean_lifetime + (1 - c.deal_share) * c.mean_lifetime
        return mean_life / max(1, c.size)

    def _next_gap(self) -> float:
        return self._rng.expovariate(1.0 / self._mean_gap())

    def _push(self, when: float, kind: int, item_id: int, value: int) -> None:
        heapq.heappush(self._events, (when, next(self._seq), kind, item_id, value))

    def next_event_time(self) -> float | None:
        return self._events[0][0] if self._events else None

    def advance_to(self, when: float) -> None:
        """Play every event up to market time ``when`` (never backwards)."""
        while self._events and self._events[0][0] <= when:
            self.step()
        self.now = max(self.now, when)

    def step(self) -> None:
        """Play the next scheduled event."""
        if self._events:
            at, _, kind, item_id, value = heapq.heappop(self._events)
            self.now = max(self.now, at)
            if kind == _ARRIVE:
                self._push(at + self._next_gap(), _ARRIVE, 0, 0)
                listing = self._new_listing(at, alive_from=at)
                self._arrive(listing)
            elif kind == _LEAVE:
                if (gone := self.remove(item_id)) is not None:
                    self.departed += 1
                    if self.relister is not None:
                        self._relist(gone, self.relister(gone.price, at))
            elif kind == _RELIST and (back := self._relisting.pop(item_id, None)) is not None:
                back.price = value
                back.edits.append((at, value))
                self._arrive(back)
            elif kind == _REPRICE and (listing_ := self.listings.get(item_id)) is not None:
                self._reprice(listing_, at, value)
            elif kind == _CHURN:
                self._churn_step(at)

    def _reprice(self, listing: Listing, at: float, price: int) -> None:
        """A listed listing's price changes at ``at`` (the feed tells an ``update``)."""
        listing.price = price
        listing.edits.append((at, price))
        self.changes.record("update", at, listing, price)

    # -- churn: the feed's traffic at the live rate -----------------------------------

    def _churn_rate(self, at: float) -> float:
        c = self.config
        if not c.burst_every:
            return c.churn_per_second
        if at % c.burst_every < c.burst_seconds:
            return c.burst_per_second
        rest = c.churn_per_second * c.burst_every - c.burst_per_second * c.burst_seconds
        return rest / (c.burst_every - c.burst_seconds)

    def _start_churn(self, start: float) -> None:
        c = self.config
        if c.churn_per_second <= 0:
            return
        # the pool as it stands in the steady state: new and removed alternate, so it
        # keeps this size, each listing staying ~churn_lifetime
        for _ in range(round(c.churn_per_second / 3 * c.churn_lifetime)):
            listing = self._churn_listing(start - self._churn_rng.uniform(0.0, c.churn_lifetime))
            self._add(listing)
            self._churn.append(listing)
        self._push(start + self._churn_gap(start), _CHURN, 0, 0)

    def _churn_gap(self, at: float) -> float:
        rate = self._churn_rate(at)
        return self._churn_rng.expovariate(rate) if rate > 0 else 1.0

    def _churn_step(self, at: float) -> None:
        self._push(at + self._churn_gap(at), _CHURN, 0, 0)
        kind = _CHURN_KINDS[self._churn_turn % 3]
        self._churn_turn += 1
        pool = self._churn
        if kind == "removed" or (kind == "update" and pool):
            while pool and pool[0].item_id not in self.listings:
                pool.popleft()  # bought meanwhile
            if not pool:
                return
            if kind == "removed":
                self.remove(pool.popleft().item_id)
                return
            listing = pool[self._churn_rng.randrange(len(pool))]
            if listing.item_id in self.listings:
                price = max(10, round(listing.price * self._churn_rng.uniform(0.97, 1.03)))
                self._reprice(listing, at, price)
            return
        listing = self._churn_listing(at)
        pool.append(listing)
        self._arrive(listing)

    def _churn_listing(self, listed_at: float) -> Listing:
        """An ordinary listing (never a deal) from the churn's own source."""
        rng = self._churn_rng
        item = self._pick_item(rng)
        phase = _draw_phase(rng, item)
        reference = round(item.reference * phase_multiplier(phase))
        price = max(10, round(reference * (0.93 + rng.lognormvariate(0.0, 0.1) / 8)))
        float_value, stickers, unlock_at, send_until = self._draw_looks(rng, item, listed_at)
        return Listing(
            item_id=next(self._churn_ids),
            item=item,
            price=price,
            listed_at=listed_at,
            phase=phase,
            float_value=float_value,
            stickers=stickers,
            unlock_at=unlock_at,
            send_until=send_until,
            paintseed=rng.randrange(1, 1001),
            initial_price=price,
        )

    # -- listings ---------------------------------------------------------------------

    def _pick_item(self, rng: random.Random | None = None) -> CatalogueItem:
        point = (rng or self._rng).random() * self._cum_weights[-1]
        return self.items[min(bisect.bisect_right(self._cum_weights, point), len(self.items) - 1)]

    def _new_listing(self, listed_at: float, *, alive_from: float) -> Listing:
        rng, config = self._rng, self.config
        item = self._pick_item()
        phase = _draw_phase(rng, item)
        reference = round(item.reference * phase_multiplier(phase))
        is_deal = rng.random() < config.deal_share
        factor = rng.uniform(0.55, 0.85) if is_deal else 0.93 + rng.lognormvariate(0.0, 0.1) / 8
        price = max(10, round(reference * factor))
        float_value, stickers, unlock_at, send_until = self._draw_looks(rng, item, alive_from)
        lifetime_mean = config.deal_mean_lifetime if is_deal else config.mean_lifetime
        lifetime = rng.expovariate(1.0 / lifetime_mean)
        reprice_at = alive_from + rng.uniform(0.0, lifetime)
        reprice_to = max(10, round(price * rng.uniform(0.9, 1.08)))
        reprices = rng.random() < config.reprice_share
        listing = Listing(
            item_id=next(self._ids),
            item=item,
            price=price,
            listed_at=listed_at,
            phase=phase,
            float_value=float_value,
            stickers=stickers,
            unlock_at=unlock_at,
            send_until=send_until,
            paintseed=rng.randrange(1, 1001),
            initial_price=price,
        )
        listing.edits = [(reprice_at, reprice_to)] if reprices else []
        self._schedule(listing, alive_from + lifetime)
        return listing

    def _relist(self, listing: Listing, plan: tuple[float, int, float] | None) -> None:
        if plan is not None:
            back_at, price, leave_at = plan
            self._relisting[listing.item_id] = listing
            self._push(back_at, _RELIST, listing.item_id, price)
            self._push(max(leave_at, back_at), _LEAVE, listing.item_id, 0)

    def _schedule(self, listing: Listing, leave_at: float) -> None:
        for at, new_price in listing.edits:
            self._push(at, _REPRICE, listing.item_id, new_price)
        listing.edits = []  # filled in as the reprices happen
        self._push(leave_at, _LEAVE, listing.item_id, 0)

    def _draw_looks(
        self, rng: random.Random, item: CatalogueItem, hold_from: float
    ) -> tuple[float | None, tuple[PlacedSticker, ...], float | None, float | None]:
        """A listing's wear, stickers and trade lock (``unlock_at``, ``send_until``),
        drawn from ``rng`` in this order (a seeded market depends on it)."""
        float_value = None
        if item.float_range is not None:
            low, high = item.float_range
            float_value = round(rng.uniform(low, high), 14)
        stickers: tuple[PlacedSticker, ...] = ()
        if item.takes_stickers:
            count = rng.choices(range(6), _STICKER_COUNT_WEIGHTS)[0]
            stickers = tuple(self._sticker(slot, rng) for slot in range(count))
        unlock_at = send_until = None
        if rng.random() < self.config.hold_share:
            unlock_at = float(int(hold_from + rng.uniform(3600.0, 7 * 86400.0)))
            send_until = unlock_at + self.config.hold_send_window
        return float_value, stickers, unlock_at, send_until

    def _sticker(self, slot: int, rng: random.Random) -> PlacedSticker:
        kinds = sticker_kinds()
        # Cheap stickers are everywhere; the famous ones are rare.
        kind = kinds[min(int(rng.paretovariate(1.2)) - 1 + 6, len(kinds) - 1)]
        if rng.random() < 0.08:
            kind = rng.choice(kinds)
        wear = None if rng.random() < 0.6 else round(rng.random(), 3)
        return PlacedSticker(kind.name, kind.image, wear, slot, kind.price)

    def _add(self, listing: Listing) -> None:
        self.listings[listing.item_id] = listing
        self.by_name.setdefault(listing.name, {})[listing.item_id] = listing

    def add_listing(self, listing: Listing, *, arrive: bool = False) -> None:
        """Put a listing on the market (tests and the inspection API use it). With
        ``arrive`` it comes as a scheduled arrival does: buy orders get it first."""
        if arrive:
            self._arrive(listing)
        else:
            self._add(listing)
            self.changes.record("new", self.now, listing, listing.price)

    def _arrive(self, listing: Listing) -> None:
        """A new listing, offered to the buy orders first: one they take was never on
        the market for anyone to see."""
        self._add(listing)
        if self.on_arrival(listing):
            self._take_out(listing.item_id)
        else:
            self.changes.record("new", self.now, listing, listing.price)

    def new_item_id(self) -> int:
        return next(self._ids)

    def plant(
        self,
        item: CatalogueItem,
        price: int,
        *,
        float_value: float | None = None,
        phase: str | None = None,
        unlock_at: float | None = None,
        send_until: float | None = None,
        arrive: bool = False,
    ) -> Listing:
        """A listing of ``item`` at ``price`` put on the market now, without stickers,
        never repriced and gone only when bought (tests and ``POST /_sandbox/listings``
        plant a deal when they need one, instead of waiting for the arrival process).
        ``float_value`` defaults to the middle of the item's wear range."""
        if float_value is None and item.float_range is not None:
            float_value = sum(item.float_range) / 2
        listing = Listing(
            item_id=self.new_item_id(),
            item=item,
            price=price,
            listed_at=self.now,
            phase=phase,
            float_value=float_value,
            stickers=(),
            unlock_at=unlock_at,
            send_until=send_until,
            paintseed=1,
            initial_price=price,
        )
        self.add_listing(listing, arrive=arrive)
        return listing

    def remove(self, item_id: int) -> Listing | None:
        """Take a listing off the market (it left, or it was bought)."""
        listing = self._take_out(item_id)
        if listing is not None:
            self.changes.record("removed", self.now, listing, listing.price)
        return listing

    def _take_out(self, item_id: int) -> Listing | None:
        listing = self.listings.pop(item_id, None)
        if listing is not None:
            same_name = self.by_name.get(listing.name)
            if same_name is not None:
                same_name.pop(item_id, None)
                if not same_name:
                    del self.by_name[listing.name]
        return listing

    def get(self, item_id: int) -> Listing | None:
        return self.listings.get(item_id)

    # -- queries ----------------------------------------------------------------------

    def cheapest(self, name: str, *, include_hold: bool, game: str | None = None) -> list[Listing]:
        """Listings of one name, cheapest first, ``item_id`` breaking ties."""
        found = [
            listing
            for listing in self.by_name.get(name, {}).values()
            if (include_hold or not listing.locked(self.now))
            and (game is None or listing.game == game)
        ]
        found.sort(key=lambda listing: (listing.price, listing.item_id))
        return found


def _draw_phase(rng: random.Random, item: CatalogueItem) -> str | None:
    """A phase for ``item`` (rare phases one in eleven as likely), ``None`` without one."""
    if not item.phases:
        return None
    weights = [1 if p in _RARE_PHASES else 10 for p in item.phases]
    return rng.choices(item.phases, weights)[0]
