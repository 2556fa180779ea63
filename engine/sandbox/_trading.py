"""Accounts, purchases, trades, buy orders and the ground-truth ledger. Sans-I/O.

A purchase is checked and committed in one synchronous step (no ``await`` in between), so
two concurrent requests can never buy the same listing or overdraw a balance. Trades then
move through the statuses of interface.md 3.1 on market time, by a timeline drawn when the
trade is created from a random source seeded by the trade id: the same seed gives the same
trades whatever the order of requests.
"""

from __future__ import annotations

import contextlib
import hashlib
import heapq
import itertools
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ._market import Listing, Market

__all__ = [
    "Account",
    "BuyOrder",
    "Refusal",
    "Trade",
    "Trading",
    "TradingConfig",
]

MSG_ITEM_SOLD = "Item sold"
MSG_PRICE_CHANGED = "Price changed"
MSG_NO_BALANCE = "Not enough money on balance"
MSG_SYSTEM_BUSY = "System busy"
MSG_TRADE_LOCKED = (
    "This item is trade-locked (on hold); pass allow_trade_locked=1 to buy it and receive it "
    "after the lock ends"
)
MSG_BAD_TRADELINK = "Invalid trade link: partner must be digits and token 8 characters"

FAILURE_REASONS = (
    "Invalid tradelink",
    "Item price has increased or item is no longer available",
    "Seller failed to accept",
    "Buyer failed to accept",
)
HOLD_FAILURE_REASON = "Item was not delivered before send_until; refunded in full"

_PLATFORM_ID64_BASE = 76561197960265728


@dataclass(frozen=True, slots=True)
class TradingConfig:
    """How trades behave. Rates are probabilities per trade; times are market seconds."""

    trade_failure_rate: float = 0.08
    hold_failure_rate: float = 0.1
    project_id_delay: float = 3.0
    """Seconds before a purchase shows in check-many-project-id (a lagging service)."""
    history_delay: float = 0.0
    """Seconds before a purchase shows in my-history."""
    busy_probability: float = 0.0
    disabled_games: frozenset[str] = frozenset()


@dataclass(slots=True)
class Account:
    """A marketplace account. ``key`` is a secret and is kept out of ``repr``."""

    account_id: str
    key: str = field(repr=False)
    balance: int
    partner: str
    token: str
    name: str
    platform_api: str | None = field(default=None, repr=False)
    platform_token_exp: float | None = None
    webhook: str | None = None
    proxy: str | None = field(default=None, repr=False)

    @property
    def tradelink(self) -> str:
        return f"https://platform.sandbox.invalid/tradeoffer/new/?partner={self.partner}&token={self.token}"

    def can_p2p(self, now: float) -> bool:
        return self.platform_token_exp is not None and self.platform_token_exp > now


@dataclass(slots=True)
class Step:
    at: float
    status: int
    stage: int
    escrow: str | None
    reason: str | None = None


@dataclass(slots=True, eq=False)
class Trade:
    """A purchase and the trade that delivers it."""

    id: int
    account_id: str
    item_id: int
    name: str
    game: str
    image: str
    price: int
    project_id: str | None
    created: float
    partner: str
    source: str
    unlock_at: float | None
    send_until: float
    timeline: list[Step]
    status: int = 0
    stage: int = 1
    escrow_status: str | None = None
    reason: str | None = None
    last_updated: float = 0.0
    counter: int = 0
    refunded: bool = False
    force_checked_at: float | None = None
    hidden_until: float = 0.0
    """Out of check-many-project-id and my-history until then (fault ``hidden_commit``)."""
    accept_late_by: float | None = None
    """Completes this long after ``send_until``, status 4 until then (``late_accept``)."""

    @property
    def hold(self) -> bool:
        return self.unlock_at is not None

    @property
    def done(self) -> bool:
        return self.status in (5, 6)

    @property
    def trade_offer_id(self) -> str | None:
        return str(6_500_000_000 + self.id) if self.status in (4, 5) else None


@dataclass(slots=True)
class BuyOrder:
    id: int
    account_id: str
    name: str
    game: str
    price: int
    amount: int
    filled: int = 0


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a purchase was not made; ``extra`` goes into the answer (``new_price``)."""

    msg: str
    extra: dict[str, Any] = field(default_factory=dict)


class Trading:
    """The bookkeeping of the sandbox: who has what, who bought what, and what happened."""

    def __init__(self, market: Market, *, seed: int, config: TradingConfig | None = None):
        self.market = market
        self.config = config or TradingConfig()
        self.seed = seed
        self.accounts_by_key: dict[str, Account] = {}
        self.accounts: dict[str, Account] = {}
        self.trades: dict[int, Trade] = {}
        self.buy_orders: dict[int, BuyOrder] = {}
        self.ledger: dict[str, list[dict[str, Any]]] = {
            "purchases": [],
            "charges": [],
            "refunds": [],
            "payments": [],
        }
        self._trade_ids = itertools.count(30_717_001)
        self._order_ids = itertools.count(2001)
        self._account_ids = itertools.count(76561198_100_000_001)
        self._steps: list[tuple[float, int, int]] = []  # (when, trade id, step index)
        self._busy_rng = random.Random(f"busy:{seed}")
        self._shape: dict[str, float] = {}
        market.on_arrival = self._fill_orders_with

    # -- time -------------------------------------------------------------------------

    @property
    def now(self) -> float:
        return self.market.now

    def advance_to(self, when: float) -> None:
        """Play market events and trade steps in time order up to ``when``."""
        while True:
            next_market = self.market.next_event_time()
            next_step = self._steps[0][0] if self._steps else None
            if (
                next_step is not None
                and next_step <= when
                and (next_market is None or next_step <= next_market)
            ):
                _, trade_id, index = heapq.heappop(self._steps)
                self.market.now = max(self.market.now, next_step)
                self._apply_step(self.trades[trade_id], index)
            elif next_market is not None and next_market <= when:
                self.market.step()
            else:
                break
        self.market.advance_to(when)

    # -- accounts ---------------------------------------------------------------------

    def create_account(self, key: str, *, balance: int, name: str | None = None) -> Account:
        if key in self.accounts_by_key:
            raise ValueError("an account with this key exists")
        account_id = str(next(self._account_ids))
        partner = str(int(account_id) - _PLATFORM_ID64_BASE)
        token = hashlib.sha256(f"{self.seed}:{account_id}".encode()).hexdigest()[:8]
        account = Account(
            account_id=account_id,
            key=key,
            balance=balance,
            partner=partner,
            token=token,
            name=name or f"trader-{account_id[-4:]}",
        )
        self.accounts_by_key[key] = account
        self.accounts[account_id] = account
        return account

    def account_for(self, key: str | None) -> Account | None:
        return self.accounts_by_key.get(key) if key else None

    # -- buying -----------------------------------------------------------------------

    def refusal(
        self,
        account: Account,
        listing: Listing | None,
        ceiling: int,
        *,
        allow_trade_locked: bool,
        partner: str,
        token: str,
        spent_before: int = 0,
    ) -> Refusal | None:
        """The reason this purchase would be refused now, or ``None`` if it would go
        through. Nothing changes."""
        if self.config.busy_probability and self._busy_rng.random() < self.config.busy_probability:
            return Refusal(MSG_SYSTEM_BUSY)
        if not (partner.isdigit() and len(token) == 8 and token.isalnum()):
            return Refusal(MSG_BAD_TRADELINK)
        if listing is None:
            return Refusal(MSG_ITEM_SOLD)
        if listing.game in self.config.disabled_games:
            return Refusal(f"buy_{listing.game}")
        if listing.locked(self.now) and not allow_trade_locked:
            return Refusal(MSG_TRADE_LOCKED)
        if listing.price > ceiling:
            return Refusal(MSG_PRICE_CHANGED, {"new_price": str(listing.price)})
        if account.balance - spent_before < listing.price:
            return Refusal(MSG_NO_BALANCE)
        return None

    @contextlib.contextmanager
    def shaping(
        self, *, hidden_for: float | None = None, accept_late_by: float | None = None
    ) -> Iterator[None]:
        """Trades committed inside are hidden for ``hidden_for`` seconds, or accepted
        ``accept_late_by`` seconds after their ``send_until`` (fault injection)."""
        shape = {"hidden_for": hidden_for, "accept_late_by": accept_late_by}
        self._shape = {k: v for k, v in shape.items() if v is not None}
        try:
            yield
        finally:
            self._shape = {}

    def commit(
        self,
        account: Account,
        listing: Listing,
        *,
        partner: str,
        project_id: str | None,
        source: str,
    ) -> Trade:
        """Charge the account, take the listing off the market, open the trade."""
        now = self.now
        self.market.remove(listing.item_id)
        account.balance -= listing.price
        trade_id = next(self._trade_ids)
        hold = listing.locked(now)
        unlock_at = listing.unlock_at if hold else None
        send_until = listing.send_until if hold and listing.send_until else now + 15 * 60
        trade = Trade(
            id=trade_id,
            account_id=account.account_id,
            item_id=listing.item_id,
            name=listing.name,
            game=listing.game,
            image=listing.item.image,
            price=listing.price,
            project_id=project_id,
            created=now,
            partner=partner,
            source=source,
            unlock_at=unlock_at,
            send_until=float(send_until),
            timeline=[],
            last_updated=now,
            hidden_until=now + self._shape.get("hidden_for", 0.0),
            accept_late_by=self._shape.get("accept_late_by"),
        )
        trade.timeline = self._timeline(trade)
        self._apply_step(trade, 0)
        self.trades[trade_id] = trade
        for index, step in enumerate(trade.timeline[1:], start=1):
            heapq.heappush(self._steps, (step.at, trade_id, index))
        purchase = {
            "trade_id": trade_id,
            "account": account.account_id,
            "item_id": str(listing.item_id),
            "name": listing.name,
            "price": listing.price,
            "project_id": project_id,
            "at": now,
            "listed_at": listing.listed_at,
            "source": source,
            "hold": hold,
        }
        self.ledger["purchases"].append(purchase)
        self.ledger["charges"].append(
            {
                "trade_id": trade_id,
                "account": account.account_id,
                "amount": listing.price,
                "at": now,
            }
        )
        return trade

    def _timeline(self, trade: Trade) -> list[Step]:
        rng = random.Random(f"trade:{self.seed}:{trade.id}")
        t = trade.created
        if trade.accept_late_by is not None:
            sent = min(t + 60.0, trade.send_until - 1.0)
            steps = [Step(t, 0, 1, None), Step(sent, 4, 4, None)]
            return [*steps, Step(trade.send_until + trade.accept_late_by, 5, 5, None)]
        if trade.unlock_at is not None:
            steps = [Step(t, 0, 11, "awaiting_unlock")]
            t = trade.unlock_at + rng.uniform(5.0, 120.0)
            steps.append(Step(t, 1, 1, "sending"))
            t += rng.uniform(10.0, 60.0)
            steps.append(Step(t, 2, 2, "sending"))
            if rng.random() < self.config.hold_failure_rate:
                steps.append(Step(trade.send_until, 6, 6, "failed", HOLD_FAILURE_REASON))
                return steps
            t += rng.uniform(30.0, 600.0)
            steps.append(Step(t, 4, 4, "trade_sent"))
            steps.append(Step(t + rng.uniform(60.0, 1800.0), 5, 5, "completed"))
            return steps
        steps = [Step(t, 0, 1, None)]
        fails = rng.random() < self.config.trade_failure_rate
        reason = rng.choice(FAILURE_REASONS)
        if fails and reason == "Invalid tradelink":
            return [*steps, Step(t + rng.uniform(1.0, 5.0), 6, 6, None, reason)]
        t += rng.uniform(10.0, 40.0)
        steps.append(Step(t, 1, 1, None))
        if fails and reason.startswith("Item price"):
            return [*steps, Step(trade.created + 360.0, 6, 6, None, reason)]
        t += rng.uniform(5.0, 30.0)
        steps.append(Step(t, 2, 2, None))
        if fails and reason == "Seller failed to accept":
            timeout = trade.created + rng.uniform(660.0, 900.0)
            return [*steps, Step(timeout, 6, 6, None, reason)]
        t += rng.uniform(30.0, 240.0)
        steps.append(Step(t, 4, 4, None))
        if fails:
            return [*steps, Step(t + rng.uniform(300.0, 900.0), 6, 6, None, reason)]
        return [*steps, Step(t + rng.uniform(30.0, 600.0), 5, 5, None)]

    def _apply_step(self, trade: Trade, index: int) -> None:
        step = trade.timeline[index]
        trade.status, trade.stage = step.status, step.stage
        trade.escrow_status, trade.reason = step.escrow, step.reason
        trade.last_updated = step.at
        trade.counter += 1
        if step.status == 6 and not trade.refunded:
            trade.refunded = True
            self.accounts[trade.account_id].balance += trade.price
            self.ledger["refunds"].append(
                {
                    "trade_id": trade.id,
                    "account": trade.account_id,
                    "amount": trade.price,
                    "at": step.at,
                    "reason": step.reason,
                }
            )

    def force_check(self, account: Account, trade_id: int) -> str | None:
        """Re-check a trade; the refusal text, or ``None`` when done. Once per hour per
        trade, measured from ``last_updated``."""
        trade = self.trades.get(trade_id)
        if trade is None or trade.account_id != account.account_id:
            return "Trade not found"
        if self.now - trade.last_updated < 3600.0:
            wait = int(3600.0 - (self.now - trade.last_updated))
            return f"A trade can be force-checked once per hour; try again in {wait} s"
        trade.last_updated = self.now
        trade.force_checked_at = self.now
        return None

    def trades_for_projects(self, account: Account, project_ids: set[str]) -> list[Trade]:
        visible_before = self.now - self.config.project_id_delay
        return [
            trade
            for trade in self.trades.values()
            if trade.account_id == account.account_id
            and trade.project_id in project_ids
            and trade.created <= visible_before
            and trade.hidden_until <= self.now
        ]

    # -- buy orders -------------------------------------------------------------------

    def place_order(
        self, account: Account, *, name: str, game: str, price: int, amount: int
    ) -> BuyOrder:
        """Create the account's order for ``name``, or update its active one (one order
        per name), and fill what the market already offers. A filled-up order is gone, as
        on the live service: the next create for its name makes a new order, with a new
        id."""
        existing = next(
            (o for o in self.active_orders(account) if o.name == name),
            None,
        )
        if existing is not None:
            existing.price, existing.amount, existing.game = price, amount, game
            order = existing
        else:
            order = BuyOrder(next(self._order_ids), account.account_id, name, game, price, amount)
            self.buy_orders[order.id] = order
        for listing in self.market.cheapest(name, include_hold=False, game=game):
            if order.filled >= order.amount or listing.price > order.price:
                break
            self._fill(order, listing)
        return order

    def remove_orders(self, account: Account, ids: list[int]) -> int:
        removed = 0
        for order_id in ids:
            order = self.buy_orders.get(order_id)
            if (
                order is not None
                and order.account_id == account.account_id
                and order.filled < order.amount
            ):
                del self.buy_orders[order_id]
                removed += 1
        return removed

    def active_orders(self, account: Account) -> list[BuyOrder]:
        return [
            o
            for o in self.buy_orders.values()
            if o.account_id == account.account_id and o.filled < o.amount
        ]

    def _fill(self, order: BuyOrder, listing: Listing) -> bool:
        account = self.accounts[order.account_id]
        if account.balance < listing.price or listing.game in self.config.disabled_games:
            return False
        self.commit(account, listing, partner=account.partner, project_id=None, source="buy-order")
        order.filled += 1
        return True

    def _fill_orders_with(self, listing: Listing) -> bool:
        if listing.locked(self.now):
            return False
        for order in self.buy_orders.values():
            if (
                order.name == listing.name
                and order.game == listing.game
                and order.filled < order.amount
                and listing.price <= order.price
                and self._fill(order, listing)
            ):
                return True
        return False

    # -- reports ----------------------------------------------------------------------

    def history(self, account: Account) -> list[Trade]:
        visible_before = self.now - self.config.history_delay
        return sorted(
            (
                t
                for t in self.trades.values()
                if t.account_id == account.account_id
                and t.created <= visible_before
                and t.hidden_until <= self.now
            ),
            key=lambda t: t.id,
        )

    def transactions(self, account: Account) -> list[dict[str, Any]]:
        rows = [
            {"type": "purchase", "amount": -c["amount"], "trade_id": c["trade_id"], "at": c["at"]}
            for c in self.ledger["charges"]
            if c["account"] == account.account_id
        ]
        rows += [
            {"type": "refund", "amount": r["amount"], "trade_id": r["trade_id"], "at": r["at"]}
            for r in self.ledger["refunds"]
            if r["account"] == account.account_id
        ]
        rows += [
            {"type": c["type"], "amount": -c["amount"], "trade_id": None, "at": c["at"]}
            for c in self.ledger["payments"]
            if c["account"] == account.account_id
        ]
        rows.sort(key=lambda row: row["at"])
        return rows

    def pay(self, account: Account, amount: int, kind: str) -> bool:
        """Charge a payment (Tron energy rent); ``False`` when the balance is short."""
        if account.balance < amount:
            return False
        account.balance -= amount
        self.ledger["payments"].append(
            {"account": account.account_id, "amount": amount, "type": kind, "at": self.now}
        )
        return True
