"""The paper mode in the engine, against the in-process sandbox on a virtual clock: would-be
purchases are written first, never sent, judged by what the engine sees next; items taken
by another buyer meanwhile are missed, with the reason; the judgement survives a restart;
the sandbox never receives a purchase or a buy order."""

from __future__ import annotations

from pathlib import Path

import pytest
from sniper.harness import pick_item, plant, quiet_sandbox, rig, rules_text

from engine import VirtualClock
from engine._errors import ConfigError
from engine.api._app import view_json
from engine.client import FeedRemovalEvent
from engine.ledger import Intent, Ledger, PurchaseState, utc_day_start
from engine.models import FeedRemoval
from engine.notify._events import summary_notice
from engine.paper import PaperSettings, claim_paper_ledger, refuse_paper_ledger
from engine.sandbox import MarketConfig, Sandbox, SandboxConfig
from engine.sniper import (
    EngineSettings,
    Outcome,
    daily_summary,
    status_document,
    status_line,
)

PAPER = EngineSettings(use_snapshot=False, paper=PaperSettings(start_balance=1_000_000))


def assert_nothing_sent(sandbox: Sandbox) -> None:
    """The service saw no purchase, no buy order, nothing that moves money."""
    truth = sandbox.ground_truth()
    assert truth["purchases"] == []
    assert truth["charges"] == []
    assert truth["purchase_requests"] == []
    moving = ("buy", "order", "remove")
    sent = [k for k in truth["requests"] if any(word in k.lower() for word in moving)]
    assert sent == []


async def test_taken_and_repriced_items_are_missed_the_rest_bought(
    clock: VirtualClock, tmp_path: Path
) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    kept = plant(sandbox, item, price=item.reference // 2)
    taken = plant(sandbox, item, price=item.reference // 2 + 10)
    repriced = plant(sandbox, item, price=item.reference // 2 + 20)
    async with (
        await Ledger.open(tmp_path / "paper.sqlite", clock=clock) as ledger,
        rig(clock, sandbox, rules_text(item.name), settings=PAPER, ledger=ledger) as r,
    ):
        await r.engine.start()
        await r.engine.search_once()
        pending = {p.item_id: p for p in await ledger.purchases()}
        assert {s.state for s in pending.values()} == {PurchaseState.INTENT}
        assert r.engine.status.outcomes[Outcome.PAPER] == 3
        before = (await r.engine.view()).paper
        assert before is not None  # pending purchases count, as in flight ones do
        assert before.wallet_left == 1_000_000 - sum(p.price for p in pending.values())

        clock.advance(2.0)  # another buyer takes one, its seller reprices another
        sandbox.advance()
        sandbox.market.remove(taken.item_id)
        repriced.price = item.reference
        clock.advance(2.0)
        await r.engine.search_once()
        judged = {p.item_id: p for p in await ledger.purchases()}
        view = await r.engine.view()
        summary = await daily_summary(r.engine, utc_day_start(clock.now()))

    assert judged[str(kept.item_id)].state is PurchaseState.BOUGHT
    assert judged[str(kept.item_id)].charged_price == kept.price
    gone, dearer = judged[str(taken.item_id)], judged[str(repriced.item_id)]
    assert gone.state is dearer.state is PurchaseState.FAILED
    assert gone.reason is not None
    assert gone.reason.startswith("missed: gone: the search")
    assert "sold to another buyer" in gone.reason
    assert dearer.reason is not None
    assert dearer.reason.startswith("missed: price changed:")
    assert view.paper is not None
    assert view.paper.pending == 0
    assert dict(view.paper.judged) == {"bought": 1, "gone": 1, "price changed": 1}
    assert view.paper.wallet_left == 1_000_000 - kept.price
    # what every observer reads says paper: the status line, the API, the daily summary
    line = status_line(view)
    assert line.startswith("[PAPER, running] paper spent")
    assert "paper: 0 pending, 1 bought, 2 missed (1 gone, 1 price changed)" in line
    assert view_json(view)["paper"]["judged"] == {"bought": 1, "gone": 1, "price changed": 1}
    assert status_document(view, every=5.0)["paper"]["pending"] == 0  # for `snipe status`
    notice = summary_notice(summary, clock.now())
    assert notice.title.startswith("snipe PAPER daily summary")
    assert "counted 1 would-be purchases" in notice.lines[0]
    assert "missed 2" in notice.lines[0]
    assert_nothing_sent(sandbox)


async def test_pending_purchases_are_judged_after_a_restart(
    clock: VirtualClock, tmp_path: Path
) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    kept = plant(sandbox, item, price=item.reference // 2)
    taken = plant(sandbox, item, price=item.reference // 2 + 10)
    path = tmp_path / "paper.sqlite"
    async with (
        await Ledger.open(path, clock=clock) as ledger,
        rig(clock, sandbox, rules_text(item.name), settings=PAPER, ledger=ledger) as r,
    ):
        await r.engine.start()
        await r.engine.search_once()
        assert len(await ledger.unresolved()) == 2
    # the process is gone: the would-be purchases are INTENTs in the file, nothing else
    clock.advance(30.0)
    sandbox.advance()
    sandbox.market.remove(taken.item_id)
    clock.advance(30.0)
    async with (
        await Ledger.open(path, clock=clock) as ledger,
        rig(clock, sandbox, rules_text(item.name), settings=PAPER, ledger=ledger) as r,
    ):
        await r.engine.start()
        assert r.engine.paper is not None
        assert len(r.engine.paper.pending) == 2
        await r.engine.search_once()
        await r.engine.search_once()  # seen again: nothing changes
        purchases = {p.item_id: p for p in await ledger.purchases()}
        events = await ledger.events()
    assert purchases[str(kept.item_id)].state is PurchaseState.BOUGHT
    assert purchases[str(taken.item_id)].state is PurchaseState.FAILED
    assert len(purchases) == 2  # the bought one is not bought again
    moves = [(e.project_id, e.to_state) for e in events]
    assert len(moves) == len(set(moves)) == 4  # an INTENT and one verdict each
    assert_nothing_sent(sandbox)


async def test_the_wallet_caps_what_the_paper_run_buys(clock: VirtualClock, tmp_path: Path) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    cheap = plant(sandbox, item, price=item.reference // 2)
    plant(sandbox, item, price=item.reference // 2 + 10)
    settings = EngineSettings(use_snapshot=False, paper=PaperSettings(start_balance=cheap.price))
    async with (
        await Ledger.open(tmp_path / "paper.sqlite", clock=clock) as ledger,
        rig(clock, sandbox, rules_text(item.name), settings=settings, ledger=ledger) as r,
    ):
        await r.engine.start()
        await r.engine.search_once()
        (only,) = await ledger.purchases()
    assert only.item_id == str(cheap.item_id)
    assert_nothing_sent(sandbox)


def _market_of_deals(names: tuple[str, ...]) -> MarketConfig:
    # Deals come often and other buyers take them within seconds.
    return MarketConfig(
        size=150,
        deal_share=0.5,
        deal_mean_lifetime=20.0,
        hold_share=0.0,
        featured=names,
        featured_share=0.6,
    )


async def test_against_the_competing_buyer_every_verdict_matches_the_market(
    clock: VirtualClock, tmp_path: Path
) -> None:
    """A paper run of 5 market minutes with the snapshot and searches: every purchase
    judged missed as gone had indeed left the market (the sandbox's own record) before it
    was judged, and every one judged bought was still listed when its request would have
    arrived."""
    probe = quiet_sandbox(clock)
    item = pick_item(probe)
    sandbox = Sandbox(SandboxConfig(seed=11, market=_market_of_deals((item.name,))), clock=clock)
    settings = EngineSettings(paper=PaperSettings(start_balance=10_000_000))
    rules = rules_text(item.name, budgets='{per_day: "5000.00", total: "9000.00"}')
    async with (
        await Ledger.open(tmp_path / "paper.sqlite", clock=clock) as ledger,
        rig(clock, sandbox, rules, settings=settings, ledger=ledger) as r,
    ):
        async with clock.autojump():
            await r.engine.run(duration=300)
        purchases = await ledger.purchases()
        events = await ledger.events()
    removed = {
        str(c.listing.item_id): c.at
        for c in sandbox.market.changes.read(0)[0]
        if c.kind == "removed"
    }
    judged_at = {e.project_id: e.at for e in events if e.from_state is PurchaseState.INTENT}
    latency = PaperSettings().latency
    outcomes = {"bought": 0, "gone": 0}
    for p in purchases:
        if p.state is PurchaseState.BOUGHT:
            outcomes["bought"] += 1
            assert removed.get(p.item_id, float("inf")) > p.created_at + latency, p
        elif p.reason is not None and p.reason.startswith("missed: gone"):
            outcomes["gone"] += 1
            assert removed[p.item_id] <= judged_at[p.project_id], p
    assert outcomes["bought"] >= 1, outcomes
    assert outcomes["gone"] >= 1, outcomes
    assert_nothing_sent(sandbox)


async def test_a_paper_ledger_and_a_real_one_never_mix(clock: VirtualClock, tmp_path: Path) -> None:
    async with await Ledger.open(tmp_path / "real.sqlite", clock=clock) as real:
        await real.record_intent(
            Intent(project_id="snp-real", item_id="1", name="x", price=1_000, rule="r")
        )
        with pytest.raises(ConfigError, match="holds real purchases"):
            await claim_paper_ledger(real)
        await refuse_paper_ledger(real)  # a real ledger is fine for a real run
    async with await Ledger.open(tmp_path / "paper.sqlite", clock=clock) as paper:
        await claim_paper_ledger(paper)
        await claim_paper_ledger(paper)  # again: it is one
        with pytest.raises(ConfigError, match="is a paper ledger"):
            await refuse_paper_ledger(paper)
        assert await paper.settle_setting("mode", "real") == "paper"  # written once


async def test_the_engine_shows_feed_events_to_the_desk(
    clock: VirtualClock, tmp_path: Path
) -> None:
    sandbox = quiet_sandbox(clock)
    item = pick_item(sandbox)
    early = plant(sandbox, item, price=item.reference // 2)
    late = plant(sandbox, item, price=item.reference // 2 + 10)
    async with (
        await Ledger.open(tmp_path / "paper.sqlite", clock=clock) as ledger,
        rig(clock, sandbox, rules_text(item.name), settings=PAPER, ledger=ledger) as r,
    ):
        await r.engine.start()
        await r.engine.search_once()
        decided = clock.now()
        for listing, after in ((early, 0.1), (late, 2.0)):  # the request arrives at +0.3 s
            removal = FeedRemoval(item_id=str(listing.item_id), name=item.name)
            await r.engine.on_feed_event(FeedRemovalEvent(removal, decided + after, 1))
        judged = {p.item_id: p for p in await ledger.purchases()}
    assert judged[str(early.item_id)].state is PurchaseState.FAILED
    assert str(judged[str(early.item_id)].reason).startswith("missed: gone: the feed")
    assert judged[str(late.item_id)].state is PurchaseState.BOUGHT
    assert_nothing_sent(sandbox)
