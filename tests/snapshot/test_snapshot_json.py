"""The JSON snapshot (interface.md 2.13) into the same compact form."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from snapshot_support import L, parse

from engine import ConfigError, MalformedResponse, Refused
from engine.snapshot import SNAPSHOT_ENDPOINT, load_snapshot_file, parse_json_snapshot

DOPPLER = "★ Karambit | Doppler Phase 2 (Factory New)"


def test_same_listings_as_the_csv_form() -> None:
    body = {
        "success": True,
        "timestamp": 1795946400,
        "items": [
            {"item_id": "1", "price": "000000027867", "name": "AK"},
            {"item_id": 2, "price": 5000, "name": DOPPLER},
            {"item_id": "3", "price": "", "name": "M4"},
            {"item_id": "4", "price": None, "name": "M4", "extra": [1]},
        ],
    }
    snapshot = parse_json_snapshot(json.dumps(body))
    csv_form = parse(f"item_id,name,price\n1,AK,000000027867\n2,{DOPPLER},5000\n3,M4,\n4,M4,\n")
    assert (
        list(snapshot)
        == list(csv_form)
        == [
            L("1", "AK", 27867),
            L("2", DOPPLER, 5000),
            L("3", "M4", None),
            L("4", "M4", None),
        ]
    )
    assert snapshot.timestamp == 1795946400
    assert not snapshot.has_hold


def test_hold_fields() -> None:
    snapshot = parse_json_snapshot(
        {
            "success": True,
            "items": [
                {"item_id": "1", "price": 5, "name": "AK", "unlock_at": "2026-11-29T10:00:00Z"},
                {"item_id": "2", "price": 6, "name": "AK"},
            ],
        }
    )
    assert list(snapshot) == [L("1", "AK", 5, 1795946400, None), L("2", "AK", 6)]


def test_failure_answer_is_refused() -> None:
    with pytest.raises(Refused) as caught:
        parse_json_snapshot(b'{"success": false, "msg": "Snapshot not found"}')
    assert caught.value.msg == "Snapshot not found"
    assert caught.value.endpoint == SNAPSHOT_ENDPOINT


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        pytest.param(b"<html>challenge</html>", None, "not JSON", id="html"),
        pytest.param(b"[1, 2]", None, "JSON list", id="list"),
        pytest.param({"success": True}, "items", "no items", id="no-items"),
        pytest.param(
            {"items": [{"item_id": "1", "name": "AK", "price": "1.5"}]},
            "items[0].price",
            "1.5",
            id="price",
        ),
        pytest.param(
            {"items": [{"item_id": "1", "name": "AK", "price": True}]},
            "items[0].price",
            "True",
            id="bool-price",
        ),
        pytest.param(
            {"items": [{"name": "AK", "price": 1}]}, "items[0].item_id", "None", id="no-id"
        ),
        pytest.param(
            {"items": [{"item_id": "1", "price": 1}]}, "items[0].name", "None", id="no-name"
        ),
        pytest.param({"items": ["x"]}, "items[0]", "not an object", id="not-object"),
    ],
)
def test_bad_shapes(body: Any, field: str | None, words: str) -> None:
    with pytest.raises(MalformedResponse) as caught:
        parse_json_snapshot(body)
    assert caught.value.field == field
    assert words in str(caught.value)


def test_recorded_json_file(tmp_path: Path) -> None:
    good = tmp_path / "snapshot.json"
    good.write_text(
        json.dumps({"success": True, "items": [{"item_id": 1, "price": 2, "name": "AK"}]})
    )
    assert list(load_snapshot_file(good)) == [L("1", "AK", 2)]
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps({"success": True, "items": [{"item_id": 1, "price": "x", "name": "AK"}]})
    )
    with pytest.raises(ConfigError) as caught:
        load_snapshot_file(bad)
    assert caught.value.location == str(bad)
    assert caught.value.field == "items[0].price"
