"""``snipe run --record DIR``: what the live engine received, recorded while it runs.

The seam is the engine's own HTTP transport: :class:`RecordingTransport` wraps the
transport the client sends through (inside the key-injecting wrapper: it reads answer
bodies and the path and named parameters of a request (names, game, cursor, item ids),
never its headers, so the key never reaches the recording) and tees the answers the
engine uses to decide (prices snapshot, v2 search, v2 catalogue pages) to a
:class:`LiveRecorder`.
Why there and not in the engine: it is the one place every answer passes, in the order
and at the moment it arrived, whatever code path asked for it (snapshot runner, flagged
or background search, catalogue walk), and it needs no change to the engine's code, so
what is recorded is what live decided on, not a second poller's view (``snipe record``).

Nothing is written on the buying path: the transport only appends the answer's bytes as
they stream to the engine and, when the body is complete, puts ``(kind, time, bytes)``
on a queue. One writer thread decodes (the same parsers as the client) and writes the
recording (:class:`RecordWriter`, flushed after every record, so a crash loses at most a
line). The thread is a plain thread so the same code runs under asyncio and trio.

Beside the segments the recorder keeps, in the recording directory:

- ``lists/``: every version of every price list the engine read (``file.*``), by content
  hash, with the time it was read (:mod:`._versions`), so a replay reads lists as they
  were then;
- ``decisions.jsonl``: the live run's decisions on listings a rule could afford
  (accepted, or turned down with the reasons), for ``snipe backtest --against``;
- ``requests.jsonl``: how each market-data and purchase request went (sent, answered,
  status; a failed, refused or unreadable answer whole), so a replay meets the same
  latencies and failures (:mod:`._network`).
"""

from __future__ import annotations

import json
import logging
import queue
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import httpx

from .._clock import Clock
from .._errors import APIError, ConfigError
from ..client import FeedConnected, FeedDisconnected
from ..hookspecs import hookimpl
from ..models import CataloguePage, SearchResponse, decode_per_item
from ..snapshot import parse_csv_snapshot
from ._feedrecord import event_time
from ._format import HEADER_FILE, RecordWriter, Row, read_header
from ._network import REQUESTS_FILE, request_line
from ._record import listing_entry
from ._versions import ListVersions

__all__ = [
    "DECISIONS_FILE",
    "LiveRecorder",
    "RecordingStats",
    "RecordingTransport",
    "attach_recorder",
    "decision_line",
]

log = logging.getLogger("snipe.record")

DECISIONS_FILE = "decisions.jsonl"
_SNAPSHOT = "/v1/prices/snapshot"
_SEARCH = "/v2/search-items-by-name"
_CATALOGUE = "/v2/get-items-list"
_TEED = frozenset({_SNAPSHOT, _SEARCH, _CATALOGUE})
_BUYING = frozenset({"/v1/buy-one-p2p", "/v1/buy"})
_TIMED = _TEED | _BUYING
"""The requests whose latency and failures a replay reproduces (``requests.jsonl``)."""
_KEPT_HEADERS = frozenset({"content-type", "retry-after"})
_CONTEXT: dict[str, Any] = {"image_base_url": None}


@dataclass
class RecordingStats:
    snapshots: int = 0
    searches: int = 0
    catalogue_pages: int = 0
    list_versions: int = 0
    decisions: int = 0
    undecodable: int = 0
    """Answers the recorder could not decode (the engine could not either: it got an
    error for them and decided nothing on them)."""
    set_aside: int = 0
    """Listings set aside one by one while decoding (the engine set them aside too)."""
    failed: str | None = None
    """Why the writer thread stopped recording, if it did (a full disk...)."""


class LiveRecorder:
    """The writer thread and its queue. Use as a context manager around the run; the
    recording is closed (its open segment renamed) when it exits."""

    def __init__(self, directory: str | Path, *, source: str = "") -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        if (self.directory / HEADER_FILE).exists():
            read_header(self.directory)  # a foreign directory is refused before the run
        self.source = source
        self.stats = RecordingStats()
        self._queue: queue.SimpleQueue[tuple[str, float, Any] | None] = queue.SimpleQueue()
        self._writer: RecordWriter | None = None
        self._connection: tuple[float, FeedConnected | FeedDisconnected] | None = None
        self._games: dict[str, Sequence[Row]] = {}
        self._versions = ListVersions(self.directory)
        self._files: dict[str, IO[str]] = {}
        self._thread = threading.Thread(target=self._work, name="snipe-record", daemon=True)
        self._started = False

    # -- the engine's side: cheap, never blocks --------------------------------------------

    def answer(
        self, kind: str, t: float, payload: Any, *, sent: float, headers: dict[str, str]
    ) -> None:
        """An answer sent at ``sent`` that arrived at ``t`` (engine clock): queued for the
        writer thread."""
        self._queue.put((kind, t, (payload, sent, headers)))

    def request(
        self,
        sent: float,
        t: float,
        path: str,
        status: int | None,
        *,
        headers: dict[str, str] | None = None,
        body: bytes | None = None,
        error: str | None = None,
        key: str | None = None,
    ) -> None:
        """How a request went (its answer not recorded as a record): ``requests.jsonl``."""
        line = request_line(sent, t, path, status, headers=headers, body=body, error=error, key=key)
        self._queue.put(("request", t, line))

    def bought(
        self,
        sent: float,
        t: float,
        path: str,
        status: int,
        headers: dict[str, str],
        body: bytes,
        key: str,
    ) -> None:
        """A purchase's answer: kept whole in ``requests.jsonl`` when it failed or was a
        refusal (``success: false``), which the replay answers again (checked in the
        writer thread)."""
        self._queue.put(("buy", t, (sent, path, status, headers, body, key)))

    def list_read(self, source: str, origin: str, t: float, data: bytes) -> None:
        """The reference hub read price list ``source`` (``data``, as read) at ``t``."""
        self._queue.put(("list", t, (source, origin, data)))

    def decisions(self, t: float, decisions: Sequence[Any], ceilings: dict[str, int]) -> None:
        """One evaluation batch's decisions (their reasons are read in the thread)."""
        self._queue.put(("decisions", t, (list(decisions), ceilings)))

    def feed_event(self, t: float, event: Any) -> None:
        """A live feed event the engine received at ``t`` (its arrival time), written as
        format 2's ``feed`` kind by the writer thread (``FeedWatch.observer`` calls it,
        set by :func:`attach_recorder`)."""
        self._queue.put(("feed", t, event))

    def describe(self) -> str:
        """One line: what was recorded where (after :meth:`close`)."""
        s = self.stats
        line = (
            f"snipe run: recorded {s.snapshots} snapshots, {s.searches} searches,"
            f" {s.catalogue_pages} catalogue pages, {s.decisions} decisions and"
            f" {s.list_versions} price list versions into {self.directory}"
        )
        if s.undecodable:
            line += f"; {s.undecodable} answers could not be recorded"
        if s.failed:
            line += f"; RECORDING STOPPED: {s.failed}"
        return line

    # -- lifetime ------------------------------------------------------------------------

    def __enter__(self) -> LiveRecorder:
        self._started = True
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Write what is queued, then close the recording (blocks until written)."""
        if self._started:
            self._queue.put(None)
            self._thread.join()
            self._started = False

    # -- the writer thread -----------------------------------------------------------------

    def _work(self) -> None:
        try:
            while True:
                task = self._queue.get()
                if task is None:
                    return
                kind, t, payload = task
                if self.stats.failed is not None:
                    continue  # keep draining: the engine must never wait on a full queue
                try:
                    self._write(kind, t, payload)
                except OSError as exc:
                    self.stats.failed = f"{type(exc).__name__}: {exc}"
                    log.error("recording stopped (the engine goes on): %s", self.stats.failed)
                except Exception:  # one odd answer must not end the recording
                    self.stats.undecodable += 1
                    log.warning("recording: a %s answer could not be recorded", kind, exc_info=True)
        finally:
            if self._writer is not None:
                self._writer.close()
            for handle in self._files.values():
                handle.close()

    def _write(self, kind: str, t: float, payload: Any) -> None:
        if kind in ("snapshot", "search", "cat"):
            what, sent, headers = payload
            path = {"snapshot": _SNAPSHOT, "search": _SEARCH, "cat": _CATALOGUE}[kind]
            try:
                if kind == "snapshot":
                    self._snapshot(t, *what)
                elif kind == "search":
                    self._search(t, *what)
                else:
                    self._catalogue(t, *what)
            except (ValueError, ConfigError, APIError):
                # unreadable (an HTML page with a 200): the engine got an error for it; the
                # replay answers its request the same way
                self.stats.undecodable += 1
                line = request_line(sent, t, path, 200, headers=headers, body=what[-1])
            else:
                line = request_line(sent, t, path, 200)
            self._line("requests", line)
        elif kind == "request":
            self._line("requests", payload)
        elif kind == "buy":
            sent, path, status, headers, body, key = payload
            kept = status != 200 or _refused(body)
            line = request_line(sent, t, path, status, headers=headers if kept else None,
                                body=body if kept else None, key=key)  # fmt: skip
            self._line("requests", line)
        elif kind == "list":
            source, origin, data = payload
            if self._versions.add(source, origin, t, data):
                self.stats.list_versions += 1
        elif kind == "decisions":
            self._write_decisions(t, *payload)
        elif kind == "feed":
            if isinstance(payload, FeedConnected | FeedDisconnected):
                self._connection = (t, payload)  # for a writer opened later: its heads
            if self._writer is not None:
                self._writer.feed(t, payload)

    def _line(self, name: str, line: str) -> None:
        handle = self._files.get(name)
        if handle is None:
            file = REQUESTS_FILE if name == "requests" else DECISIONS_FILE
            handle = self._files[name] = (self.directory / file).open("a", encoding="utf-8")
        handle.write(line)
        handle.flush()

    def _open(self, include_hold: bool) -> RecordWriter:
        if self._writer is None:
            self._writer = RecordWriter(
                self.directory, include_hold=include_hold, source=self.source
            )
            if self._connection is not None:  # the feed's state for the first head
                self._writer.feed(*self._connection)
        return self._writer

    def _snapshot(self, t: float, game: str | None, include_hold: bool, body: bytes) -> None:
        snapshot = parse_csv_snapshot([body], source=_SNAPSHOT)
        rows: list[Row] = [
            (x.item_id, x.name, x.price, x.unlock_at, x.send_until)
            for x in snapshot
            if x.price is not None
        ]
        # A snapshot per game (the engine asks for the games its rules watch): the
        # recording's snapshot is their union, as the whole market would show it.
        self._games[game or ""] = rows
        union = rows if len(self._games) == 1 else [r for g in self._games.values() for r in g]
        self._open(include_hold).snapshot(t, union)
        self.stats.snapshots += 1

    def _search(self, t: float, names: list[str], game: str | None, body: bytes) -> None:
        answer = decode_per_item(SearchResponse, body, context=_CONTEXT)
        if not answer.success:
            raise ValueError("a refusal (success: false)")
        self.stats.set_aside += len(answer.set_aside)
        items = {n: [listing_entry(x) for x in found] for n, found in answer.items.items()}
        if self._writer is not None:  # before the first snapshot, there is no segment yet
            self._writer.search(t, names, game, items)
            self.stats.searches += 1

    def _catalogue(self, t: float, query: dict[str, Any], body: bytes) -> None:
        page = decode_per_item(CataloguePage, body, context=_CONTEXT)
        if not page.success:
            raise ValueError("a refusal (success: false)")
        self.stats.set_aside += len(page.set_aside)
        if self._writer is not None:
            self._writer.catalogue(t, query, [listing_entry(x) for x in page.items])
            self.stats.catalogue_pages += 1

    def _write_decisions(self, t: float, decisions: list[Any], ceilings: dict[str, int]) -> None:
        lines = []
        for decision in decisions:
            # Only listings a rule could afford say anything about parity; the reasons
            # of the others (most of them) would cost a rule check each for nothing.
            if not decision.accepted and decision.price > ceilings.get(decision.rule, 0):
                continue
            lines.append(decision_line(t, decision))
        if lines:
            self._line("decisions", "".join(lines))
            self.stats.decisions += len(lines)


def decision_line(t: float, decision: Any) -> str:
    """One decision as a JSON line of ``decisions.jsonl``."""
    entry = {
        "t": t,
        "item_id": decision.listing.item_id,
        "name": decision.listing.name,
        "rule": decision.rule,
        "price": decision.price,
        "accepted": decision.accepted,
        "reasons": list(decision.reasons),
    }
    return json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n"


class _DecisionTap:
    """The plugin that hands each evaluation batch to the recorder (a list append: the
    reasons are read in the writer thread, off the buying path)."""

    def __init__(self, recorder: LiveRecorder, engine: Any) -> None:
        self.recorder = recorder
        self.engine = engine

    @hookimpl
    def snipe_decisions(self, decisions: Sequence[Any], context: Any) -> None:
        ceilings = {r.name: r.max_price for r in self.engine.ruleset.rules}
        self.recorder.decisions(context.now, decisions, ceilings)


def attach_recorder(engine: Any, recorder: LiveRecorder) -> None:
    """Record ``engine``'s decisions and the price lists it reads into ``recorder`` (the
    answers come through :class:`RecordingTransport`, given to the engine's session)."""
    engine.host.register(_DecisionTap(recorder, engine), "record.decisions", source="--record")
    engine.references.list_observer = recorder.list_read
    engine.feedwatch.observer = lambda event: recorder.feed_event(event_time(event), event)


class RecordingTransport(httpx.AsyncBaseTransport):
    """Sends through ``inner`` and tees the decision-making answers to ``recorder``, and
    how each market-data or purchase request went (its latency, its failure) to
    ``requests.jsonl`` (see the module docstring). The bytes the engine gets are not
    changed."""

    def __init__(
        self, inner: httpx.AsyncBaseTransport, recorder: LiveRecorder, clock: Clock
    ) -> None:
        self.inner = inner
        self.recorder = recorder
        self.clock = clock

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        timed = path in _TIMED
        key = _buy_key(request) if path in _BUYING else None
        sent = self.clock.now()
        try:
            response = await self.inner.handle_async_request(request)
        except Exception as exc:
            if timed:
                name = type(exc).__name__
                self.recorder.request(sent, self.clock.now(), path, None, error=name, key=key)
            raise
        if not timed:
            return response
        params = request.url.params
        what: tuple[Any, ...] = ()
        kind = "request"
        if key is not None:
            kind, what = "buy", (key,)
        if response.status_code == 200 and request.method == "GET" and path in _TEED:
            if path == _SNAPSHOT:
                what = (params.get("game"), params.get("include_hold") in ("1", "true"))
                kind = "snapshot"
            elif path == _SEARCH:
                what = (params.get_list("name"), params.get("game"))
                kind = "search"
            else:
                query = {k: params.get(k) for k in ("order_by", "order", "cursor", "game")}
                what = ({k: v for k, v in query.items() if v is not None},)
                kind = "cat"
        done = self._done(kind, what, response, sent, path)
        recorder, clock = self.recorder, self.clock

        def failed(error: str) -> None:
            recorder.request(sent, clock.now(), path, None, error=error, key=key)

        stream = _TeeStream(response.stream, done, failed)
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=stream,
            extensions=response.extensions,
            request=request,
        )

    def _done(
        self, kind: str, what: tuple[Any, ...], response: httpx.Response, sent: float, path: str
    ) -> Callable[[bytes], None]:
        recorder, clock = self.recorder, self.clock
        status = response.status_code
        headers = {k: v for k, v in response.headers.items() if k.lower() in _KEPT_HEADERS}
        encoding = response.headers.get("content-encoding", "identity").lower()

        def done(body: bytes) -> None:
            now = clock.now()
            if kind != "snapshot" and encoding not in ("", "identity"):
                # JSON answers are decoded as the client decodes them (the snapshot's
                # parser takes its raw bytes, gzip or not, as the engine's does).
                body = httpx.Response(200, headers=response.headers, content=body).content
            if kind == "buy":
                recorder.bought(sent, now, path, status, headers, body, what[0])
            elif kind == "request":
                failed = status != 200
                recorder.request(sent, now, path, status, headers=headers if failed else None,
                                 body=body if failed else None)  # fmt: skip
            else:
                recorder.answer(kind, now, (*what, body), sent=sent, headers=headers)

        return done

    async def aclose(self) -> None:
        await self.inner.aclose()


def _buy_key(request: httpx.Request) -> str:
    """What a purchase request buys (its item ids), to match it in a replay."""
    if request.method == "GET":
        return str(request.url.params.get("item_id", ""))
    try:
        items = json.loads(request.content or b"{}").get("items", [])
        return ",".join(sorted(str(i.get("item_id")) for i in items))
    except (ValueError, AttributeError, httpx.RequestNotRead):
        return ""


def _refused(body: bytes) -> bool:
    try:
        answer = json.loads(body)
    except ValueError:
        return True  # not JSON: the engine could not read it either
    return isinstance(answer, dict) and answer.get("success") is False


class _TeeStream(httpx.AsyncByteStream):
    """The answer's raw bytes, passed on as they come and kept; handed over once the
    body is complete (an answer cut short is not recorded: the engine got an error)."""

    def __init__(
        self, inner: Any, done: Callable[[bytes], None], failed: Callable[[str], None]
    ) -> None:
        self._inner = inner
        self._done = done
        self._failed = failed
        self._parts: list[bytes] = []

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._inner:
                self._parts.append(chunk)
                yield chunk
        except Exception as exc:  # the connection broke mid-body: the engine gets it too
            self._failed(type(exc).__name__)
            raise
        parts, self._parts = self._parts, []
        self._done(b"".join(parts))

    async def aclose(self) -> None:
        await self._inner.aclose()
