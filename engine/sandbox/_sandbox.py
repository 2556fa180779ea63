"""The sandbox as one object: market, accounts, limits, faults and ground truth on one
clock. The HTTP layer (``_app.py``) only translates requests into calls on it."""

from __future__ import annotations

import math
import random
import secrets
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .._clock import Clock, VirtualClock
from ._faults import Fault, FaultPlan, FeedFault, FeedFaultPlan, load_scenario
from ._feed import FeedConfig, FeedHub
from ._http import BadRequest, Request
from ._limits import LimitConfig, RateLimits
from ._market import Market, MarketConfig
from ._merchant import MerchantDesk
from ._snapshot import Snapshot
from ._trading import Account, Trading, TradingConfig

__all__ = ["Sandbox", "SandboxConfig"]

SNAPSHOT_PERIOD = 10.0


@dataclass(frozen=True)
class SandboxConfig:
    """Everything that shapes a sandbox. Times are market seconds; money USD x 1000."""

    seed: int = 1
    market: MarketConfig = field(default_factory=MarketConfig)
    trading: TradingConfig = field(default_factory=TradingConfig)
    limits: LimitConfig = field(default_factory=LimitConfig)
    api_key: str | None = field(default=None, repr=False)
    balance: int = 1_000_000
    image_base_url: str = "https://img.sandbox.invalid"
    snapshot_build_seconds: float = 0.0
    """For this long after each 10-second rebuild, the CSV snapshot answers 503 with
    ``Retry-After: 1`` ("being built"), as the live service does; 0 turns that off."""
    feed: FeedConfig = field(default_factory=FeedConfig)
    """The live listing feed's heartbeat (``/socket.io/``)."""
    jitter: tuple[float, float] = (0.0, 0.0)
    """Network delay of every interface request, each way, drawn uniformly from this range
    of market seconds (seeded): the request is counted against the limits when it
    *arrives*, after the first delay, and its answer leaves after the second. ``(0, 0)``:
    none."""

    def __post_init__(self) -> None:
        low, high = self.jitter
        if not (0.0 <= low <= high and math.isfinite(high)):
            raise ValueError(f"jitter must be (low, high) with 0 <= low <= high, got {self.jitter}")


class Sandbox:
    """A marketplace that behaves like the real one, on market time.

    ``clock`` is market time: a :class:`~engine.VirtualClock` in tests (the market moves
    exactly when the test moves the clock), a :class:`~engine.ScaledClock` to run hours of
    market in minutes. ``app`` is the ASGI application for in-process use
    (``httpx.ASGITransport(app=sandbox.app)``); ``server_app`` is the one to serve over a
    socket, whose timeouts and dropped connections happen on the wire.
    """

    def __init__(
        self,
        config: SandboxConfig | None = None,
        *,
        clock: Clock | None = None,
        faults: list[Fault] | None = None,
        scenario: str | Path | None = None,
    ) -> None:
        self.config = config or SandboxConfig()
        self.clock: Clock = clock or VirtualClock()
        trading_config = self.config.trading
        fault_list = list(faults or ())
        feed_faults: list[FeedFault] = []
        if scenario is not None:
            loaded = load_scenario(scenario)
            fault_list += loaded.faults
            if loaded.busy_probability:
                trading_config = _with_busy(trading_config, loaded.busy_probability)
            trading_config = _with_delays(
                trading_config, loaded.project_id_delay, loaded.history_delay
            )
            feed_faults = list(loaded.feed.faults)
            feed = self.config.feed
            self.config = replace(
                self.config,
                feed=replace(
                    feed,
                    ping_interval=loaded.feed.ping_interval or feed.ping_interval,
                    ping_timeout=loaded.feed.ping_timeout or feed.ping_timeout,
                ),
            )
            if loaded.jitter_ms is not None:
                low, high = loaded.jitter_ms
                self.config = replace(self.config, jitter=(low / 1000, high / 1000))
        start = self.clock.now()
        self.market = Market(seed=self.config.seed, start=start, config=self.config.market)
        self.trading = Trading(self.market, seed=self.config.seed, config=trading_config)
        self.limits = RateLimits(self.config.limits)
        self.faults = FaultPlan(fault_list, seed=self.config.seed)
        self.feed_faults = FeedFaultPlan(feed_faults, seed=self.config.seed)
        self.market.relister = self.feed_faults.relist
        self.feed = FeedHub(self)
        self.merchants = MerchantDesk(seed=self.config.seed, items=self.market.items, start=start)
        self._jitter = random.Random(f"jitter:{self.config.seed}")
        self.requests: Counter[str] = Counter()
        self.faults_fired: list[dict[str, Any]] = []
        self.purchase_requests: list[dict[str, Any]] = []
        """Every purchase request that arrived (before any fault): endpoint, time, and the
        ``project_id`` and ``item_id`` of each item, so tests can assert exactly-once on
        what was *sent*, not only on what was bought."""
        self._own: dict[str, list[dict[str, Any]]] = {}
        self._snapshot: Snapshot | None = None
        self._snapshot_slot: float | None = None
        key = self.config.api_key or secrets.token_hex(16)
        self.default_account = self.trading.create_account(
            key, balance=self.config.balance, name="sandbox-trader"
        )
        from ._app import SandboxApp  # the HTTP layer depends on this module, not back

        self.app = SandboxApp(self, wire_faults=False)
        self.server_app = SandboxApp(self, wire_faults=True)

    @property
    def api_key(self) -> str:
        """The key of the funded default account."""
        return self.default_account.key

    def __repr__(self) -> str:
        return f"Sandbox(seed={self.config.seed}, clock={self.clock!r})"

    # -- time -------------------------------------------------------------------------

    def now(self) -> float:
        return self.trading.now

    def advance(self) -> float:
        """Bring the market up to the clock; returns market time."""
        now = self.clock.now()
        self.trading.advance_to(now)
        return self.trading.now

    def network_delays(self) -> tuple[float, float]:
        """(to the service, back) for one request, in market seconds (see
        :attr:`SandboxConfig.jitter`)."""
        low, high = self.config.jitter
        if high <= 0.0:
            return 0.0, 0.0
        return self._jitter.uniform(low, high), self._jitter.uniform(low, high)

    # -- accounts ---------------------------------------------------------------------

    def add_account(self, key: str | None = None, *, balance: int = 0) -> Account:
        """A new account (its key is random unless given)."""
        return self.trading.create_account(key or secrets.token_hex(16), balance=balance)

    def own_listings(self, account: Account) -> list[dict[str, Any]]:
        """The account's own listings (a few, made on first use)."""
        rows = self._own.get(account.account_id)
        if rows is None:
            rows = self._own[account.account_id] = self._make_own_listings(account)
        return rows

    def remove_own_listings(self, account: Account, game: str | None) -> int:
        rows = self.own_listings(account)
        keep = [row for row in rows if game is not None and row["game"] != game]
        self._own[account.account_id] = keep
        return len(rows) - len(keep)

    def _make_own_listings(self, account: Account) -> list[dict[str, Any]]:
        items = self.market.items
        rows = []
        for n in range(4):
            item = items[(int(account.account_id) + n * 37) % len(items)]
            rows.append(
                {
                    "item_id": str(29_000_000_000 + int(account.account_id[-6:]) * 10 + n),
                    "price": round(item.reference * 1.05),
                    "date": int(self.clock.now()) - 3600 * (n + 1),
                    "position": n + 1,
                    "name": item.name,
                    "market_name": item.name,
                    "game": item.game,
                    "platform_price": {
                        "average": item.reference,
                        "rarity_color": "eb4b4b",
                        "rarity": "Covert",
                        "current": item.reference,
                        "name": item.name,
                        "lowest_price": round(item.reference * 0.97),
                        "img": item.image,
                    },
                }
            )
        return rows

    def record_purchase_request(self, request: Request) -> None:
        """Note a purchase request as it arrives (see :attr:`purchase_requests`)."""
        items: list[tuple[str | None, str | None]]
        if request.method == "POST":
            try:
                raw = request.json().get("items")
            except BadRequest:
                raw = None
            entries = raw if isinstance(raw, list) else []
            items = [
                (_text(e.get("project_id")), _text(e.get("item_id")))
                for e in entries
                if isinstance(e, dict)
            ]
        else:
            items = [(request.arg("project_id"), request.arg("item_id") or request.arg("name"))]
        for project_id, item_id in items:
            self.purchase_requests.append(
                {
                    "endpoint": request.endpoint,
                    "at": self.clock.now(),
                    "project_id": project_id,
                    "item_id": item_id,
                }
            )

    def inject(self, endpoint: str, kind: str, **fields: Any) -> Fault:
        """Arm a fault: ``sandbox.inject("GET /v1/buy-one-p2p", "timeout_after_commit",
        count=1)``."""
        return self.faults.add(endpoint=endpoint, kind=kind, **fields)

    def inject_feed(self, kind: str, **fields: Any) -> FeedFault:
        """Arm a fault of the live listing feed: ``sandbox.inject_feed("stall", after=10,
        count=1, seconds=120)`` (see the scenario format in ``_faults.py``)."""
        return self.feed_faults.add(kind=kind, **fields)

    # -- snapshot ---------------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        """The prices snapshot, rebuilt at most once per 10 seconds of market time."""
        now = self.advance()
        slot = math.floor(now / SNAPSHOT_PERIOD) * SNAPSHOT_PERIOD
        if self._snapshot is None or self._snapshot_slot != slot:
            self._snapshot = Snapshot.from_listings(self.market.listings.values(), timestamp=now)
            self._snapshot_slot = slot
        return self._snapshot

    def snapshot_building(self) -> bool:
        """Is the CSV snapshot being rebuilt right now (see ``snapshot_build_seconds``)?"""
        now = self.advance()
        since_rebuild = now - math.floor(now / SNAPSHOT_PERIOD) * SNAPSHOT_PERIOD
        return since_rebuild < self.config.snapshot_build_seconds

    def pin_snapshot(self, snapshot: Snapshot) -> None:
        """Serve ``snapshot`` until the next 10-second boundary (the benchmark serves a
        full-size one this way)."""
        now = self.advance()
        self._snapshot = snapshot
        self._snapshot_slot = math.floor(now / SNAPSHOT_PERIOD) * SNAPSHOT_PERIOD

    # -- ground truth -----------------------------------------------------------------

    def ground_truth(self) -> dict[str, Any]:
        """What really happened: every purchase, charge and refund, balances, request
        counts per endpoint and status, faults fired. Keys are never included: accounts
        are named by their id."""
        now = self.advance()
        ledger = self.trading.ledger
        return {
            "now": now,
            "purchases": [dict(p) for p in ledger["purchases"]],
            "charges": [dict(c) for c in ledger["charges"]],
            "refunds": [dict(r) for r in ledger["refunds"]],
            "payments": [dict(p) for p in ledger["payments"]],
            "balances": {a.account_id: a.balance for a in self.trading.accounts.values()},
            "default_account": self.default_account.account_id,
            "trades": [
                {
                    "id": t.id,
                    "account": t.account_id,
                    "project_id": t.project_id,
                    "item_id": str(t.item_id),
                    "price": t.price,
                    "status": t.status,
                    "stage": t.stage,
                    "reason": t.reason,
                    "hold": t.hold,
                }
                for t in self.trading.trades.values()
            ],
            "requests": dict(self.requests),
            "purchase_requests": [dict(r) for r in self.purchase_requests],
            "faults_fired": list(self.faults_fired),
            "feed": {
                "connections": self.feed.connections,
                "opened": self.feed.opened,
                "dropped_for_silence": self.feed.dropped_for_silence,
                "faults_fired": list(self.feed.faults_fired),
            },
            "market": {
                "listings": len(self.market.listings),
                "departed": self.market.departed,
                "names": len(self.market.by_name),
            },
        }


def _with_busy(config: TradingConfig, probability: float) -> TradingConfig:
    from dataclasses import replace

    return replace(config, busy_probability=probability)


def _with_delays(
    config: TradingConfig, project_id_delay: float | None, history_delay: float | None
) -> TradingConfig:
    from dataclasses import replace

    if project_id_delay is not None:
        config = replace(config, project_id_delay=project_id_delay)
    if history_delay is not None:
        config = replace(config, history_delay=history_delay)
    return config


def _text(value: Any) -> str | None:
    return None if value is None or value == "" else str(value)
