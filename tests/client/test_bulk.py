"""Bulk purchase: a result per item; an item the answer does not mention is UNKNOWN."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from client_support import Recorder

from engine import OutcomeUnknown, PurchaseRefusal
from engine.client import BulkItem, BulkPurchase, BulkStatus, MarketClient

ITEMS = [BulkItem("1", 100, "p-1"), BulkItem("2", 200, "p-2"), BulkItem("3", 300, "p-3")]


async def buy(client: MarketClient, **kw: Any) -> BulkPurchase:
    return await client.buy(ITEMS, partner="42", token="AbCdEfGh", **kw)


async def test_partial_results(client: MarketClient, recorder: Recorder) -> None:
    recorder.json(
        {
            "success": True,
            "msg": None,
            "items": [
                {"item_id": "1", "success": True, "id": 11, "price": 95, "project_id": "p-1"},
                {"item_id": 2, "success": False, "msg": "Item sold"},
                # item 3 is not mentioned: it may have been bought
                {"item_id": "999", "success": True, "id": 5},  # not ours: ignored
            ],
        }
    )
    result = await buy(client)
    assert [r.status for r in result.results] == [
        BulkStatus.BOUGHT,
        BulkStatus.REFUSED,
        BulkStatus.UNKNOWN,
    ]
    assert [r.item_id for r in result.bought] == ["1"]
    assert result.bought[0].charged == 95
    assert result.refused[0].refusal is PurchaseRefusal.ITEM_SOLD
    assert result.refused[0].msg == "Item sold"
    assert [r.project_id for r in result.unknown] == ["p-3"]
    assert result.unknown[0].answer is None


async def test_matched_by_project_id_first(client: MarketClient, recorder: Recorder) -> None:
    recorder.json(
        {
            "success": True,
            "items": [
                {"item_id": "x", "project_id": "p-2", "success": True, "price": 1},
                {"item_id": "3", "success": False, "msg": "Price changed", "new_price": "350"},
            ],
        }
    )
    result = await buy(client)
    statuses = {r.project_id: r.status for r in result.results}
    assert statuses == {
        "p-1": BulkStatus.UNKNOWN,
        "p-2": BulkStatus.BOUGHT,
        "p-3": BulkStatus.REFUSED,
    }
    assert result.refused[0].new_price == 350
    assert result.refused[0].refusal is PurchaseRefusal.PRICE_CHANGED


async def test_an_item_refusal_that_may_hide_a_purchase_is_unknown(
    client: MarketClient, recorder: Recorder
) -> None:
    recorder.json(
        {
            "success": True,
            "items": [
                {"item_id": "1", "success": False, "msg": "projectId already exists"},
                {"item_id": "2", "success": False, "msg": "", "error_msg": "Item sold"},
                {"item_id": "3", "success": False, "msg": "Price changed", "new_price": "12.5"},
            ],
        }
    )
    result = await buy(client)
    assert [r.status for r in result.results] == [
        BulkStatus.UNKNOWN,
        BulkStatus.REFUSED,
        BulkStatus.REFUSED,
    ]
    assert result.results[1].refusal is PurchaseRefusal.ITEM_SOLD
    assert result.results[1].msg == "Item sold"
    assert result.results[2].new_price == 13


async def test_entry_without_verdict_is_unknown(client: MarketClient, recorder: Recorder) -> None:
    recorder.json({"success": True, "items": [{"item_id": "1", "id": 7}]})
    result = await buy(client)
    assert result.results[0].status is BulkStatus.UNKNOWN
    assert result.results[0].answer is not None


@pytest.mark.parametrize("all_or_none", [False, True])
@pytest.mark.parametrize(
    "body",
    [
        {"success": False, "msg": "Insufficient balance"},
        {"success": False, "msg": "System busy"},
        {"success": False, "msg": "", "error_msg": "Item sold"},
        {"success": False},
    ],
)
async def test_a_refusal_as_a_whole_is_unknown_for_every_item(
    client: MarketClient, recorder: Recorder, body: dict[str, Any], all_or_none: bool
) -> None:
    # Without a word per item, some may have been bought before the refusal.
    recorder.json(body)
    with pytest.raises(OutcomeUnknown) as info:
        await buy(client, all_or_none=all_or_none)
    assert set(info.value.project_ids) == {"p-1", "p-2", "p-3"}
    assert recorder.body()["all"] is all_or_none


async def test_top_level_failure_with_items_reports_items(
    client: MarketClient, recorder: Recorder
) -> None:
    recorder.json(
        {"success": False, "msg": "some failed", "items": [{"item_id": "1", "success": True}]}
    )
    result = await buy(client)
    assert [r.status for r in result.results] == [
        BulkStatus.BOUGHT,
        BulkStatus.UNKNOWN,
        BulkStatus.UNKNOWN,
    ]
    assert result.msg == "some failed"


@pytest.mark.parametrize(
    "answer",
    [
        httpx.Response(200, json={"success": True, "items": [{"success": True}]}),  # no item_id
        httpx.Response(200, json={"success": False, "items": "oops"}),
        httpx.Response(200, json={"items": []}),
        httpx.Response(502),
        httpx.ReadTimeout("slow"),
    ],
    ids=["entry-without-id", "items-not-list", "no-flag", "502", "timeout"],
)
async def test_lost_answer_is_unknown_for_every_item(
    answer: Any, client: MarketClient, recorder: Recorder
) -> None:
    recorder.reply(answer)
    with pytest.raises(OutcomeUnknown) as info:
        await buy(client)
    assert info.value.project_ids == ("p-1", "p-2", "p-3")
