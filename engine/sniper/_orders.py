"""Buy orders: rules whose action is ``buy_order`` let the service buy for us.

On start and then with every reconcile pass, :meth:`OrderManager.sync` makes the service's
orders match the rules: one order per name at the rule's price and amount (within the
buy-order limit of the rate limiter), fills recorded in the ledger as purchases, and the
orders snipe placed removed when their rule is gone. An open order's exposure (what it may
still buy) counts against the caps before it is placed, and while it is open.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import cast

from .._clock import Clock
from .._errors import APIError
from .._money import format_usd
from ..client import Game, MarketClient
from ..ledger import BuyOrderRecord, Ledger, utc_day_start
from ..rules import CompiledRule, RuleSet
from ._status import EngineStatus

__all__ = ["Exposure", "OrderManager"]

log = logging.getLogger("snipe.orders")


@dataclass(frozen=True)
class Exposure:
    """What open buy orders may still spend, in total and per rule (USD x 1000)."""

    total: int = 0
    per_rule: dict[str, int] | None = None

    def of(self, rule: str) -> int:
        return (self.per_rule or {}).get(rule, 0)


@dataclass(frozen=True)
class _Wanted:
    rule: CompiledRule
    name: str
    game: Game
    price: int
    amount: int


class OrderManager:
    """Keeps the service's buy orders in line with the ``buy_order`` rules."""

    def __init__(
        self,
        *,
        ruleset: RuleSet,
        client: MarketClient,
        ledger: Ledger,
        clock: Clock,
        status: EngineStatus,
    ) -> None:
        self._ruleset = ruleset
        self._client = client
        self._ledger = ledger
        self._clock = clock
        self._status = status
        self.exposure = Exposure()

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

    async def sync(self, *, allow_new: bool = True) -> None:
        """Record fills, remove orders whose rule is gone, place or edit the wanted ones
        (unless ``allow_new`` is false, e.g. while HALTED)."""
        try:
            answer = await self._client.buy_orders()
        except APIError as exc:
            self._status.error(f"buy orders: {exc}")
            return
        active = {o.name: o for o in answer.offers}
        # An order of the list that could not be read (set aside, counted by the client)
        # may be one of ours: while there is one, a missing order is not taken as closed
        # and nothing is placed (it could duplicate it).
        unreadable = bool(answer.set_aside)
        ours = {o.name: o for o in await self._ledger.orders()}
        wanted = self.wanted()
        for name, order in ours.items():
            live = active.get(name)
            if live is not None and live.id == order.order_id:
                await self._record_fills(order, live.filled)
            elif not unreadable:
                await self._ledger.close_order(name)  # filled up, or removed elsewhere
        for name, order in ours.items():
            if name not in wanted and name in active:
                await self._remove(order)
        if allow_new and not unreadable:
            ours = {o.name: o for o in await self._ledger.orders()}
            for name, want in wanted.items():
                current = ours.get(name)
                if current is None or (current.price, current.amount) != (want.price, want.amount):
                    await self._place(want, current)
        await self.refresh_exposure()

    async def remove_all(self) -> int:
        """Remove every open order snipe placed (``snipe run --remove-orders``)."""
        removed = 0
        for order in await self._ledger.orders():
            if await self._remove(order):
                removed += 1
        await self.refresh_exposure()
        return removed

    async def refresh_exposure(self) -> Exposure:
        per_rule: dict[str, int] = {}
        for order in await self._ledger.orders():
            per_rule[order.rule] = per_rule.get(order.rule, 0) + order.exposure
        self.exposure = Exposure(sum(per_rule.values()), per_rule)
        return self.exposure

    async def _record_fills(self, order: BuyOrderRecord, filled: int) -> None:
        if filled > order.filled:
            new = await self._ledger.record_fills(order.name, filled)
            for pid in new:
                log.info(
                    "buy order filled: %s at %s (%s)", order.name, format_usd(order.price), pid
                )

    async def _remove(self, order: BuyOrderRecord) -> bool:
        try:
            answer = await self._client.remove_buy_order([order.order_id])
        except APIError as exc:
            self._status.error(f"removing the buy order for {order.name!r}: {exc}")
            return False
        if answer.removed:
            await self._ledger.close_order(order.name)
            log.info("buy order removed: %s", order.name)
        return bool(answer.removed)

    async def _place(self, want: _Wanted, current: BuyOrderRecord | None) -> None:
        amount = await self._affordable(want, current)
        if amount == 0:
            self._status.error(
                f"buy order for {want.name!r} not placed: the caps leave no room for one at"
                f" {format_usd(want.price)}"
            )
            return
        try:
            answer = await self._client.create_buy_order(
                name=want.name, amount=amount, price=want.price, game=want.game
            )
        except APIError as exc:
            self._status.error(f"buy order for {want.name!r}: {exc}")
            return
        if not answer.success or answer.id is None:
            self._status.error(f"buy order for {want.name!r} refused: {answer.msg}")
            return
        order = await self._ledger.record_order(
            name=want.name,
            order_id=answer.id,
            rule=want.rule.name,
            game=want.game,
            price=want.price,
            amount=amount,
        )
        log.info("buy order placed: %s x%d at %s", want.name, amount, format_usd(want.price))
        await self._record_fills(order, answer.filled)

    async def _affordable(self, want: _Wanted, current: BuyOrderRecord | None) -> int:
        """How many of ``want.amount`` fit every cap, counting what is committed and the
        other open orders' exposure."""
        now = self._clock.now()
        total = await self._ledger.committed_by_rule()
        today = await self._ledger.committed_by_rule(since=utc_day_start(now))
        others = self.exposure.total - (current.exposure if current else 0)
        budgets = self._ruleset.budgets
        rule = want.rule
        room = min(
            budgets.total - sum(c.amount for c in total.values()) - others,
            budgets.per_day - sum(c.amount for c in today.values()) - others,
        )
        spent = total.get(rule.name)
        if rule.max_spend is not None:
            mine = self.exposure.of(rule.name) - (current.exposure if current else 0)
            room = min(room, rule.max_spend - (spent.amount if spent else 0) - mine)
        fits = max(0, room) // want.price if want.price else want.amount
        amount = min(want.amount, fits)
        if rule.max_count is not None:
            amount = min(amount, max(0, rule.max_count - (spent.count if spent else 0)))
        return amount
