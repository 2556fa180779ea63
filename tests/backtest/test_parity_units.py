"""The parity comparison's pure parts: matching, causes, price list versions and the live
network log, table-driven."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engine._errors import ConfigError
from engine.backtest import read_records
from engine.backtest._network import NetworkLog, Passage, request_line
from engine.backtest._parity import Presence, cause_of_reasons, compare, outcome, presence
from engine.backtest._versions import ListVersions

from .support import T0, entry, listing, write


@pytest.mark.parametrize(
    ("reasons", "cause"),
    [
        (["total budget $400.00: $395.00 spent, $20.00 more would exceed it"], "cap reached"),
        (["rule max_count 6 reached: 6 bought"], "cap reached"),
        (["market.p25 fails min_observations 5: 2 observations"], "reference not yet learned"),
        (["no reference price from market.median for this item"], "reference not yet learned"),
        (["market.p25 fails max_age 1h: its age is 2h"], "stale reference"),
        (["discount 8.00% below 10% vs file.buff (reference $11.00)"], "price list changed"),
        (["discount 29.92% below 30% vs platform_price (reference $21.08)"], "reference differed"),
        (["float 0.31 above max 0.15"], "other"),
    ],
)
def test_a_rejection_gets_the_cause_its_reasons_name(reasons: list[str], cause: str) -> None:
    assert cause_of_reasons(reasons) == cause


def _buy(item_id: str, at: float, state: str = "BOUGHT") -> dict[str, Any]:
    return {
        "item_id": item_id,
        "name": "X",
        "rule": "deals",
        "price": 1000,
        "created_at": at,
        "state": state,
    }


def test_decisions_are_matched_by_item_and_each_one_sided_one_gets_its_cause() -> None:
    live = [_buy("a", 10), _buy("b", 20), _buy("c", 30), _buy("old", 1)]
    replay = [_buy("a", 11, "COMPLETED"), _buy("d", 40), _buy("e", 50)]
    live_decisions = {
        "d": [
            {"t": 39.0, "accepted": False, "reasons": ["daily budget $1.00: reached"]},
            {"t": 5.0, "accepted": True, "reasons": []},
        ]
    }
    replay_decisions = {"b": [{"t": 20.5, "accepted": False, "reasons": ["float 1 above max"]}]}
    listed = {
        "a": Presence(5),
        "b": Presence(15),
        "c": Presence(25, gone=30.5),
        "d": Presence(35),
        "e": Presence(45, gone=None),
    }
    parity = compare(
        live,
        replay,
        live_decisions=live_decisions,
        replay_decisions=replay_decisions,
        listed=listed,
        start=5.0,
    )
    verdicts = {r.item_id: (r.verdict, r.cause) for r in parity.rows}
    assert verdicts == {
        "a": ("agreed", None),
        "b": ("live-only", "other"),
        "c": ("live-only", "taken by another buyer"),
        "d": ("replay-only", "cap reached"),  # the live verdict nearest the decision
        "e": ("replay-only", "timing"),
    }
    assert parity.agreement == pytest.approx(1 / 5)  # "old" came before the recording
    assert parity.outcome_differences() == []  # bought and completed are both charged
    text = "\n".join(parity.table())
    assert "agreement 20.0%" in text
    assert "1 x cap reached" in text


def test_a_listing_the_recording_never_saw_is_an_answer_not_recorded() -> None:
    parity = compare(
        [_buy("z", 10)], [], live_decisions=None, replay_decisions={}, listed={}, start=0
    )
    (row,) = parity.rows
    assert (row.verdict, row.cause) == ("live-only", "answer not recorded")


def test_without_the_live_decisions_a_replay_only_purchase_is_unexplained() -> None:
    parity = compare(
        [], [_buy("q", 10)], live_decisions=None, replay_decisions={}, listed={"q": Presence(1)}
    )
    assert parity.rows[0].cause == "unexplained"


@pytest.mark.parametrize(
    ("state", "expected"),
    [("COMPLETED", "charged"), ("REFUNDED", "charged"), ("FAILED", "not bought"),
     ("RELEASED", "not bought"), ("UNKNOWN", "unknown"), (None, "unknown")],
)  # fmt: skip
def test_outcomes_are_compared_as_charged_or_not(state: str | None, expected: str) -> None:
    assert outcome(state) == expected


def test_presence_follows_a_listing_from_its_first_answer_to_its_removal(tmp_path: Path) -> None:
    steps = [
        (0.0, "snap", [listing("1", 8000)]),
        (5.0, "search", [entry("2", 7000, 10000)]),
        (10.0, "snap", [listing("2", 7000)]),
        (20.0, "snap", [listing("2", 7000), listing("3", 6000)]),
    ]
    data = write(tmp_path / "rec", steps)
    seen = presence(read_records(data), {"1", "2", "3", "9"})
    assert seen == {
        "1": Presence(T0, gone=T0 + 10),
        "2": Presence(T0 + 5),
        "3": Presence(T0 + 20),
    }


def test_a_price_list_is_read_as_it_was_at_each_moment(tmp_path: Path) -> None:
    versions = ListVersions(tmp_path)
    assert versions.add("file.buff", "buff.csv", 100.0, b"v1")
    assert not versions.add("file.buff", "buff.csv", 160.0, b"v1")  # unchanged: no version
    assert versions.add("file.buff", "buff.csv", 220.0, b"v2")
    again = ListVersions(tmp_path)  # as the backtest opens it
    assert [t for t, _ in again.versions("file.buff")] == [100.0, 220.0]
    expected = [(50.0, b"v1"), (100.0, b"v1"), (219.9, b"v1"), (220.0, b"v2"), (1e10, b"v2")]
    assert [again.read_at("file.buff", t) for t, _ in expected] == [v for _, v in expected]
    assert again.read_at("file.other", 150.0) is None


def test_a_cut_index_line_is_ignored_and_a_missing_version_is_named(tmp_path: Path) -> None:
    versions = ListVersions(tmp_path)
    versions.add("file.buff", "buff.csv", 100.0, b"v1")
    index = tmp_path / "lists" / "index.jsonl"
    with index.open("a") as handle:
        handle.write('{"t": 200.0, "source": "file.buff", "sha')  # a crash mid-line
    assert ListVersions(tmp_path).read_at("file.buff", 300.0) == b"v1"
    (digest,) = [p for p in (tmp_path / "lists").iterdir() if p.name != "index.jsonl"]
    digest.unlink()
    with pytest.raises(ConfigError, match="missing") as caught:
        ListVersions(tmp_path).read_at("file.buff", 300.0)
    assert digest.name in str(caught.value)


def test_a_damaged_index_line_is_refused_with_its_place(tmp_path: Path) -> None:
    (tmp_path / "lists").mkdir()
    (tmp_path / "lists" / "index.jsonl").write_text('{"t": "soon"}\n')
    with pytest.raises(ConfigError, match=r"index\.jsonl:1"):
        ListVersions(tmp_path).read_at("file.buff", 1.0)


def test_each_replay_request_meets_the_nearest_live_request_once(tmp_path: Path) -> None:
    path = tmp_path / "requests.jsonl"
    lines = [
        request_line(100.0, 100.4, "/v2/search-items-by-name", 200),
        request_line(
            103.0,
            103.2,
            "/v2/search-items-by-name",
            503,
            body=b"<html>503</html>",
            headers={"content-type": "text/html"},
        ),
        request_line(106.0, 106.1, "/v1/buy-one-p2p", None, error="ReadTimeout"),
    ]
    path.write_text("".join(lines) + '{"sent": 1')  # and a line a crash cut short
    log = NetworkLog.load(path, window=1.5)
    search = "/v2/search-items-by-name"
    first = log.passage(search, 102.5, 0.25)
    assert (first.status, first.failed, first.latency) == (503, True, pytest.approx(0.2))
    assert first.body == "<html>503</html>"
    second = log.passage(search, 102.6, 0.25)  # the 503 is used: the next nearest is too far
    assert (second.failed, second.latency) == (False, pytest.approx(0.4))  # the median
    third = log.passage(search, 100.3, 0.25)
    assert third == Passage(100.0, pytest.approx(0.4), 200)
    assert log.passage("/v1/buy-one-p2p", 106.5, 0.25).error == "ReadTimeout"
    assert log.passage("/v2/get-items-list", 1.0, 0.25).latency == 0.25  # nothing recorded
    assert (log.matched, log.unmatched, log.failures_replayed) == (3, 2, 2)


def test_a_damaged_request_line_is_refused_with_its_place(tmp_path: Path) -> None:
    path = tmp_path / "requests.jsonl"
    path.write_text(json.dumps({"sent": 1.0, "path": "/x"}) + "\n")
    with pytest.raises(ConfigError, match=r"requests\.jsonl:1"):
        NetworkLog.load(path)
