"""The chat commands' pure parts, synchronously and table-driven: parsing a message, the
answer texts from an engine view, a portfolio, a day's summary or a control's outcome,
and decoding ``getUpdates`` answers item by item."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from engine.chat import (
    BotAPIError,
    daily_answer,
    decode_updates,
    help_answer,
    parse_command,
    pause_answer,
    profit_answer,
    reload_answer,
    resume_answer,
    status_answer,
)
from engine.ledger import Purchase, PurchaseState
from engine.notify import DailySummary
from engine.portfolio import Reference, value_portfolio
from engine.rules import PortfolioSettings
from engine.sniper import EngineMode, EngineView, Outcome, PurchaseRecord
from engine.sniper._controls import Reloaded

NOW = 1_795_000_000.0  # 2026-11-18T11:06:40Z
NAME = "AK-47 | Redline (Field-Tested)"


def view(**changes: Any) -> EngineView:
    base = EngineView(
        now=NOW,
        mode=EngineMode.RUNNING,
        halt_reason=None,
        dry_run=False,
        started_at=NOW - 3600,
        buying_since=NOW - 3590,
        waiting=None,
        start_attempts=1,
        rules_file="rules.yaml",
        cap_total=1_000_000,
        cap_per_day=500_000,
        spent_total=120_500,
        spent_today=20_000,
        order_exposure=0,
        by_state={"BOUGHT": 2},
        unresolved=0,
        open_trades=1,
        overdue=0,
        released=0,
        search_used=3,
        search_limit=20,
        searches=40,
        rate_limited=0,
        snapshots=4,
        snapshot_bytes={},
        listings_seen=900,
        candidates=5,
        outcomes={Outcome.BOUGHT: 2},
        recent=(),
        purchases_recorded=2,
        watched=12,
        not_searched=0,
        median_age=30.0,
        oldest_age=60.0,
        errors=(),
        set_aside=(),
        unexpected={},
        skips=(),
        orders_live=0,
        orders_planned=0,
        references={"names": 12},
    )
    return replace(base, **changes)


RECORD = PurchaseRecord(
    at=NOW - 60,
    name=NAME,
    item_id="77",
    rule="deals",
    price=9_500,
    outcome=Outcome.BOUGHT,
    detail=None,
    reasons=(),
)


@pytest.mark.parametrize(
    ("text", "name", "args"),
    [
        ("/status", "status", ""),
        ("/status@SnipeBot", "status", ""),
        ("/PAUSE going out", "pause", "going out"),
        ("/start", "help", ""),
        ("/help", "help", ""),
        ("/stop", "unknown", ""),
        ("  /status", None, None),  # a command starts the message
        ("status", None, None),
        ("", None, None),
        (None, None, None),
    ],
)
def test_parse_command(text: str | None, name: str | None, args: str | None) -> None:
    command = parse_command(text)
    if name is None:
        assert command is None
    else:
        assert command is not None
        assert (command.name, command.args) == (name, args)


def test_help_lists_every_command() -> None:
    text = help_answer()
    for command in ("/status", "/profit", "/daily", "/pause", "/resume", "/reload"):
        assert command in text


@pytest.mark.parametrize(
    ("changes", "expected", "absent"),
    [
        (
            {},
            [
                "snipe running",
                "used $120.50 of $1,000.00 total",
                "$20.00 of $500.00 today",
                "$480.00 left today",
                "2 bought",
                "rules: rules.yaml",
            ],
            ["paused", "HALTED"],
        ),
        (
            {"paused": "paused from Telegram by owner"},
            ["snipe paused: paused from Telegram by owner"],
            ["snipe running"],
        ),
        (
            {"mode": EngineMode.HALTED, "halt_reason": "kill file /tmp/k exists"},
            ["HALTED: kill file /tmp/k exists"],
            [],
        ),
        (
            {"mode": EngineMode.STARTING, "waiting": "the service is unavailable"},
            ["starting: waiting (the service is unavailable)"],
            [],
        ),
        (
            {"dry_run": True},
            ["snipe dry run running", "would spend $120.50", "2 would-be purchases"],
            ["used $"],
        ),
        (
            {"order_exposure": 30_000, "orders_live": 2},
            ["buy orders: 2 live, $30.00 exposed", "used $150.50"],
            [],
        ),
        ({"unresolved": 1, "overdue": 2}, ["unresolved purchases 1", "overdue 2"], []),
        ({"recent": (RECORD,)}, [f"last: {NAME} $9.50 (bought, deals)"], []),
        ({"errors": ("search: HTTP 502",)}, ["latest error: search: HTTP 502"], []),
    ],
)
def test_status_answer(changes: dict[str, Any], expected: list[str], absent: list[str]) -> None:
    text = status_answer(view(**changes))
    for part in expected:
        assert part in text, text
    for part in absent:
        assert part not in text, text


def _purchase(n: int, cost: int) -> Purchase:
    return Purchase(
        project_id=f"p{n}",
        item_id=f"i{n}",
        name=NAME,
        game="csgo",
        price=cost,
        charged_price=cost,
        rule="deals",
        state=PurchaseState.BOUGHT,
        batch_id=None,
        allow_trade_locked=False,
        created_at=NOW - 3600,
        updated_at=NOW - 3600,
        unlock_at=None,
        send_until=None,
        marketplace_id=n,
        reason=None,
    )


@pytest.mark.parametrize(
    ("held", "price", "fee", "expected"),
    [
        (
            [],
            None,
            None,
            ["nothing held and nothing sold yet", "spent today $20.00", "no sale fee set"],
        ),
        (
            [10_000, 5_000],
            12_000,
            None,
            ["held 2 for $15.00", "valued 2 at $24.00 against $15.00 paid: +$9.00 (not realised)"],
        ),
        ([10_000], 8_000, None, ["valued 1 at $8.00 against $10.00 paid: -$2.00"]),
        ([10_000], None, None, ["1 without a reference price (cost $10.00)"]),
        ([10_000], 12_000, 5, ["sale fee 5", "valued 1 at $11.40"]),
    ],
)
def test_profit_answer(
    held: list[int], price: int | None, fee: int | None, expected: list[str]
) -> None:
    purchases = [_purchase(n, cost) for n, cost in enumerate(held)]
    reference = None if price is None else Reference("market.p25", price, 20, NOW - 60)
    portfolio = value_portfolio(
        purchases,
        lambda base, phase: reference,
        PortfolioSettings(sale_fee=fee),
        now=NOW,
    )
    text = profit_answer(view(), portfolio)
    for part in expected:
        assert part in text, text


def test_profit_answer_of_a_dry_run_says_would_have() -> None:
    portfolio = value_portfolio([], lambda b, p: None, PortfolioSettings(), now=NOW)
    assert "dry run: would have spent $20.00 today" in profit_answer(view(dry_run=True), portfolio)


def test_daily_answer_is_the_day_so_far() -> None:
    summary = DailySummary(
        day="2026-11-18",
        purchases=3,
        spent=45_000,
        refunds=1,
        refunded=5_000,
        failed=0,
        unresolved=1,
        spent_total=120_000,
        cap_per_day=500_000,
        cap_total=1_000_000,
    )
    text = daily_answer(summary, NOW)
    assert "daily summary 2026-11-18 (so far, 2026-11-18 11:06 UTC)" in text
    assert "purchases 3, spent $45.00" in text
    assert "refunds 1 ($5.00)" in text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (pause_answer(0, dry_run=False), "buying paused: nothing is bought until /resume"),
        (pause_answer(2, dry_run=False), "2 buy order(s) withdrawn"),
        (resume_answer("resumed", None), "buying resumed"),
        (resume_answer("not paused", None), "buying was not paused"),
        (resume_answer("halted", "kill file k exists"), "still HALTED (kill file k exists)"),
        (
            reload_answer(Reloaded(error="rules.yaml:3:7: expected a mapping")),
            "reload refused, the running rules are kept:\nrules.yaml:3:7: expected a mapping",
        ),
        (reload_answer(Reloaded(error=None, rules=("a", "b"))), "rules reloaded (2): a, b"),
        (
            reload_answer(Reloaded(None, ("a",), ("notify: takes effect at the next start",))),
            "notify: takes effect at the next start",
        ),
    ],
)
def test_control_answers(text: str, expected: str) -> None:
    assert expected in text


def _body(result: Any, ok: bool = True) -> bytes:
    return json.dumps({"ok": ok, "result": result}).encode()


def _message(update_id: int, chat: Any, text: Any = "/status") -> dict[str, Any]:
    return {
        "update_id": update_id,
        "message": {
            "message_id": 1,
            "date": int(NOW),
            "chat": {"id": chat, "type": "private"},
            "from": {"id": 5, "username": "owner"},
            "text": text,
        },
    }


@pytest.mark.parametrize(
    ("result", "texts", "set_aside", "highest"),
    [
        ([], [], 0, None),
        ([_message(7, 42), _message(8, "42", "/pause")], ["/status", "/pause"], 0, 8),
        # an edit (no message) is an update without a chat: read, nothing to answer
        ([{"update_id": 9, "edited_message": {}}], [None], 0, 9),
        # odd items are set aside, the offset still passes them
        ([_message(10, 42), {"update_id": 11, "message": {"chat": {}}}], ["/status"], 1, 11),
        ([{"update_id": "x"}, "junk", _message(12, 42)], ["/status"], 2, 12),
        ([_message(13, True)], [], 1, 13),
        ([_message(14, 42, text=5)], [None], 0, 14),
    ],
)
def test_decode_updates_item_by_item(
    result: list[Any], texts: list[str | None], set_aside: int, highest: int | None
) -> None:
    updates, aside, top = decode_updates(_body(result))
    assert [u.text for u in updates] == texts
    assert (aside, top) == (set_aside, highest)


@pytest.mark.parametrize(
    "body",
    [
        b"<html>bad gateway</html>",
        json.dumps({"ok": False, "error_code": 401, "description": "Unauthorized"}).encode(),
        json.dumps({"ok": True, "result": {"not": "a list"}}).encode(),
        json.dumps([1, 2]).encode(),
    ],
)
def test_decode_updates_refuses_an_answer_that_is_not_a_list_of_updates(body: bytes) -> None:
    with pytest.raises(BotAPIError):
        decode_updates(body)
