"""Buy orders: rules whose action is ``buy_order`` let the service buy for us.

On start and then with every reconcile pass, :meth:`OrderManager.sync` makes the service's
orders match the rules, and the ledger match the service:

- **Fills.** An order still listed records the fills its ``filled`` count adds. An order
  no longer listed (the service lists only active orders, so a fully filled one vanishes)
  is ``GONE``: its last fills come from ``my-history``, and it keeps its exposure until the
  history has shown all of them (or, long after it left, the history is all there is).
  History rows also give every fill its trade id and the price paid, and their status
  follows the fill's trade to ``COMPLETED`` or ``REFUNDED`` (a refund gives the budget
  back). Fills are never looked up by ``check-many-project-id``: they have no
  ``project_id`` there.
- **Placing.** An order's whole exposure is reserved in the ledger, checked against every
  cap in the same transaction (:meth:`~engine.ledger.Ledger.reserve_order`), before
  ``create-buy-order`` is sent. A create whose answer is lost leaves the order ``UNKNOWN``:
  the order list (it shows up: adopted) or the history (it filled and vanished) settles it;
  it is never sent again meanwhile.
- **Stopping.** With ``allow_new`` false (start-up gate, dry run, HALTED, kill file) no order
  is created or raised; with ``withdraw`` (HALTED) every open order snipe placed is removed,
  since an open order spends by itself. A dry run only :meth:`plan` s.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, cast

import anyio

from .._clock import Clock
from .._errors import APIError, IntentRefused, InvalidRequest, KeyRejected, RateLimited, Refused
from .._money import format_usd
from ..client import Game, MarketClient
from ..ledger import (
    BuyOrderRecord,
    Exposure,
    HistoryFill,
    Ledger,
    OrderState,
    PurchaseState,
)
from ..models import BuyOrder, HistoryTrade
from ..rules import CompiledRule, RuleSet
from ._budget import caps_for_rule
from ._status import EngineStatus

if TYPE_CHECKING:
    from .._plugins import PluginHost

__all__ = ["Exposure", "OrderManager", "OrderSettings", "PlannedOrder", "describe_orders"]

log = logging.getLogger("snipe.orders")

_HISTORY_PAGE = 100
_CLOCK_SLACK = 5.0
"""Seconds a history row's ``created`` may precede the order's reservation (whole-second
times on the wire, clocks that differ a little)."""


@dataclass(frozen=True)
class OrderSettings:
    settle_after: float = 600.0
    """Seconds after an order left the list (or after a create whose answer was lost)
    before the history, if it shows fewer fills than the order's amount, is taken as all
    there is."""
    follow_every: float = 60.0
    """Seconds between history reads that follow the fills' trades."""
    history_pages: int = 20
    """At most this many pages (100 rows) of history per read."""
    refused_backoff: float = 300.0
    """Seconds before a create the service refused (or that the caps left no room for) is
    tried again."""


@dataclass(frozen=True)
class PlannedOrder:
    """An order a dry run would place."""

    name: str
    rule: str
    price: int
    amount: int
    wanted: int

    def describe(self) -> str:
        capped = "" if self.amount == self.wanted else f" (of {self.wanted}: the caps)"
        return (
            f"buy order {self.name} x{self.amount}{capped} at {format_usd(self.price)}"
            f" (rule {self.rule!r}, exposure {format_usd(self.price * self.amount)})"
        )


@dataclass(frozen=True)
class _Wanted:
    rule: CompiledRule
    name: str
    game: Game
    price: int
    amount: int


@dataclass
class _Read:
    """What one sync learned, for the log."""

    fills: list[str] = field(default_factory=list)


class OrderManager:
    """Keeps the service's buy orders in line with the ``buy_order`` rules, and every fill
    in the ledger."""

    def __init__(
        self,
        *,
        ruleset: RuleSet,
        client: MarketClient,
        ledger: Ledger,
        clock: Clock,
        status: EngineStatus,
        settings: OrderSettings = OrderSettings(),
        host: PluginHost | None = None,
    ) -> None:
        self._ruleset = ruleset
        self._client = client
        self._ledger = ledger
        self._clock = clock
        self._status = status
        self.settings = settings
        self.exposure = Exposure()
        """What live orders may still spend, as the ledger held it at the last sync."""
        self.planned: list[PlannedOrder] = []
        """The orders the last :meth:`plan` (dry run) would place."""
        self._next_follow = 0.0
        self._retry_at: dict[str, float] = {}
        self._host = host
        """Its ``snipe_refund`` hook is called for each fill moved to REFUNDED."""
        self._lock = anyio.Lock()

    def wanted(self) -> dict[str, _Wanted]:
        """The orders the rules ask for, by name."""
        out: dict[str, _Wanted] = {}
        for rule in self._ruleset.buy_order_rules:
            if rule.order_price is None:
                continue
            game = cast("Game", rule.game)  # the rules loader requires match.game here
            for name in sorted(rule.names):
                if name not in out:  # one order per name: the higher-priority rule has it
                    out[name] = _Wanted(rule, name, game, rule.order_price, rule.order_amount)
        return out

    # -- the sync pass -------------------------------------------------------------------

    async def sync(self, *, allow_new: bool = True, withdraw: bool = False) -> None:
        """Record fills, settle orders that left the list, remove orders whose rule is
        gone (all open ones with ``withdraw``), and place or edit the wanted ones unless
        ``allow_new`` is false."""
        with anyio.CancelScope(shield=True):
            async with self._lock:  # one sync at a time (the API withdraws while the engine runs)
                try:
                    await self._sync(allow_new=allow_new and not withdraw, withdraw=withdraw)
                finally:
                    await self.refresh_exposure()

    async def _sync(self, *, allow_new: bool, withdraw: bool) -> None:
        try:
            answer = await self._client.buy_orders()
        except APIError as exc:
            self._status.error(f"buy orders: {exc}")
            return
        listed = {o.name: o for o in answer.offers}
        # An order of the list that could not be read (set aside, counted by the client)
        # may be one of ours: while there is one, a missing order is not taken as gone
        # and nothing is placed (it could duplicate it).
        unreadable = bool(answer.set_aside)
        for order in await self._ledger.orders():
            offer = listed.get(order.name)
            if offer is None and unreadable:
                continue
            await self._match(order, offer)
        try:
            await self._settle()
        except APIError as exc:
            self._status.error(f"buy orders: reading my-history: {exc}")
        if await self._over_caps():
            withdraw, allow_new = True, False
        wanted = self.wanted()
        for order in await self._ledger.orders():
            if order.state is OrderState.OPEN and (withdraw or order.name not in wanted):
                await self._remove(order)
        if withdraw and any(o.state is OrderState.OPEN for o in await self._ledger.orders()):
            self._status.error("buy orders: an order placed before the halt is not removed yet")
        if not allow_new or unreadable:
            return
        live = {o.name: o for o in await self._ledger.orders()}
        for name, want in wanted.items():
            current = live.get(name)
            if self._retry_at.get(name, 0.0) > self._clock.now():
                continue
            if current is None or current.state is OrderState.OPEN:
                await self._place(want, current)

    async def _match(self, order: BuyOrderRecord, offer: BuyOrder | None) -> None:
        """Bring one live order in line with the order list."""
        if order.state in (OrderState.PENDING, OrderState.UNKNOWN):
            if offer is not None:  # the lost create did place it: adopt it
                order = await self._ledger.order_placed(
                    order, order_id=offer.id, price=offer.price, amount=offer.amount or None
                )
                log.info("buy order %s: the create did go through (id %d)", order.name, offer.id)
                await self._record_fills(order, offer.filled)
            return
        if order.state is not OrderState.OPEN:
            return
        if offer is None or offer.id != order.order_id:
            await self._ledger.set_order_state(order, OrderState.GONE)
            log.info(
                "buy order %s (id %s) left the list with %d of %d filled as last seen;"
                " its last fills come from my-history",
                order.name,
                order.order_id,
                order.filled,
                order.amount,
            )
            return
        if (offer.price, offer.amount) != (order.price, order.amount) and offer.amount:
            order = await self._ledger.order_placed(
                order, order_id=offer.id, price=offer.price, amount=offer.amount
            )
        await self._record_fills(order, offer.filled)

    async def _over_caps(self) -> bool:
        """HALT when what the service reports (fills beyond an order's amount, an adopted
        order larger than the one reserved) puts a cap over its limit: the open orders are
        then withdrawn, and a person must look."""
        now = self._clock.now()
        rules = {o.rule for o in await self._ledger.orders()}
        for rule in sorted(rules):
            caps = caps_for_rule(self._ruleset, rule, now)
            for cap, used in zip(caps, await self._ledger.cap_usage(caps), strict=True):
                if used > cap.limit:
                    self._status.halt(
                        f"buy orders: {cap.describe()} exceeded: {used} committed (buy-order"
                        f" exposure included) > {cap.limit}; withdrawing the open orders"
                    )
                    return True
        return False

    async def refresh_exposure(self) -> Exposure:
        self.exposure = await self._ledger.order_exposure()
        return self.exposure

    async def withdraw(self) -> tuple[list[BuyOrderRecord], list[BuyOrderRecord]]:
        """Withdraw every open buy order snipe placed (``snipe run --remove-orders``, or a
        clean stop with ``orders.on_stop: remove``), after recording their fills (a
        create whose answer was lost and that the list shows is adopted, then removed).
        Returns the orders no longer open, and those still open or maybe open (the
        service could not be asked, or a lost create it does not list yet)."""
        before = [o for o in await self._ledger.orders() if o.active]
        if not before:  # nothing to withdraw: no request (the service may be down)
            return [], []
        await self.sync(allow_new=False, withdraw=True)
        still = [o for o in await self._ledger.orders() if o.active]
        kept = {o.id for o in still}
        return [o for o in before if o.id not in kept], still

    async def left_open(self) -> list[BuyOrderRecord]:
        """The orders snipe placed that are open, or may be, on the service."""
        return [o for o in await self._ledger.orders() if o.active]

    async def remove_all(self) -> int:
        """Withdraw every open order snipe placed (the API's remove, a pause), their fills
        recorded first: :meth:`withdraw`, counted."""
        removed, _ = await self.withdraw()
        return len(removed)

    async def plan(self, mode: str = "dry run") -> list[PlannedOrder]:
        """What :meth:`sync` would place now, without placing anything (a dry run, or a
        paper run: ``mode`` heads the log lines)."""
        out = []
        live = {o.name: o for o in await self._ledger.orders()}
        for want in self.wanted().values():
            amount = await self._affordable(want, live.get(want.name))
            planned = PlannedOrder(want.name, want.rule.name, want.price, amount, want.amount)
            out.append(planned)
            log.info("%s: would place %s", mode, planned.describe())
        self.planned = out
        return out

    # -- fills ---------------------------------------------------------------------------

    async def _record_fills(self, order: BuyOrderRecord, filled: int) -> None:
        if filled > order.filled:
            for pid in await self._ledger.record_fills(order, filled):
                log.info(
                    "buy order filled: %s at up to %s (%s)",
                    order.name,
                    format_usd(order.price),
                    pid,
                )

    async def _settle(self) -> None:
        """Read my-history when an order needs it (left the list, or a lost create) or
        the fills' trades are due a look; attach rows to orders, settle, follow."""
        now = self._clock.now()
        orders = await self._ledger.orders()
        unsettled = [o for o in orders if o.state is not OrderState.OPEN]
        open_fills = await self._ledger.open_fills()
        following = bool(open_fills) and now >= self._next_follow
        if not unsettled and not following:
            return
        starts = [o.created_at for o in (orders if following else unsettled)]
        starts += [created for _, _, _, created in open_fills] if following else []
        rows = await self._history(min(starts) - _CLOCK_SLACK)
        if following:
            self._next_follow = now + self.settings.follow_every
        known = await self._ledger.known_trade_ids()
        own_items = await self._ledger.own_items()
        fresh = [
            r
            for r in rows
            if (r.action in (None, "buy")) and r.id not in known and r.item_id not in own_items
        ]
        for order in orders if following else unsettled:
            mine = [
                HistoryFill(r.id, r.price, r.status, r.item_id)
                for r in fresh
                if r.name == order.name
                and (r.created is None or r.created >= order.created_at - _CLOCK_SLACK)
            ]
            if mine:
                fresh = [r for r in fresh if r.id not in {m.trade_id for m in mine}]
                for pid in await self._ledger.attach_fills(order, mine):
                    log.info("buy order %s: fill %s found in my-history", order.name, pid)
        for order in unsettled:
            await self._close_if_settled(order, now)
        await self._follow(rows)

    async def _close_if_settled(self, order: BuyOrderRecord, now: float) -> None:
        current = next((o for o in await self._ledger.orders() if o.id == order.id), None)
        if current is None:
            return
        waited = now - (current.gone_at or current.created_at) >= self.settings.settle_after
        if current.filled >= current.amount or (waited and current.state is OrderState.GONE):
            why = f"{current.filled} of {current.amount} filled (my-history)"
            await self._ledger.set_order_state(current, OrderState.CLOSED, reason=why)
            log.info("buy order %s settled: %s", current.name, why)
        elif waited and current.filled:
            why = (
                f"the create answer was lost; {current.filled} fill(s) in my-history, no"
                " longer listed"
            )
            await self._ledger.set_order_state(current, OrderState.CLOSED, reason=why)
            log.info("buy order %s settled: %s", current.name, why)
        elif waited:
            why = (
                "the create answer was lost and the order was neither listed nor in"
                f" my-history {self.settings.settle_after:.0f} s later"
            )
            await self._ledger.set_order_state(current, OrderState.FAILED, reason=why)
            log.info("buy order %s not placed: %s", current.name, why)

    async def _follow(self, rows: list[HistoryTrade]) -> None:
        """Move fills whose trade the history shows finished."""
        by_id = {r.id: r for r in rows}
        for pid, name, trade_id, _ in await self._ledger.open_fills():
            row = by_id.get(trade_id) if trade_id is not None else None
            if row is None or row.status not in (5, 6):
                continue
            details = {"source": "my-history", "trade_status": row.status}
            if row.status == 5:
                await self._ledger.transition(pid, PurchaseState.COMPLETED, details=details)
            else:
                moved = await self._ledger.transition(
                    pid,
                    PurchaseState.REFUNDED,
                    reason="refunded: the trade failed (my-history status 6)",
                    details=details,
                )
                log.info("buy order fill refunded: %s (%s); its budget is free again", name, pid)
                if self._host is not None:
                    self._host.notify_refund(moved, moved.reason)  # failures are isolated

    async def _history(self, since: float) -> list[HistoryTrade]:
        """The account's trades since ``since``, oldest first. Read newest first, so that
        on a busy account the page limit drops the oldest rows, never the latest fills."""
        start = datetime.fromtimestamp(max(0.0, since), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        rows: list[HistoryTrade] = []
        for page in range(self.settings.history_pages):
            answer = await self._client.my_history(
                skip=page * _HISTORY_PAGE, start=start, sort="DESC"
            )
            rows.extend(answer.data.trades)
            if len(answer.data.trades) < _HISTORY_PAGE:
                break
        unique = {r.id: r for r in rows}  # a row may shift pages while they are read
        return sorted(unique.values(), key=lambda r: (r.created or 0, r.id))

    # -- placing and removing ------------------------------------------------------------

    async def _remove(self, order: BuyOrderRecord) -> bool:
        if order.order_id is None:
            return False
        try:
            answer = await self._client.remove_buy_order([order.order_id])
        except APIError as exc:
            self._status.error(f"removing the buy order for {order.name!r}: {exc}")
            return False
        # Removed or not, it is settled through the list and the history like any order
        # that left the list: fills may have happened since the last sync.
        if answer.removed:
            await self._ledger.set_order_state(order, OrderState.GONE, reason="removed by snipe")
            log.info("buy order removed: %s", order.name)
        return bool(answer.removed)

    async def _place(self, want: _Wanted, current: BuyOrderRecord | None) -> None:
        amount = await self._affordable(want, current)
        if current is not None and (current.price, current.amount) == (want.price, amount):
            return
        if amount <= (current.filled if current else 0):
            if current is None:
                self._retry_at[want.name] = self._clock.now() + self.settings.refused_backoff
                self._status.error(
                    f"buy order for {want.name!r} not placed: the caps leave no room for one"
                    f" at {format_usd(want.price)}"
                )
            return
        caps = caps_for_rule(self._ruleset, want.rule.name, self._clock.now())
        try:
            order = await self._ledger.reserve_order(
                name=want.name,
                rule=want.rule.name,
                game=want.game,
                price=want.price,
                amount=amount,
                caps=caps,
            )
        except IntentRefused as exc:
            self._status.error(f"buy order for {want.name!r} not placed: {exc}")
            return
        try:
            answer = await self._client.create_buy_order(
                name=want.name, amount=amount, price=want.price, game=want.game
            )
        except (Refused, RateLimited, KeyRejected, InvalidRequest) as exc:
            await self._not_placed(order, current, exc)
            return
        except APIError as exc:
            # The request may have reached the service: the order may exist and fill.
            if current is None:
                await self._ledger.set_order_state(order, OrderState.UNKNOWN, reason=str(exc))
            self._status.error(
                f"buy order for {want.name!r}: the answer was lost ({exc}); it is unknown"
                " until the order list or my-history settles it"
            )
            return
        if not answer.success or answer.id is None:
            await self._not_placed(order, current, answer.msg or "no order id in the answer")
            return
        order = await self._ledger.order_placed(
            order, order_id=answer.id, price=want.price, amount=amount
        )
        log.info("buy order placed: %s x%d at %s", want.name, amount, format_usd(want.price))
        await self._record_fills(order, answer.filled)

    async def _not_placed(
        self, order: BuyOrderRecord, current: BuyOrderRecord | None, why: object
    ) -> None:
        self._retry_at[order.name] = self._clock.now() + self.settings.refused_backoff
        if current is None:
            await self._ledger.set_order_state(order, OrderState.FAILED, reason=str(why))
        else:  # the edit did not happen: the order stands as it was
            assert current.order_id is not None
            await self._ledger.order_placed(
                order, order_id=current.order_id, price=current.price, amount=current.amount
            )
        self._status.error(f"buy order for {order.name!r} refused: {why}")
        if isinstance(why, KeyRejected):
            self._status.halt(f"the API key was rejected: {why.message}")

    async def _affordable(self, want: _Wanted, current: BuyOrderRecord | None) -> int:
        """How many (in all, fills included) the order for ``want`` may ask for within
        every cap, counting what is committed and the other orders' exposure."""
        filled = current.filled if current else 0
        held_money = current.exposure if current else 0
        held_units = max(0, current.amount - current.filled) if current and current.live else 0
        caps = caps_for_rule(self._ruleset, want.rule.name, self._clock.now())
        used = await self._ledger.cap_usage(caps)
        units = max(0, want.amount - filled)
        for cap, before in zip(caps, used, strict=True):
            if cap.kind == "count":
                room = cap.limit - before + held_units
            else:
                room = (cap.limit - before + held_money) // want.price if want.price else units
            units = min(units, max(0, room))
        return filled + units


def describe_orders(orders: list[BuyOrderRecord]) -> str:
    """``2 buy orders (A x3 at $1.00, B x1 at $0.50)``, for a stop line."""
    what = ", ".join(
        f"{o.name} x{max(0, o.amount - o.filled)} at {format_usd(o.price)}" for o in orders
    )
    count = f"{len(orders)} buy order{'' if len(orders) == 1 else 's'}"
    return f"{count} ({what})" if orders else count
