"""The recording transport (``snipe run --record``): the engine gets the same bytes, and
each answer, failure and refusal lands where a replay looks for it."""

from __future__ import annotations

import contextlib
import gzip
import json
from pathlib import Path

import httpx

from engine import VirtualClock
from engine.backtest import read_records
from engine.backtest._network import NetworkLog
from engine.backtest._tee import LiveRecorder, RecordingTransport

from .support import REDLINE, T0, removed, told, up

CSV = gzip.compress(f'item_id,name,price\n1,"{REDLINE}",8000\n'.encode(), mtime=0)
SEARCH = json.dumps(
    {"success": True, "items": {REDLINE: [{"item_id": "1", "name": REDLINE, "price": 8000}]}}
).encode()


def _market(request: httpx.Request) -> httpx.Response:
    path, params = request.url.path, request.url.params
    if path == "/v1/prices/snapshot":
        return httpx.Response(200, content=CSV, headers={"content-type": "application/gzip"})
    if path == "/v2/search-items-by-name":
        if params.get("name") == "html":
            return httpx.Response(200, text="<html>Just a moment...</html>")
        if params.get("name") == "busy":
            return httpx.Response(503, text="<html>503</html>", headers={"retry-after": "1"})
        return httpx.Response(200, content=SEARCH, headers={"content-type": "application/json"})
    if path == "/v1/buy-one-p2p":
        if params.get("item_id") == "lost":
            raise httpx.ReadTimeout("no answer", request=request)
        return httpx.Response(200, json={"success": False, "msg": "Item sold"})
    return httpx.Response(200, json={"success": True})


async def test_answers_failures_and_refusals_are_recorded_as_they_came(tmp_path: Path) -> None:
    clock = VirtualClock(T0)
    bodies: list[bytes] = []
    with LiveRecorder(tmp_path / "rec") as recorder:
        transport = RecordingTransport(httpx.MockTransport(_market), recorder, clock)
        async with httpx.AsyncClient(transport=transport, base_url="http://m") as client:
            bodies.append((await client.get("/v1/prices/snapshot")).content)
            clock.advance(1.0)
            bodies.append((await client.get("/v2/search-items-by-name?name=" + REDLINE)).content)
            for name in ("html", "busy"):
                clock.advance(1.0)
                await client.get(f"/v2/search-items-by-name?name={name}")
            clock.advance(1.0)
            await client.get("/v1/buy-one-p2p?item_id=7&price=100")
            with contextlib.suppress(httpx.ReadTimeout):
                await client.get("/v1/buy-one-p2p?item_id=lost&price=100")
            await client.get("/v1/user")  # not a market answer: not recorded
    assert bodies == [CSV, SEARCH]  # the engine's bytes, untouched
    records = [(r.t - T0, r.k) for r in read_records(tmp_path / "rec")]
    assert records == [(0.0, "head"), (0.0, "key"), (1.0, "search")]
    assert recorder.stats.undecodable == 1  # the HTML page
    log = NetworkLog.load(tmp_path / "rec" / "requests.jsonl")
    html = log.passage("/v2/search-items-by-name", T0 + 2.0, 0.0)
    busy = log.passage("/v2/search-items-by-name", T0 + 3.0, 0.0)
    assert (html.status, html.body) == (200, "<html>Just a moment...</html>")
    assert busy.status == 503
    assert busy.headers is not None
    assert busy.headers["retry-after"] == "1"
    sold = log.passage("/v1/buy-one-p2p", T0 + 4.0, 0.0, key="7")
    assert sold.body is not None
    assert "Item sold" in sold.body
    assert log.passage("/v1/buy-one-p2p", T0 + 4.0, 0.0, key="lost").error == "ReadTimeout"
    assert "/v1/user" not in (tmp_path / "rec" / "requests.jsonl").read_text()


async def test_the_live_feeds_events_are_recorded_with_the_connection_in_the_head(
    tmp_path: Path,
) -> None:
    """``snipe run --record`` hands the feed's events to the recorder (``FeedWatch.observer``):
    a connection told before the first snapshot is in the first segment's head, and the
    events after it are format 2's ``feed`` records at their arrival times."""
    clock = VirtualClock(T0)
    with LiveRecorder(tmp_path / "rec") as recorder:
        recorder.feed_event(T0, up(T0))  # before any snapshot: no segment yet
        transport = RecordingTransport(httpx.MockTransport(_market), recorder, clock)
        async with httpx.AsyncClient(transport=transport, base_url="http://m") as client:
            clock.advance(1.0)
            await client.get("/v1/prices/snapshot")
        recorder.feed_event(T0 + 2, told(T0 + 2, "9", 5000))
        recorder.feed_event(T0 + 3, removed(T0 + 3, "9"))
    records = list(read_records(tmp_path / "rec"))
    assert [(r.t - T0, r.k) for r in records] == [
        (1.0, "head"),
        (1.0, "key"),
        (2.0, "feed"),
        (3.0, "feed"),
    ]
    assert records[0].body["feed"]["gen"] == 1
    assert [r.body["ev"] for r in records[2:]] == ["new", "removed"]
