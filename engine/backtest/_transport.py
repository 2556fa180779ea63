"""The replay marketplace as an ``httpx`` transport: the engine's own client talks to it.

It answers the endpoints the engine calls (snapshot CSV, the price list, v2 search by
name, buy one, bulk buy, check by project id, user, trade link check) from a
:class:`ReplayMarket` brought up to the simulated clock before every answer. A purchase
first moves the clock on by the fill model's latency: the request arrives that much
later, and the listing must still be there then.
"""

from __future__ import annotations

import functools
import gzip
import heapq
import json
import urllib.parse
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from itertools import compress, islice, repeat
from operator import is_, is_not, itemgetter
from typing import Any, cast

import httpx

from .._clock import VirtualClock
from ..snapshot import CHANGES_EXTENSION
from ._market import BuyAnswer, Held, ReplayMarket
from ._network import NetworkLog
from ._served import SNAPSHOT_HEADERS, ServedSnapshot, snapshot_line

__all__ = ["ReplayTransport"]


@functools.lru_cache(maxsize=65_536)
def _rfc3339(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _json(body: Any, status: int = 200) -> httpx.Response:
    return httpx.Response(status, content=json.dumps(body).encode(), headers=_JSON)


_JSON = {"content-type": "application/json"}
_ITEMS = b'{"success": true, "items": {'
_NO_ITEMS = _ITEMS + b"}}"
_NO_RANKS: list[tuple[int, str]] = []
_NEVER = float("inf")
_MISSING = object()
_ITEM_ID = itemgetter(1)
_string: Callable[[str], str] = json.encoder.encode_basestring_ascii
"""A string's JSON text, as ``json.dumps`` writes it (ASCII only)."""


class _Part:
    """A name's part of a search answer as made: the name's version then, until when it
    holds (the first lock among its listings to end), its text and item ids; with
    ``include_hold``, what :meth:`ReplayTransport._hold_part` patches the next one from:
    its entries (and a ``None`` after them), its listings' places in the name's sorted
    listings (the very tuples), their details (or ``None`` when the market had none; a
    sentinel after them), the ``unlock_at`` of those locked then (else ``None``; a
    ``None`` after them), and the name's reference."""

    __slots__ = (
        "details",
        "entries",
        "ids",
        "keys",
        "looked",
        "reference",
        "text",
        "unlocks",
        "until",
        "version",
    )

    def __init__(self, version: int, until: float, text: bytes, ids: list[str]) -> None:
        self.version = version
        self.until = until
        self.text = text
        self.ids = ids
        self.entries: list[str | None] = []
        self.keys: list[tuple[int, str]] | None = None
        self.details: list[Any] | None = None
        self.unlocks: list[int | None] = []
        self.reference: int | None = None
        self.looked = 0
        """The :attr:`ReplayMarket.search_epoch` after the last search whose candidates
        were looked for among :attr:`ids` (see :attr:`ReplayMarket.candidate_marks`)."""


_TEXTS_HELD = 500_000
_BUYING = frozenset({"/v1/buy-one-p2p", "/v1/buy"})
_NETWORKED = frozenset(
    {
        "/v1/prices/snapshot",
        "/v2/search-items-by-name",
        "/v2/get-items-list",
        "/v1/buy-one-p2p",
        "/v1/buy",
    }
)


class ReplayTransport(httpx.AsyncBaseTransport):
    """Serves a :class:`ReplayMarket` on a :class:`VirtualClock`. ``on_search`` is called
    with every search answer's listings (item ids), for the report."""

    secrets_unread = True
    """The replay reads no API key: the client's key-injecting transport hands it the
    keyless request (``engine.client``'s ``SECRETS_UNREAD``)."""

    def __init__(
        self,
        market: ReplayMarket,
        clock: VirtualClock,
        *,
        on_search: Callable[[list[str]], None] | None = None,
        network: NetworkLog | None = None,
        concurrent: bool = False,
    ) -> None:
        self.market = market
        self.clock = clock
        self.concurrent = concurrent
        self.network = network
        """The live run's requests (``--against``): each request takes the latency, and
        meets the failure, of the live request nearest in time (:mod:`._network`)."""
        self._on_search = on_search
        self._csv_cache: tuple[tuple[int, bool], bytes] | None = None
        self.requests: dict[str, int] = {}
        self._quoted: dict[str, str] = {}
        self._lines: dict[bool, tuple[dict[str, Held], dict[str, str | None]]] = {}
        self._texts: dict[str, tuple[Held, Any, int | None, bool, str]] = {}
        self._parts: dict[bool, dict[str, _Part]] = {True: {}, False: {}}
        """Each name's part of a search answer made last, by ``include_hold``."""
        self._names: dict[str, str] = {}
        self._served: dict[bool, ServedSnapshot] = {}
        self._decoded: dict[bytes, list[tuple[str, str]]] = {}

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        key = f"{request.method} {path}"
        self.requests[key] = self.requests.get(key, 0) + 1
        if self.network is not None and path in _NETWORKED:
            return await self._as_live(key, request)
        return await self._answer(key, request, waited=False)

    async def _as_live(self, key: str, request: httpx.Request) -> httpx.Response:
        """A request met as the live request nearest in time was (:mod:`._network`). A
        purchase reaches the market after the fill model's latency at most (the live one
        was committed somewhere within its latency, and the recording shows the listing
        gone soon after: a replay purchase arriving later would find its own purchase
        gone); its answer comes after the live latency. A failed live purchase that live
        was charged for after all (found by project_id) is committed all the same."""
        assert self.network is not None
        path = request.url.path
        buying = path in _BUYING
        items = await _buy_key(request) if buying else None
        now = self.clock.now()
        passage = self.network.passage(path, now, self.market.fill.latency, key=items)
        # market data comes after the live latency, and never before the live answer came
        # (a request sent a moment earlier than live's waits for what live got); a
        # purchase, matched by its items, takes the live latency only
        latency = passage.latency
        if not buying:
            latency = max(latency, passage.sent + passage.latency - now)
        first = min(self.market.fill.latency, latency) if buying else latency
        await self._wait(first)
        rest = latency - first
        if not passage.failed:
            response = await self._answer(key, request, waited=True)
            await self._wait(rest)
            return response
        if buying:
            await self._commit_charged(request)
        await self._wait(rest)
        if passage.error is not None:
            raise httpx.ReadError(f"as live: {passage.error}", request=request)
        return httpx.Response(
            passage.status or 200,
            headers=passage.headers or {},
            content=(passage.body or "").encode("utf-8"),
        )

    async def _commit_charged(self, request: httpx.Request) -> None:
        assert self.network is not None
        charged = self.network.charged
        params = request.url.params
        if request.method == "GET":
            wanted = [
                (params.get("item_id", ""), params.get("price", "0"), params.get("project_id"))
            ]
            locked = params.get("allow_trade_locked") == "1"
        else:
            body = json.loads(await request.aread() or b"{}")
            wanted = [(str(i["item_id"]), i["price"], i.get("project_id")) for i in body["items"]]
            locked = bool(body.get("allow_trade_locked"))
        now = self.clock.now()
        self.market.advance_to(now)
        for item_id, price, project_id in wanted:
            if item_id in charged:
                self.market.buy(
                    item_id, int(price), allow_locked=locked, project_id=project_id, now=now
                )

    async def _answer(self, key: str, request: httpx.Request, *, waited: bool) -> httpx.Response:
        self.market.advance_to(self.clock.now())
        if key == "GET /v2/search-items-by-name":
            return self._search(*self._search_query(request.url.query))
        if key == "GET /v1/user":  # (the reconcile step's, as /v1/buy-orders: no query read)
            wallet = self.market.balance(self.clock.now())
            return _json({"success": True, "user": {"wallet": wallet, "can_p2p": True}})
        if key == "GET /v1/buy-orders":
            return _json({"success": True, "offers": []})
        params = request.url.params
        if key == "GET /v1/prices":
            return self._prices()
        if key == "GET /v1/prices/snapshot":
            return self._snapshot(include_hold=params.get("include_hold") in ("1", "true"))
        if key == "GET /v2/get-items-list":
            return self._catalogue(params)
        if key == "GET /v1/buy-one-p2p":
            return await self._buy_one(params, waited)
        if key == "POST /v1/buy":
            await request.aread()
            return await self._buy_bulk(json.loads(request.content or b"{}"), waited)
        if key == "GET /v1/check-many-project-id":
            return self._project_ids(params.get_list("id"))
        if key == "POST /v1/check-tradelink":
            return _json({"success": True, "msg": None, "info": None})
        if key == "POST /v1/create-buy-order":
            return _json({"success": False, "msg": "buy orders are not replayed in backtests"})
        if key == "GET /v1/remove-buy-order":
            return _json({"success": True, "msg": None, "removed": 0})
        return _json({"success": False, "msg": f"not recorded: {key}"}, 404)

    async def _wait(self, latency: float) -> None:
        """The request's latency: slept when the engine runs its runners side by side
        (``concurrent``: the others go on meanwhile, as live), else the clock moved on."""
        if latency <= 0:
            return
        if self.concurrent:
            await self.clock.sleep(latency)
        else:
            self.clock.advance(latency)

    # -- market data ---------------------------------------------------------------------

    def _snapshot(self, *, include_hold: bool) -> httpx.Response:
        if not self.concurrent and self.network is None:
            return self._snapshot_changes(include_hold)
        cache_key = (self.market.snapshot_version, include_hold)
        if self._csv_cache is None or self._csv_cache[0] != cache_key:
            # (a cached answer shows only what the previous one showed: nothing new)
            self.market.snapshot_served(self.clock.now(), include_hold=include_hold)
            self._csv_cache = (cache_key, self._snapshot_bytes(include_hold))
        headers = {"content-type": "application/gzip"}
        return httpx.Response(200, content=self._csv_cache[1], headers=headers)

    def _snapshot_changes(self, include_hold: bool) -> httpx.Response:
        """The snapshot answer told as changes from the previous one (:mod:`._served`):
        the engine's tracker takes them instead of the body, which is built only if read.
        Only when requests are answered one at a time, each read before the next (no
        ``concurrent`` runners, no ``network`` failures): a tracker then always holds the
        previous answer. A new answer only once the recording's snapshot has changed
        (the service rebuilds it every 10 s), as :meth:`_snapshot_bytes` is cached."""
        market, now = self.market, self.clock.now()
        served = self._served.get(include_hold)
        headers = {"content-type": "application/gzip"}
        if served is None:
            market.keep_journal()
            self._note_changes()
            market.snapshot_served(now, include_hold=include_hold)
            served = self._served[include_hold] = ServedSnapshot(
                market, include_hold=include_hold, now=now
            )
            extensions = {CHANGES_EXTENSION: served.first()}
            return httpx.Response(
                200, content=served.body(), headers=headers, extensions=extensions
            )
        if served.version != market.snapshot_version:
            self._note_changes()
            market.snapshot_served(now, include_hold=include_hold)
            changes = served.advance(now)
        else:
            changes = served.changes()
        extensions = {CHANGES_EXTENSION: changes}
        return httpx.Response(200, stream=served.stream(), headers=headers, extensions=extensions)

    def _note_changes(self) -> None:
        changed = self.market.drain_journal()
        for served in self._served.values():
            served.note(changed)

    def _prices(self) -> httpx.Response:
        """``GET /v1/prices`` as the recording knows it now: per name, the listings held
        and their lowest price, and the reference price the recorded search answers gave
        (none before one did). Recordings do not carry games: ``game`` is not filtered."""
        rows: dict[str, dict[str, Any]] = {}
        for name, price, _, _ in self.market.listings.values():
            row = rows.get(name)
            if row is None:
                row = rows[name] = {"name": name, "count": 0, "min": price}
                reference = self.market.references.get(name)
                if reference:
                    row["platform_price"] = reference
            row["count"] += 1
            row["min"] = min(row["min"], price)
        return _json({"success": True, "items": [rows[n] for n in sorted(rows)]})

    def _snapshot_bytes(self, include_hold: bool) -> bytes:
        # Rebuilt after every recorded snapshot for the kept names. Each listing's line is
        # kept while its row is the same object (the market puts a new tuple in on any
        # change): the rows that changed are found by C-level maps and only their lines
        # are written anew, so a snapshot is mostly a join of kept lines.
        listings = self.market.listings
        ids = list(listings)
        rows = list(listings.values())
        before_rows, before_lines = self._lines.get(include_hold, ({}, {}))
        lines: list[str | None] = list(map(before_lines.get, ids))
        quoted = self._quoted
        for i in compress(range(len(ids)), map(is_not, map(before_rows.get, ids), rows)):
            lines[i] = snapshot_line(ids[i], rows[i], include_hold, quoted)
        self._lines[include_hold] = (dict(listings), dict(zip(ids, lines, strict=True)))
        if not include_hold:
            now = self.clock.now()
            lines = list(compress(lines, [r[2] is None or r[2] <= now for r in rows]))
        header = SNAPSHOT_HEADERS[include_hold].decode().rstrip("\n")
        text = "\n".join([header, *cast("list[str]", lines), ""])
        # stored, not deflated: the engine inflates it at once, in the same process
        return gzip.compress(text.encode("utf-8"), compresslevel=0, mtime=0)

    def _search_query(self, query: bytes) -> tuple[list[str], bool]:
        """A search's names and ``include_hold``, read from its query as ``QueryParams``
        reads it (each ``name=`` value decoded once for the whole replay: the engine
        searches the same names again and again; decoding its 50 names was a tenth of
        a search's cost)."""
        names: list[str] = []
        include_hold: str | None = None
        decoded = self._decoded
        for field in query.split(b"&"):
            value = decoded.get(field)
            if value is None:
                if len(decoded) >= _TEXTS_HELD:
                    decoded.clear()
                value = decoded[field] = urllib.parse.parse_qsl(
                    field.decode("ascii"), keep_blank_values=True
                )
            for name, text in value:
                if name == "name":
                    names.append(text)
                elif name == "include_hold" and include_hold is None:
                    include_hold = text
        return names, include_hold in ("1", "true")

    def _search(self, names: list[str], include_hold: bool) -> httpx.Response:
        now = self.clock.now()
        parts: list[bytes] = []
        shown: list[list[str]] = []  # each part's item ids
        fresh: list[str] = []  # the listings whose entries were made now: the others were shown
        market = self.market
        held_parts, versions = self._parts[include_hold], market.name_versions
        # the parts that may show a candidate: those made now, and a kept one of a name a
        # listing of which became a candidate since the kept part was last looked at
        may_show: list[list[str]] = []
        marks, epoch = market.candidate_marks, market.search_epoch
        for name in names:
            # a kept part (most are) found here, without a call
            held = held_parts.get(name)
            if held is not None and held.version == versions.get(name, 0) and now < held.until:
                parts.append(held.text)
                shown.append(held.ids)
                if marks.get(name, -1) >= held.looked:
                    may_show.append(held.ids)
                    held.looked = epoch + 1
                continue
            part, ids, made = self._name_part(name, include_hold, now, held)
            held_parts[name].looked = epoch + 1
            parts.append(part)
            shown.append(ids)
            may_show.append(ids)
            fresh.extend(made)
        market.saw_all(may_show, "search", now, unsighted=fresh)
        if self._on_search is not None:
            self._on_search([item_id for ids in shown for item_id in ids])
        # the same text json.dumps gives for {"success": true, "items": {...}}: each part
        # is held with the ", " before it (one copy of the answer, not two)
        if not parts:
            return httpx.Response(200, content=_NO_ITEMS, headers=_JSON)
        parts[0] = _ITEMS + parts[0][2:]
        parts.append(b"}}")
        return httpx.Response(200, content=b"".join(parts), headers=_JSON)

    def _name_part(
        self, name: str, include_hold: bool, now: float, held: _Part | None
    ) -> tuple[bytes, list[str], list[str]]:
        """One name's part of a search answer (``, "name": [entries]``) made anew, its
        item ids, and those whose entries were made now (the others were in an answer
        before, so were sighted). ``held``, the part made last, was not kept by
        :meth:`_search`: the name changed (:attr:`ReplayMarket.name_versions`) or a lock
        of its listings ended (most names are searched many times between changes)."""
        version = self.market.name_versions.get(name, 0)
        if include_hold:
            return self._hold_part(name, version, held, now)
        found, until = self.market.listings_of(name, include_hold=False, now=now)
        entries: list[str] = []
        made: list[str] = []
        for item_id, row in found:
            text = self._held_text(item_id, row, row[2] is not None and row[2] > now)
            if text is None:
                text = self._entry_text(item_id, row, now)[1]
                made.append(item_id)
            entries.append(text)
        ids = [item_id for item_id, _ in found]
        part = _Part(version, until, self._part_text(name, entries), ids)
        self._parts[False][name] = part
        return part.text, ids, made

    def _hold_part(
        self, name: str, version: int, held: _Part | None, now: float
    ) -> tuple[bytes, list[str], list[str]]:
        """:meth:`_name_part` with ``include_hold`` (the name's first 50 listings, locked
        or not), patched from the name's last part: a changed name mostly changed in one
        or two of its 50 listings. A listing whose place in the name's sorted listings
        (:meth:`ReplayMarket.ranked`) is the same object as in the last part is the same
        listing at the same price, with the same lock (a listing's ``unlock_at`` is set
        when it is added, and a new one gets a new place): its entry is kept unless its
        details are another object now. Made anew when the name's reference changed or
        a lock of the last part ended (:attr:`_Part.until`). Nothing is looked up for a
        kept entry (looking each listing up was most of a changed name's cost)."""
        market = self.market
        details = market.details
        reference = market.references.get(name)
        keys = (market.ranked(name) or _NO_RANKS)[:50]
        count = len(keys)
        ids = list(map(_ITEM_ID, keys))
        todo: Iterable[int]
        if held is None or held.keys is None or now >= held.until or held.reference != reference:
            entries: list[str | None] = [None] * count
            unlocks: list[int | None] = [None] * count
            todo = range(count)
        else:
            was = dict(zip(map(id, held.keys), range(len(held.keys)), strict=True))
            # (the last part holds its keys, these are in the market: no id is reused)
            at = list(map(was.get, map(id, keys), repeat(-1)))
            entries = list(map(held.entries.__getitem__, at))  # -1: its None, made below
            unlocks = list(map(held.unlocks.__getitem__, at))
            if details or held.details is not None:
                before = held.details or [None] * len(held.keys) + [_MISSING]
                stale = map(is_not, map(details.get, ids), map(before.__getitem__, at))
            else:
                stale = map(is_, entries, repeat(None))
            todo = list(compress(range(count), stale))
        made: list[str] = []
        listings, texts = market.listings, self._texts
        for i in todo:
            item_id = ids[i]
            row = listings[item_id]
            unlock_at = row[2]
            locked = unlock_at is not None and unlock_at > now
            unlocks[i] = unlock_at if locked else None
            # _held_text inline
            held_text = texts.get(item_id)
            if (
                held_text is not None
                and held_text[0] is row
                and held_text[1] is details.get(item_id)
                and held_text[2] == reference
                and held_text[3] == locked
            ):
                entries[i] = held_text[4]
            else:
                entries[i] = self._entry_text(item_id, row, now)[1]
                made.append(item_id)
        market.shown(name, count)
        done = cast("list[str]", entries)
        until = min(filter(None, unlocks), default=_NEVER)  # (the locks that end after now)
        part = _Part(version, until, self._part_text(name, done), ids)
        entries.append(None)
        unlocks.append(None)
        part.entries, part.unlocks, part.keys, part.reference = entries, unlocks, keys, reference
        if details:
            part.details = [*map(details.get, ids), _MISSING]
        self._parts[True][name] = part
        return part.text, ids, made

    def _part_text(self, name: str, entries: list[str]) -> bytes:
        return f", {self._json_name(name)}: [{', '.join(entries)}]".encode()

    def _json_name(self, name: str) -> str:
        """``json.dumps(name)``, kept."""
        quoted = self._names.get(name)
        if quoted is None:
            if len(self._names) >= _TEXTS_HELD:
                self._names.clear()
            quoted = self._names[name] = _string(name)
        return quoted

    def _held_text(self, item_id: str, row: Held, locked: bool) -> str | None:
        """The listing's entry made before, if what it is made of is the same (see
        :meth:`_entry_text`)."""
        held = self._texts.get(item_id)
        if (
            held is not None
            and held[0] is row
            and held[1] is self.market.details.get(item_id)
            and held[2] == self.market.references.get(row[0])
            and held[3] == locked
        ):
            return held[4]
        return None

    def _entry_text(self, item_id: str, row: Held, now: float) -> tuple[str, str]:
        """``(item_id, the listing's JSON text)``: kept per listing while what it is made
        of (its row, details, reference and whether it is locked now) stays the same, as
        most listings do from one search to the next (a backtest's searches see each
        listing hundreds of times: encoding them anew was a third of a search's cost)."""
        detail = self.market.details.get(item_id)
        reference = self.market.references.get(row[0])
        locked = row[2] is not None and row[2] > now
        held = self._texts.get(item_id)
        if (
            held is not None
            and held[0] is row
            and held[1] is detail
            and held[2] == reference
            and held[3] == locked
        ):
            return item_id, held[4]
        if len(self._texts) >= _TEXTS_HELD:
            self._texts.clear()
        if detail is None:
            entry = self._plain_entry(item_id, row, reference, locked)
        else:
            entry = json.dumps(self._entry(item_id, row, now))
        self._texts[item_id] = (row, detail, reference, locked, entry)
        return item_id, entry

    def _catalogue(self, params: httpx.QueryParams) -> httpx.Response:
        """The best-discount listings of the kept names, 100 a page (``cursor`` is the
        offset). Recordings do not carry games, so ``game`` is not filtered."""
        include_hold = params.get("include_hold") in ("1", "true")
        now = self.clock.now()
        market = self.market
        offset = int(params.get("cursor") or 0)
        limit = int(params.get("limit") or 100)
        wanted = offset + limit + 1 if offset >= 0 and limit >= 0 else None
        ranked = self._ranked(include_hold, now, wanted)
        page = ranked[offset : offset + limit]
        items = []
        for ratio, item_id, row, reference in page:
            entry = self._entry(item_id, row, now)
            entry["discount"] = round((1 - ratio) * 100, 2)
            entry["best_deals"] = reference - row[1]
            items.append(entry)
            market.saw(item_id, "catalogue", now)
        more = offset + limit < len(ranked)
        body: dict[str, Any] = {"success": True, "items": items, "count": len(items)}
        body["has_more"] = more
        if more:
            body["next_cursor"] = str(offset + limit)
        return _json(body)

    def _ranked(self, include_hold: bool, now: float, count: int | None) -> list[_Ranked]:
        """The first ``count`` (``None``: all) listings by ``(price / reference,
        item_id)``, as a sort of every listing ranks them, looking at few: a name's
        listings are kept sorted by price (:attr:`ReplayMarket.by_name`), which with one
        reference per name is their order by ratio too (integer prices far below 2**52
        never share a ratio), so the names' lists are merged lazily. Listings with
        recorded details may have references of their own: ranked apart, merged in."""
        market = self.market
        listings, details, references = market.listings, market.details, market.references
        by_name = market.all_ranked()
        # (the names with a reference, walked from the smaller side: the streams hold
        # other listings each, so their order does not change the merge)
        if len(references) < len(by_name):
            named = [(r, ranked) for n, r in references.items() if (ranked := by_name.get(n))]
        else:
            named = [(r, ranked) for n, ranked in by_name.items() if (r := references.get(n))]
        held = None if include_hold else now
        streams = [_by_ratio(ranked, r, listings, details, held) for r, ranked in named if r]
        apart = []
        for item_id in details:
            row = listings.get(item_id)
            if row is None or (not include_hold and row[2] is not None and row[2] > now):
                continue
            reference = market.reference(item_id, row[0])
            if reference:
                apart.append((row[1] / reference, item_id, row, reference))
        apart.sort(key=_RANK)
        streams.append(iter(apart))
        return list(islice(heapq.merge(*streams, key=_RANK), count))

    def _plain_entry(self, item_id: str, row: Held, reference: int | None, locked: bool) -> str:
        """The text ``json.dumps(self._entry(...))`` gives for a listing without details
        of its own (most of them), written directly (a name, ids and times are strings,
        prices integers: checked as the market takes them)."""
        name, price, unlock_at, send_until = row
        text = f'{{"name": {self._json_name(name)}, "price": {price}, "item_id": {_string(item_id)}'
        if reference is not None:
            text += f', "platform_price": {reference}'
        if locked:
            unlock = cast(int, unlock_at)
            until = _rfc3339(send_until or unlock)
            text += f', "unlock_at": "{_rfc3339(unlock)}", "send_until": "{until}"'
        return text + "}"

    def _entry(self, item_id: str, row: Held, now: float) -> dict[str, Any]:
        name, price, unlock_at, send_until = row
        detail = self.market.details.get(item_id)
        entry = dict(detail) if detail is not None else {}
        entry.update(name=name, price=price, item_id=item_id)
        entry.pop("unlock_at", None)
        entry.pop("send_until", None)
        if "platform_price" not in entry and "platform_price_number" not in entry:
            reference = self.market.references.get(name)
            if reference is not None:
                entry["platform_price"] = reference
        if unlock_at is not None and unlock_at > now:
            entry["unlock_at"] = _rfc3339(unlock_at)
            entry["send_until"] = _rfc3339(send_until or unlock_at)
        return entry

    # -- purchases -----------------------------------------------------------------------

    async def _arrive(self, waited: bool) -> float:
        if not waited:  # else the live request's latency was taken already
            await self._wait(self.market.fill.latency)
        now = self.clock.now()
        self.market.advance_to(now)
        return now

    async def _buy_one(self, params: httpx.QueryParams, waited: bool) -> httpx.Response:
        now = await self._arrive(waited)
        answer = self.market.buy(
            params.get("item_id", ""),
            int(params.get("price", "0")),
            allow_locked=params.get("allow_trade_locked") == "1",
            project_id=params.get("project_id"),
            now=now,
        )
        return _json(_buy_body(answer))

    async def _buy_bulk(self, body: dict[str, Any], waited: bool) -> httpx.Response:
        now = await self._arrive(waited)
        results = []
        for item in body.get("items", []):
            answer = self.market.buy(
                str(item["item_id"]),
                int(item["price"]),
                allow_locked=bool(body.get("allow_trade_locked")),
                project_id=item.get("project_id"),
                now=now,
            )
            entry = {"item_id": str(item["item_id"]), "project_id": item.get("project_id")}
            results.append({**entry, **_buy_body(answer)})
        return _json({"success": True, "msg": None, "items": results})

    def _project_ids(self, ids: list[str]) -> httpx.Response:
        now = self.clock.now()
        trades = []
        for project_id in ids:
            trade = self.market.trades.get(project_id)
            if trade is None:
                continue
            status, escrow, reason = trade.status(now)
            entry: dict[str, Any] = {
                "id": trade.id,
                "project_id": project_id,
                "price": trade.price,
                "name": trade.name,
                "status": status,
                "done": status in (5, 6),
                "reason": reason,
                "last_updated": int(now),
            }
            if trade.unlock_at is not None:
                entry["escrow_status"] = escrow
                entry["unlock_at"] = trade.unlock_at
                entry["send_until"] = trade.send_until
            trades.append(entry)
        return _json({"success": True, "msg": None, "trades": trades})


_Ranked = tuple[float, str, Held, int]
_RANK = itemgetter(0, 1)


def _by_ratio(
    ranked: list[tuple[int, str]],
    reference: int,
    listings: dict[str, Held],
    details: dict[str, Any],
    now: float | None,
) -> Iterator[_Ranked]:
    """A name's listings without details of their own (those are ranked apart), by
    ratio; without the trade-locked ones at ``now`` unless ``now`` is ``None``."""
    for price, item_id in ranked:
        if item_id in details:
            continue
        row = listings[item_id]
        if now is not None and row[2] is not None and row[2] > now:
            continue
        yield price / reference, item_id, row, reference


async def _buy_key(request: httpx.Request) -> str:
    if request.method == "GET":
        return str(request.url.params.get("item_id", ""))
    items = json.loads(await request.aread() or b"{}").get("items", [])
    return ",".join(sorted(str(i.get("item_id")) for i in items))


def _buy_body(answer: BuyAnswer) -> dict[str, Any]:
    trade = answer.trade
    if trade is None:
        body: dict[str, Any] = {"success": False, "msg": answer.msg}
        if answer.new_price is not None:
            body["new_price"] = answer.new_price
        return body
    body = {"success": True, "id": trade.id, "price": trade.price}
    if trade.unlock_at is not None:
        body["purchase_status"] = "reserved"
        body["unlock_at"] = _rfc3339(trade.unlock_at)
        body["send_until"] = _rfc3339(trade.send_until or trade.unlock_at)
    return body
