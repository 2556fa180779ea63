"""Project ids, event details and intents: pure checks, no database."""

from __future__ import annotations

import json

import pytest

from engine import LedgerError
from engine.ledger import PROJECT_ID_MAX, Intent, new_project_id, utc_day_start
from engine.ledger._records import encode_details


def test_project_ids_fit_the_service_limit_and_sort_by_time() -> None:
    t0 = 1_767_225_600.0
    ids = [new_project_id(t0 + i * 0.001) for i in range(200)]
    assert all(i.startswith("snp-") and len(i) <= PROJECT_ID_MAX for i in ids)
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)


def test_project_ids_of_the_same_millisecond_differ() -> None:
    ids = {new_project_id(1_767_225_600.0) for _ in range(1000)}
    assert len(ids) == 1000


def test_project_id_is_reproducible_with_given_entropy() -> None:
    a = new_project_id(1_767_225_600.0, entropy=bytes(10))
    assert a == new_project_id(1_767_225_600.0, entropy=bytes(10))
    assert a != new_project_id(1_767_225_600.0, entropy=bytes(9) + b"\x01")
    with pytest.raises(ValueError, match="10 bytes"):
        new_project_id(1_767_225_600.0, entropy=b"short")


@pytest.mark.parametrize(
    ("now", "start"),
    [
        (1_767_225_600.0, 1_767_225_600.0),  # midnight is its own day start
        (1_767_225_600.0 + 86_399.9, 1_767_225_600.0),
        (1_767_225_600.0 + 86_400.0, 1_767_225_600.0 + 86_400.0),
    ],
)
def test_utc_day_start(now: float, start: float) -> None:
    assert utc_day_start(now) == start


def test_details_keep_whitelisted_scalars_only() -> None:
    encoded = encode_details({"msg": "Item sold", "http_status": 200, "trade_done": False})
    assert encoded is not None
    assert json.loads(encoded) == {"msg": "Item sold", "http_status": 200, "trade_done": False}
    assert encode_details(None) is None
    assert encode_details({}) is None


@pytest.mark.parametrize(
    ("details", "says"),
    [
        ({"url": "https://m.example/v1/buy-one-p2p"}, "not one the ledger stores"),
        ({"api": "SECRET"}, "not one the ledger stores"),
        ({"msg": "GET /v1/buy-one-p2p?id=1&api=SECRET"}, "API key"),
        ({"msg": ["a", "list"]}, "must be a scalar"),
        ({"msg": {"nested": 1}}, "must be a scalar"),
    ],
)
def test_details_refuse_anything_else(details: dict[str, object], says: str) -> None:
    with pytest.raises(LedgerError, match=says) as caught:
        encode_details(details)
    assert "SECRET" not in str(caught.value)


def test_long_detail_text_is_cut() -> None:
    encoded = encode_details({"msg": "x" * 10_000})
    assert encoded is not None
    assert len(json.loads(encoded)["msg"]) == 500


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"project_id": "p" * 51}, "1 to 50 characters"),
        ({"project_id": ""}, "1 to 50 characters"),
        ({"item_id": ""}, "item_id is empty"),
        ({"price": -1}, "non-negative int"),
        ({"price": 12.5}, "non-negative int"),
        ({"price": True}, "non-negative int"),
    ],
)
def test_bad_intents_are_refused_before_any_write(fields: dict[str, object], says: str) -> None:
    base: dict[str, object] = {
        "project_id": "snp-1",
        "item_id": "1",
        "name": "AK",
        "price": 1000,
        "rule": "r",
    }
    with pytest.raises(LedgerError, match=says):
        Intent(**{**base, **fields})  # type: ignore[arg-type]
