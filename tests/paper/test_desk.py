"""The paper desk on a ledger: what each kind of observation (feed event, snapshot, catalogue
page) does to a pending would-be purchase, the simulated wallet, and a restart."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from engine import VirtualClock
from engine._errors import ConfigError
from engine.client import FeedListingEvent, FeedRemovalEvent
from engine.ledger import Intent, Ledger, PurchaseState
from engine.models import FeedListing, FeedRemoval, Listing
from engine.paper import SNAPSHOT_AGE, PaperDesk, PaperSettings

S = PurchaseState
NAME = "AK-47 | Redline (Field-Tested)"


@pytest.fixture
async def ledger(tmp_path: Path, clock: VirtualClock) -> AsyncIterator[Ledger]:
    async with await Ledger.open(tmp_path / "paper.sqlite", clock=clock) as opened:
        yield opened


async def _pending(ledger: Ledger, desk: PaperDesk, item: str = "7", price: int = 20_000) -> str:
    pid = f"snp-{item}"
    await ledger.record_intent(Intent(pid, item, NAME, price, "deals", game="csgo"))
    assert await desk.recorded(pid) is None
    return pid


def _removal(item: str, at: float) -> FeedRemovalEvent:
    return FeedRemovalEvent(FeedRemoval(item_id=item, name=NAME), received_at=at, generation=1)


def _update(item: str, price: int, at: float) -> FeedListingEvent:
    listing = FeedListing.model_validate({"item_id": item, "name": NAME, "price": price})
    return FeedListingEvent("update", listing, received_at=at, generation=1)


@pytest.mark.parametrize(
    ("after", "event", "state", "reason"),
    [
        (0.1, "removed", S.FAILED, "missed: gone: the feed"),
        (1.0, "removed", S.BOUGHT, "bought: it left the market"),
        (0.1, "dearer", S.FAILED, "missed: price changed: the feed"),
        (1.0, "dearer", S.BOUGHT, "bought: its price rose"),
        (1.0, "same", S.BOUGHT, "bought: the feed"),
    ],
)
async def test_a_feed_event_judges_by_when_it_came(
    ledger: Ledger,
    clock: VirtualClock,
    after: float,
    event: str,
    state: PurchaseState,
    reason: str,
) -> None:
    desk = PaperDesk(ledger, PaperSettings(latency=0.3, start_balance=100_000))
    await desk.open_wallet(None)
    pid = await _pending(ledger, desk)
    at = clock.now() + after
    told = (
        _removal("7", at)
        if event == "removed"
        else _update("7", 25_000 if event == "dearer" else 20_000, at)
    )
    await desk.saw_feed(told)
    purchase = await ledger.get(pid)
    assert purchase is not None
    assert purchase.state is state
    if state is S.FAILED:
        assert purchase.reason is not None
        assert purchase.reason.startswith(reason)
    else:
        assert purchase.charged_price == 20_000
        assert reason in str((await ledger.events(pid))[-1].details["msg"])
    assert desk.pending == {}


async def test_a_snapshot_judges_only_the_games_it_holds(
    ledger: Ledger, clock: VirtualClock
) -> None:
    desk = PaperDesk(ledger, PaperSettings(start_balance=100_000))
    await desk.open_wallet(None)
    pid = await _pending(ledger, desk)
    later = clock.now() + SNAPSHOT_AGE + 5.0

    def gone(ids: list[str]) -> list[int]:
        return [-1 for _ in ids]

    await desk.saw_snapshot(gone, lambda game: game == "dota2", later)
    assert (await ledger.get(pid)).state is S.INTENT  # type: ignore[union-attr]
    # a snapshot polled too soon may have been built before the decision
    await desk.saw_snapshot(gone, lambda game: True, clock.now() + SNAPSHOT_AGE - 1.0)
    assert (await ledger.get(pid)).state is S.INTENT  # type: ignore[union-attr]
    await desk.saw_snapshot(gone, lambda game: True, later)
    purchase = await ledger.get(pid)
    assert purchase is not None
    assert purchase.state is S.FAILED
    assert str(purchase.reason).startswith("missed: gone: the snapshot")


async def test_a_catalogue_page_can_only_show_it_listed(
    ledger: Ledger, clock: VirtualClock
) -> None:
    desk = PaperDesk(ledger, PaperSettings(start_balance=100_000))
    await desk.open_wallet(None)
    pid = await _pending(ledger, desk)
    other = Listing.model_validate({"item_id": "8", "name": NAME, "price": 30_000})
    await desk.saw_listings([other], clock.now() + 1.0, "catalogue")
    assert (await ledger.get(pid)).state is S.INTENT  # type: ignore[union-attr]
    mine = Listing.model_validate({"item_id": "7", "name": NAME, "price": 20_000})
    await desk.saw_listings([mine], clock.now() + 1.0, "catalogue")
    assert (await ledger.get(pid)).state is S.BOUGHT  # type: ignore[union-attr]


async def test_the_wallet_refuses_what_it_cannot_pay(ledger: Ledger) -> None:
    desk = PaperDesk(ledger, PaperSettings(start_balance=30_000))
    assert await desk.open_wallet(999_999) == 30_000  # the setting wins over the account
    await _pending(ledger, desk, "1", 20_000)
    await ledger.record_intent(Intent("snp-2", "2", NAME, 20_000, "deals"))
    refused = await desk.recorded("snp-2")
    assert refused is not None
    assert refused.startswith("refused: the paper wallet ($10.00) cannot pay $20.00")
    assert (await ledger.get("snp-2")).state is S.FAILED  # type: ignore[union-attr]
    assert await desk.wallet_left() == 10_000


async def test_the_wallet_starts_once_and_a_restart_finds_the_pending(
    ledger: Ledger, clock: VirtualClock
) -> None:
    first = PaperDesk(ledger, PaperSettings())
    assert await first.open_wallet(None) is None  # nothing known yet: nothing affordable
    assert await first.open_wallet(70_000) == 70_000  # the account's balance, at first
    await _pending(ledger, first)
    again = PaperDesk(ledger, PaperSettings(latency=0.5))
    assert await again.open_wallet(5_000) == 50_000  # kept: 70 - the pending 20
    assert await again.load() == 1
    (pending,) = again.pending.values()
    assert pending.arrival == pending.decided_at + 0.5
    with pytest.raises(ConfigError, match="never restarted"):
        await PaperDesk(ledger, PaperSettings(start_balance=1_000)).open_wallet(None)
