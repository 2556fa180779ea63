"""The paper desk: where ``snipe run --paper`` keeps its would-be purchases and judges them.

The engine runs as in the real mode (rules, caps, budgets, the ledger's intent written
first). Where the buyer would send the request, it hands the purchase to the desk
instead (:meth:`PaperDesk.recorded`): it stays an INTENT in the paper ledger, pending.
Everything the engine sees of the market afterwards (search answers, catalogue pages,
snapshots, feed events) is shown to the desk, which turns what concerns a pending item
into a :class:`~engine.paper.Sighting` and moves the purchase on at the first verdict
(:func:`~engine.paper.judge`): BOUGHT (RESERVED for a trade-locked listing) charged the
price offered, or FAILED with ``missed: gone: ...`` / ``missed: price changed: ...``.

Restarts. The pending purchases are the paper ledger's INTENTs: a restart (after kill -9
too) reads them back (:meth:`PaperDesk.load`) and judges them with what it sees next. A
verdict is one ledger transaction from INTENT, which the state machine allows once: a
purchase can never be counted twice, and none is lost.

The wallet. It starts at ``PaperSettings.start_balance``, else at the account's real
balance the first time the paper ledger runs, and is written into the ledger file once
(:meth:`~engine.ledger.Ledger.settle_setting`), so it survives restarts and never
silently restarts. What is left is the start minus every purchase the budgets count
(pending ones included, as in-flight ones are in the real mode); the engine's balance
check reads it instead of the account's.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from .._errors import ConfigError
from .._money import format_usd
from ..client import FeedEvent, FeedListingEvent, FeedRemovalEvent
from ..ledger import Ledger, Purchase, PurchaseState
from ..models import Listing
from ._judge import Judged, Pending, Sighting, Verdict, judge

__all__ = [
    "MODE_KEY",
    "SNAPSHOT_AGE",
    "START_KEY",
    "PaperDesk",
    "PaperSettings",
    "PaperView",
    "claim_paper_ledger",
    "proves_gone",
    "refuse_paper_ledger",
]

log = logging.getLogger("snipe.paper")

MODE_KEY = "mode"
"""The ledger setting that marks a paper ledger (value ``paper``)."""
START_KEY = "paper.start_balance"
"""The ledger setting holding the paper wallet's start (USD x 1000, as text)."""

SNAPSHOT_AGE = 10.0
"""The service rebuilds the snapshot this often: a poll begun at ``t`` may read one built
at ``t - 10`` s, so that is when a snapshot's look is taken to have been."""


@dataclass(frozen=True)
class PaperSettings:
    """What ``snipe run --paper`` is given."""

    latency: float = 0.3
    """Seconds from writing a purchase's intent to its request arriving at the service
    (about half a purchase's round trip): the moment the listing must still be there."""
    start_balance: int | None = None
    """The wallet's start, USD x 1000; ``None``: the account's balance at the first start."""


@dataclass(frozen=True)
class PaperView:
    """The paper mode's figures for observers (part of the engine's view)."""

    pending: int
    judged: Mapping[str, int]
    """Verdicts this run, by :class:`Judged` value."""
    wallet_start: int | None
    wallet_left: int | None


async def claim_paper_ledger(ledger: Ledger) -> None:
    """Make ``ledger`` a paper ledger, or check that it is one. A ledger that holds
    purchases and is not marked paper is a real one: refused (:class:`ConfigError`)."""
    settings = await ledger.settings()
    if settings.get(MODE_KEY) == "paper":
        return
    if sum((await ledger.totals()).by_state.values()) or await ledger.orders():
        raise ConfigError(
            f"{ledger.path}: holds real purchases; a paper run never writes to a real"
            " ledger (give --paper-ledger another file)"
        )
    await ledger.settle_setting(MODE_KEY, "paper")


async def refuse_paper_ledger(ledger: Ledger) -> None:
    """A real run never writes to a paper ledger: :class:`ConfigError` if it is one."""
    if (await ledger.settings()).get(MODE_KEY) == "paper":
        raise ConfigError(
            f"{ledger.path}: is a paper ledger (written by snipe run --paper); a real run"
            " keeps its own ledger: run with --paper, or name the real ledger"
        )


class PaperDesk:
    """The would-be purchases of a paper run and their judgement (module docstring)."""

    def __init__(self, ledger: Ledger, settings: PaperSettings) -> None:
        self.ledger = ledger
        self.settings = settings
        self.pending: dict[str, Pending] = {}
        """By item id: at most one live purchase per item (the ledger makes sure)."""
        self.judged: Counter[Judged] = Counter()
        self.wallet_start: int | None = None

    # -- start ---------------------------------------------------------------------------

    async def load(self) -> int:
        """Read back the pending purchases a previous run left (its INTENTs); returns how
        many. Their request is taken to arrive ``latency`` after their intent."""
        for purchase in await self.ledger.unresolved():
            self._add(purchase)
        if self.pending:
            log.info(
                "paper: %d would-be purchase(s) of before wait for judgement", len(self.pending)
            )
        return len(self.pending)

    def _add(self, p: Purchase) -> None:
        self.pending[p.item_id] = Pending(
            project_id=p.project_id,
            item_id=p.item_id,
            name=p.name,
            game=p.game,
            price=p.price,
            decided_at=p.created_at,
            arrival=p.created_at + self.settings.latency,
            unlock_at=p.unlock_at,
        )

    async def open_wallet(self, account_balance: int | None) -> int | None:
        """The wallet's start: already written in the ledger, else the setting, else the
        account's balance now (``None`` while neither is known: nothing is affordable)."""
        if self.wallet_start is None:
            stored = (await self.ledger.settings()).get(START_KEY)
            start = self.settings.start_balance
            if stored is not None:
                self.wallet_start = int(stored)
                if start is not None and start != self.wallet_start:
                    raise ConfigError(
                        f"{self.ledger.path}: the paper wallet started at"
                        f" {format_usd(self.wallet_start)}; it is never restarted (a new"
                        " start balance needs a new paper ledger)"
                    )
            elif (chosen := start if start is not None else account_balance) is not None:
                self.wallet_start = int(await self.ledger.settle_setting(START_KEY, str(chosen)))
                log.info("paper wallet opened with %s", format_usd(self.wallet_start))
        return await self.wallet_left()

    async def wallet_left(self) -> int | None:
        """The start minus what the budgets count (pending purchases included)."""
        if self.wallet_start is None:
            return None
        return self.wallet_start - await self.ledger.committed()

    # -- would-be purchases --------------------------------------------------------------

    async def recorded(self, project_id: str) -> str | None:
        """The buyer wrote the intent ``project_id`` and sends nothing: the purchase is
        pending. Returns the refusal the service would give (the wallet is
        short: recorded FAILED, like a refused request), else ``None``."""
        purchase = await self.ledger.get(project_id)
        if purchase is None:  # pragma: no cover - the buyer has just written it
            return None
        left = await self.wallet_left()
        if left is None or left < 0:
            have = "unknown" if left is None else format_usd(left + purchase.price)
            why = f"refused: the paper wallet ({have}) cannot pay {format_usd(purchase.price)}"
            await self.ledger.transition(
                project_id, PurchaseState.FAILED, reason=why, details={"source": "paper"}
            )
            return why
        self._add(purchase)
        return None

    # -- what the engine sees ------------------------------------------------------------

    async def saw_search(
        self, found: Mapping[str, Sequence[Listing]], at: float, game: str | None
    ) -> None:
        """A search answer (name -> listings, cheapest first) to a request sent at
        ``at``. A pending item of a searched name is listed at its price if the answer
        has it; gone if the answer shows none of that name, or one dearer than the price
        offered (so the item would be in it, if still listed at that price)."""
        if not self.pending:
            return
        by_id = {x.item_id: x for listings in found.values() for x in listings}
        sightings = []
        for p in list(self.pending.values()):
            if game is not None and p.game is not None and p.game != game:
                continue
            listing = by_id.get(p.item_id)
            if listing is not None:
                sightings.append(Sighting(p.item_id, at, listing.price, "search"))
            elif p.name in found and proves_gone(found[p.name], p.price):
                sightings.append(Sighting(p.item_id, at, None, "search"))
        await self.saw(sightings)

    async def saw_listings(self, listings: Iterable[Listing], at: float, source: str) -> None:
        """Listings seen at ``at`` (a catalogue page): only presence is news (a page
        shows a slice of the market)."""
        if self.pending:
            await self.saw(
                Sighting(x.item_id, at, x.price, source)
                for x in listings
                if x.item_id in self.pending
            )

    async def saw_snapshot(
        self,
        prices: Callable[[list[str]], list[int]],
        covers: Callable[[str | None], bool],
        started: float,
    ) -> None:
        """A snapshot poll that began at ``started`` succeeded: ``prices`` gives each id's
        price in it (-1: not listed), ``covers`` whether it holds a game's listings."""
        candidates = [p for p in self.pending.values() if covers(p.game)]
        if not candidates:
            return
        at = started - SNAPSHOT_AGE
        found = prices([p.item_id for p in candidates])
        await self.saw(
            Sighting(p.item_id, at, None if price < 0 else price, "snapshot")
            for p, price in zip(candidates, found, strict=True)
        )

    async def saw_feed(self, event: FeedEvent) -> None:
        """A feed event: the change happened when it was told (an exact sighting)."""
        if isinstance(event, FeedListingEvent) and event.listing.item_id in self.pending:
            listing = event.listing
            await self.saw(
                [Sighting(listing.item_id, event.received_at, listing.price, "feed", exact=True)]
            )
        elif isinstance(event, FeedRemovalEvent) and event.removal.item_id in self.pending:
            await self.saw(
                [Sighting(event.removal.item_id, event.received_at, None, "feed", exact=True)]
            )

    async def saw(self, sightings: Iterable[Sighting]) -> list[Verdict]:
        """Judge the pending purchases ``sightings`` concern; record each verdict."""
        verdicts = []
        for sighting in sightings:
            pending = self.pending.get(sighting.item_id)
            if pending is None:
                continue
            verdict = judge(pending, sighting)
            if verdict is None:
                continue
            # out of the pending set before the write: no other task judges it again
            del self.pending[sighting.item_id]
            try:
                await self._record(pending, verdict)
            except BaseException:
                self.pending[sighting.item_id] = pending  # not written: still pending
                raise
            verdicts.append(verdict)
        return verdicts

    async def _record(self, pending: Pending, verdict: Verdict) -> None:
        details = {"source": "paper", "msg": verdict.reason[:400]}
        if verdict.bought:
            locked = pending.unlock_at is not None and pending.unlock_at > verdict.sighting.at
            await self.ledger.transition(
                pending.project_id,
                PurchaseState.RESERVED if locked else PurchaseState.BOUGHT,
                charged_price=pending.price,
                details={**details, "charged_from": "request price"},
            )
        else:
            await self.ledger.transition(
                pending.project_id, PurchaseState.FAILED, reason=verdict.reason, details=details
            )
        self.judged[verdict.judged] += 1
        log.info(
            "paper %s (item %s) at %s: %s",
            pending.name,
            pending.item_id,
            format_usd(pending.price),
            verdict.reason,
        )

    async def view(self) -> PaperView:
        return PaperView(
            pending=len(self.pending),
            judged={j.value: self.judged[j] for j in Judged},
            wallet_start=self.wallet_start,
            wallet_left=await self.wallet_left(),
        )


def proves_gone(listings: Sequence[Listing], price: int) -> bool:
    """Whether an answer that lacks an item proves it is not listed at ``price`` or less:
    the answer is empty, or lists one dearer (a search answers the cheapest first, so an
    item at ``price`` would be among them)."""
    return not listings or max(x.price for x in listings) > price
