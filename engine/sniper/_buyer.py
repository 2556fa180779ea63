"""Turning accepted decisions into purchases, exactly once each.

For every accepted decision, in this order and never another:

1. plugins may veto it (a plugin that raises blocks it);
2. the intent is written to the ledger, with every cap checked in the same transaction
   (in-flight purchases count), so a crash after this point leaves a record to reconcile;
3. the request is sent: ``buy-one-p2p`` for one listing, bulk ``POST /v1/buy`` for
   decisions whose rule allows bulk; ``allow_trade_locked`` only where the rule's hold
   tolerance accepted that listing; the price sent is the listing's, which the rules
   guarantee is within the rule's maximum;
4. the answer moves the ledger on: BOUGHT or RESERVED (charged the answer's ``price``, or,
   when the answer has none, the request's price until the trade's price is known; the
   events say which), FAILED for a refusal that proves nothing was bought (or a request
   that certainly never left), UNKNOWN for anything else: a lost or unreadable answer, a
   refusal that may hide a purchase, a bulk request refused as a whole.

A bulk batch whose intent the ledger refuses because one item already has a live purchase
goes out without that item; the rest are bought.

Steps 2 to 4 are shielded from cancellation: a stop request (SIGTERM) lets a purchase in
flight finish and be recorded.

A paper run (``snipe run --paper``) takes steps 1 and 2 exactly so, into its paper
ledger; step 3 sends nothing, and step 4 is the :class:`~engine.paper.PaperDesk`'s, later:
the purchase stays an INTENT until what the engine sees next judges it.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from itertools import compress
from operator import itemgetter

import anyio

from .._clock import Clock
from .._errors import (
    APIError,
    IntentRefusal,
    IntentRefused,
    InvalidRequest,
    KeyRejected,
    OutcomeUnknown,
    PurchaseRefused,
)
from .._money import format_usd
from .._plugins import PluginHost
from ..client import BulkItem, BulkItemResult, BulkStatus, MarketClient, TradeLink
from ..ledger import Intent, Ledger, PurchaseState, new_project_id
from ..models import BuyResult
from ..paper import PaperDesk
from ..rules import Decision, EvalContext, RuleSet
from ._budget import caps_for_rule
from ._judged import TurnedDown
from ._status import EngineStatus, Outcome, PurchaseRecord

__all__ = ["Buyer", "BuyerSettings"]

_DECIDED: ContextVar[tuple[EvalContext, int | None] | None] = ContextVar(
    "snipe_decided", default=None
)
"""The context the purchase being written was decided in, and the ledger's intent count when
its budget was read: per task, since the feed's events and the steps buy side by side."""

_BOUGHT: ContextVar[set[str] | None] = ContextVar("snipe_bought", default=None)
"""The item ids bought (or reserved) by the :meth:`Buyer.execute` under way in this task,
for its caller: per task, like ``_DECIDED``."""

log = logging.getLogger("snipe.buyer")

_BUY_ONE = "GET /v1/buy-one-p2p"
_BULK = "POST /v1/buy"


@dataclass(frozen=True)
class BuyerSettings:
    dry_run: bool = False
    """Decide and record what would be bought, but never send a purchase (the engine sets
    it from :attr:`EngineSettings.dry_run`)."""
    max_bulk: int = 20
    """At most this many listings in one bulk purchase."""
    max_consecutive_failures: int = 5
    """This many purchase attempts in a row that fail without a refusal halt buying."""
    project_id_entropy: Callable[[], bytes] | None = None
    """The 10 random bytes of each new ``project_id`` (``os.urandom`` when unset); a
    backtest passes a seeded source so that its ledger is reproducible."""


class Buyer:
    """Sends purchases for accepted decisions and records every step in the ledger."""

    def __init__(
        self,
        *,
        ruleset: RuleSet,
        client: MarketClient,
        ledger: Ledger,
        clock: Clock,
        host: PluginHost,
        trade_link: TradeLink,
        status: EngineStatus,
        settings: BuyerSettings = BuyerSettings(),
    ) -> None:
        self._ruleset = ruleset
        self._client = client
        self._ledger = ledger
        self._clock = clock
        self._host = host
        self._link = trade_link
        self._status = status
        self._settings = settings
        self.recheck: Callable[[Sequence[Decision], EvalContext], Awaitable[bool]] | None = None
        """Set by the engine: whether ``decisions`` still fit their caps with the budget as
        the ledger has it now (see :meth:`_lost_to_own_purchase`)."""
        self.paper: PaperDesk | None = None
        """Set by the engine of a paper run: the intent is written, nothing is sent, and
        the desk judges the would-be purchase by what the engine sees next."""

    async def execute(
        self,
        decisions: Sequence[Decision],
        context: EvalContext,
        *,
        budget_read_at: int | None = None,
    ) -> set[str]:
        """Buy what ``decisions`` accept, as long as buying is allowed. ``budget_read_at``:
        the ledger's intent count (:attr:`Ledger.intents`) when ``context.budget`` was read
        (``None``: unknown; ``-1``: before any).
        Returns the item ids the service said were bought or reserved in this call (not
        those refused, capped, vetoed, not sent, of unknown outcome, dry-run or paper)."""
        bought: set[str] = set()
        token = _DECIDED.set((context, budget_read_at))
        told = _BOUGHT.set(bought)
        try:
            await self._execute(decisions, context)
        finally:
            _BOUGHT.reset(told)
            _DECIDED.reset(token)
        return bought

    async def _execute(self, decisions: Sequence[Decision], context: EvalContext) -> None:
        self._host.notify_decisions(decisions, context)
        if isinstance(decisions, TurnedDown):  # none accepted: its decisions are not made
            return
        # the accepted few of a batch's many pairs, picked in C (a Decision is a tuple)
        accepted = compress(decisions, map(itemgetter(2), decisions))
        cleared = [d for d in accepted if self._cleared(d, context)]
        singles = [d for d in cleared if d.action != "bulk"]
        bulk = [d for d in cleared if d.action == "bulk"]
        for decision in singles:
            if not self._status.buying_allowed:
                return
            await self._buy_one(decision)
        for locked in (False, True):
            group = [d for d in bulk if d.allow_trade_locked is locked]
            for start in range(0, len(group), self._settings.max_bulk):
                if not self._status.buying_allowed:
                    return
                await self._buy_bulk(group[start : start + self._settings.max_bulk], locked)

    def _cleared(self, decision: Decision, context: EvalContext) -> bool:
        blocks = self._host.veto(decision, context)
        if blocks:
            self._record(decision, Outcome.VETOED, "; ".join(blocks))
            self._host.notify_purchase(decision, "vetoed", "; ".join(blocks))
        return not blocks

    # -- one listing ---------------------------------------------------------------------

    async def _buy_one(self, decision: Decision) -> None:
        with anyio.CancelScope(shield=True):
            written = await self._write_intents([decision])
            if not written:
                return
            ((pid, _),) = written
            if self.paper is not None:
                await self._paper(decision, pid)
                return
            if self._settings.dry_run:
                await self._dry_run(decision, pid)
                return
            try:
                result = await self._client.buy_one_p2p(
                    item_id=decision.item_id,
                    price=decision.price,
                    partner=self._link.partner,
                    token=self._link.token,
                    project_id=pid,
                    allow_trade_locked=decision.allow_trade_locked,
                )
            except PurchaseRefused as exc:
                await self._refused(decision, pid, exc.msg or exc.reason.value, exc.new_price)
            except OutcomeUnknown as exc:
                await self._unknown(decision, pid, exc.message)
            except (APIError, InvalidRequest) as exc:
                await self._not_sent(decision, pid, exc)
            else:
                await self._accepted(decision, pid, result)

    # -- several listings in one request -------------------------------------------------

    async def _buy_bulk(self, decisions: Sequence[Decision], allow_trade_locked: bool) -> None:
        with anyio.CancelScope(shield=True):
            written = await self._write_intents(decisions)
            if not written:
                return
            by_pid = dict(written)
            if self.paper is not None:
                for pid, decision in by_pid.items():
                    await self._paper(decision, pid)
                return
            if self._settings.dry_run:
                for pid, decision in by_pid.items():
                    await self._dry_run(decision, pid)
                return
            items = [BulkItem(d.item_id, d.price, pid) for pid, d in by_pid.items()]
            try:
                answer = await self._client.buy(
                    items,
                    partner=self._link.partner,
                    token=self._link.token,
                    allow_trade_locked=allow_trade_locked,
                )
            except PurchaseRefused as exc:
                for pid, decision in by_pid.items():
                    await self._refused(decision, pid, exc.msg or exc.reason.value, exc.new_price)
                return
            except OutcomeUnknown as exc:
                for pid, decision in by_pid.items():
                    await self._unknown(decision, pid, exc.message)
                return
            except (APIError, InvalidRequest) as exc:
                for pid, decision in by_pid.items():
                    await self._not_sent(decision, pid, exc)
                return
            for item in answer.results:
                await self._bulk_item(by_pid[item.project_id], item)

    async def _bulk_item(self, decision: Decision, item: BulkItemResult) -> None:
        pid = item.project_id
        if item.status is BulkStatus.BOUGHT and item.answer is not None:
            answer = item.answer
            reserved = answer.purchase_status == "reserved" or answer.unlock_at is not None
            await self._bought(
                decision,
                pid,
                answer.price,
                answer.id,
                reserved,
                answer.unlock_at,
                answer.send_until,
            )
        elif item.status is BulkStatus.REFUSED:
            why = item.msg or (item.refusal.value if item.refusal else "refused")
            await self._refused(decision, pid, why, item.new_price)
        elif item.answer is None:
            await self._unknown(decision, pid, "the bulk answer does not mention this item")
        else:
            said = item.msg or "no verdict"
            await self._unknown(
                decision, pid, f"the bulk answer for this item ({said!r}) may hide a purchase"
            )

    # -- ledger steps --------------------------------------------------------------------

    async def _write_intents(self, decisions: Sequence[Decision]) -> list[tuple[str, Decision]]:
        """Write the intents (all or none); returns (project_id, decision) for each written.

        An item of a batch that already has a live purchase (the ledger refuses it) is
        dropped and the rest written; any other refusal refuses the batch."""
        remaining = list(decisions)
        while remaining:
            try:
                return await self._try_write_intents(remaining)
            except IntentRefused as exc:
                dropped = [d for d in remaining if d.item_id == exc.item_id]
                if (
                    exc.reason is not IntentRefusal.DUPLICATE_ITEM
                    or len(remaining) == 1
                    or not dropped
                ):
                    await self._intent_refused(remaining, exc)
                    return []
                await self._intent_refused(dropped, exc)
                remaining = [d for d in remaining if d.item_id != exc.item_id]
        return []

    async def _try_write_intents(self, decisions: Sequence[Decision]) -> list[tuple[str, Decision]]:
        now = self._clock.now()
        batch = f"bulk-{self._new_id(now)[4:]}" if len(decisions) > 1 else None
        intents = [
            Intent(
                project_id=self._new_id(now),
                item_id=d.item_id,
                name=d.name,
                price=d.price,
                rule=d.rule,
                game=self._game_of(d),
                allow_trade_locked=d.allow_trade_locked,
                unlock_at=d.listing.unlock_at,
                send_until=d.listing.send_until,
                batch_id=batch,
            )
            for d in decisions
        ]
        rules = {d.rule for d in decisions}
        # The ledger adds what live buy orders may still buy to every cap it checks.
        caps = tuple(
            dict.fromkeys(c for r in sorted(rules) for c in caps_for_rule(self._ruleset, r, now))
        )
        await self._ledger.record_intents(intents, caps=caps)
        return [(i.project_id, d) for i, d in zip(intents, decisions, strict=True)]

    async def _lost_to_own_purchase(self, decisions: Sequence[Decision]) -> bool:
        """Whether a cap refusal is the engine's own race: the feed and the steps decide
        side by side, so two decisions may both see the last room under a cap. True when
        this engine wrote a purchase intent after the decision's budget was read (the
        ledger's intent count, by the time of the refusal, is past the one at the read:
        only an intent fills a cap, any other write of ours explains nothing) and, asked
        again with the budget as the ledger has it now, the rules turn the purchase down."""
        decided = _DECIDED.get()
        if decided is None or self.recheck is None:
            return False
        context, read_at = decided
        if read_at is None or self._ledger.intents <= read_at:
            return False
        return not await self.recheck(decisions, context)

    def _new_id(self, now: float) -> str:
        entropy = self._settings.project_id_entropy
        return new_project_id(now, entropy() if entropy is not None else None)

    async def _intent_refused(self, decisions: Sequence[Decision], exc: IntentRefused) -> None:
        if exc.reason is IntentRefusal.CAP:
            if await self._lost_to_own_purchase(decisions):
                log.info(
                    "not bought: a cap filled meanwhile by this engine's own purchase (%s)", exc
                )
            else:
                # The rules said this fits; the ledger says it does not, and no purchase of
                # this engine explains it: something else writes the ledger or a check is
                # wrong, and money is at stake: stop buying until a person looks.
                self._status.halt(f"caps breach attempt refused by the ledger: {exc}")
            outcome = Outcome.CAPPED
        else:
            outcome = Outcome.DUPLICATE
        for decision in decisions:
            self._record(decision, outcome, str(exc))

    async def _accepted(self, decision: Decision, pid: str, result: BuyResult) -> None:
        reserved = result.purchase_status == "reserved" or result.unlock_at is not None
        await self._bought(
            decision, pid, result.price, result.id, reserved, result.unlock_at, result.send_until
        )

    async def _bought(
        self,
        decision: Decision,
        pid: str,
        charged: int | None,
        marketplace_id: int | None,
        reserved: bool,
        unlock_at: int | None,
        send_until: int | None,
    ) -> None:
        state = PurchaseState.RESERVED if reserved else PurchaseState.BOUGHT
        # A success without ``price`` (the documented example has none): the request's
        # price is the most it can have charged; the trade's price (check-many) replaces
        # it with the trade's next move, whose event says "charged_from": "trade".
        charged_from = "answer" if charged is not None else "request price"
        await self._ledger.transition(
            pid,
            state,
            charged_price=charged if charged is not None else decision.price,
            marketplace_id=marketplace_id,
            unlock_at=unlock_at,
            send_until=send_until,
            details={
                "endpoint": _BUY_ONE if decision.action != "bulk" else _BULK,
                "charged_from": charged_from,
            },
        )
        self._status.consecutive_failures = 0
        outcome = Outcome.RESERVED if reserved else Outcome.BOUGHT
        self._record(decision, outcome, None)
        bought = _BOUGHT.get()
        if bought is not None:
            bought.add(decision.item_id)
        self._host.notify_purchase(decision, "bought", "reserved" if reserved else None)

    async def _refused(self, decision: Decision, pid: str, why: str, new_price: int | None) -> None:
        await self._ledger.transition(
            pid, PurchaseState.FAILED, reason=f"refused: {why}", details={"new_price": new_price}
        )
        self._status.consecutive_failures = 0
        self._record(decision, Outcome.REFUSED, why)
        self._host.notify_purchase(decision, "refused", why)

    async def _unknown(self, decision: Decision, pid: str, why: str) -> None:
        await self._ledger.transition(pid, PurchaseState.UNKNOWN, details={"msg": why})
        self._record(decision, Outcome.UNKNOWN, why)
        self._host.notify_purchase(decision, "unknown", why)
        self._count_failure(why)

    async def _not_sent(self, decision: Decision, pid: str, exc: APIError | InvalidRequest) -> None:
        # Only errors raised before anything could reach the service get here (connect
        # errors, limits checked before sending, 403): the purchase certainly did not happen.
        await self._ledger.transition(
            pid,
            PurchaseState.FAILED,
            reason=f"not sent: {exc}",
            details={"endpoint": getattr(exc, "endpoint", None)},
        )
        self._record(decision, Outcome.NOT_SENT, str(exc))
        self._host.notify_purchase(decision, "refused", str(exc))
        if isinstance(exc, KeyRejected):
            self._status.halt(f"the API key was rejected: {exc.message}")
        elif isinstance(exc, InvalidRequest):
            # the rules let through something the interface forbids: a bug to look at
            self._status.halt(f"a purchase broke an interface limit: {exc}")
        self._count_failure(str(exc))

    async def _dry_run(self, decision: Decision, pid: str) -> None:
        # Dry runs write to an in-memory ledger: counting the would-be purchase as bought
        # keeps every cap and the no-second-purchase check honest for the rest of the run.
        await self._ledger.transition(
            pid, PurchaseState.BOUGHT, charged_price=decision.price, details={"source": "dry run"}
        )
        self._record(decision, Outcome.DRY_RUN, "dry run: not sent")

    async def _paper(self, decision: Decision, pid: str) -> None:
        # A paper run: the intent is in the paper ledger, exactly as before a real request;
        # the request is not sent, and the desk judges the purchase later.
        assert self.paper is not None
        refused = await self.paper.recorded(pid)
        if refused is not None:
            self._record(decision, Outcome.REFUSED, refused)
            return
        self._record(decision, Outcome.PAPER, "paper: not sent; judged by the next look")

    def _count_failure(self, why: str) -> None:
        self._status.consecutive_failures += 1
        self._status.error(why)
        if self._status.consecutive_failures >= self._settings.max_consecutive_failures:
            self._status.halt(
                f"{self._status.consecutive_failures} purchase attempts in a row failed"
                f" without an answer; last: {why}"
            )

    def _record(self, decision: Decision, outcome: Outcome, detail: str | None) -> None:
        self._status.outcomes[outcome] += 1
        # a dry run sees the listings it "bought" again and again: not news
        quiet = outcome is Outcome.DUPLICATE and (self._settings.dry_run or self.paper is not None)
        if not quiet:
            self._keep(decision, outcome, detail)
        log.log(
            logging.DEBUG if quiet else logging.INFO,
            "%s %s (item %s) at %s: %s",
            "would buy" if outcome in (Outcome.DRY_RUN, Outcome.PAPER) else outcome.value,
            decision.name,
            decision.item_id,
            format_usd(decision.price),
            detail or "; ".join(decision.reasons),
        )

    def _keep(self, decision: Decision, outcome: Outcome, detail: str | None) -> None:
        self._status.record_purchase(
            PurchaseRecord(
                at=self._clock.now(),
                name=decision.name,
                item_id=decision.item_id,
                rule=decision.rule,
                price=decision.price,
                outcome=outcome,
                detail=detail,
                reasons=decision.reasons,
                reference=decision.listing.platform_price,
                float_value=decision.listing.float_value,
            )
        )

    def _game_of(self, decision: Decision) -> str | None:
        rule = next((r for r in self._ruleset.rules if r.name == decision.rule), None)
        return rule.game if rule is not None else None
