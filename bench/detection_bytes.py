"""Bytes on the wire for bench/bench_detection.py: the feed's frames measured on a real
socket, and both ways' bytes per day, on the sandbox and extrapolated to the live csgo
market (issue 17: with the feed, audited every 5 minutes, <= 5 GB/day).

Every request and answer through the sandbox's transport is counted (raw bytes, gzip as
served) and every feed frame. The extrapolation uses the live market's sizes: the csgo
snapshot ~45 MB of gzip (the figure ``snipe check`` uses, ``engine.sniper._bandwidth``) for
each full audit (every hour) and two a reconnection (the heal and the poll after it; 4
reconnections a day assumed); one ``GET /v1/prices?game=csgo`` an audit slot at the bytes a
row measured on the sandbox times an assumed 30,000 csgo rows; ~430 feed events a second
of the frame size measured on a socket (:func:`measure_frames`: the run's first 20,000
frames sent by a Starlette websocket on hypercorn, the sandbox's stack, to snipe's feed
client, whose network stream counts the bytes it reads; once with permessage-deflate, the
default, and once plain, the same-run baseline); the searches as measured. The sandbox
serves JSON without gzip although httpx asks for it: the answers' gzip'd sizes (level 6,
computed here) give the figures of a service that honours ``Accept-Encoding``. The last
lines give what a csgo-only client would likely see: csgo's share of the feed's events
(split by game like ``snipe check``'s estimate), deflated, the JSON answers gzip'd.
"""

from __future__ import annotations

import gzip
import json
import socket
import time
from collections import Counter
from typing import Any

import anyio
import httpx

from engine import VirtualClock
from engine.client import FeedClient
from engine.sandbox._feed import FeedConfig, event_frame, open_packet
from engine.sniper._bandwidth import GAME_SNAPSHOT_BYTES

__all__ = ["Meter", "measure_frames", "report_bytes"]

TARGET_BYTES = 5e9
AUDIT_EVERY = 300.0
FULL_AUDIT_EVERY = 3600.0  # account.full_audit_every's default
LIVE_CSGO_PRICE_ROWS = 30_000
"""ASSUMPTION: rows of GET /v1/prices?game=csgo on the live market (distinct names with
listings, a Doppler phase a row of its own). Not measured: the snapshot's ~1.3 million
listings over every game (wire-notes.md) hold some tens of thousands of names."""
RECONNECTS_PER_DAY = 4.0
"""ASSUMPTION: feed reconnections a day (one every 6 hours); each is healed by a full
snapshot, and the poll after it is full too (the base of the full audit to come)."""
LIVE_EVENTS_PER_SECOND = 430.0
SAMPLE_FRAMES = 20_000  # the first frames, replayed over a real socket to measure them
DAY = 86_400.0
SNAPSHOT_WAY_LIVE = 388.8e9  # `snipe check`'s figure for csgo every 10 s


def head_bytes(request: httpx.Request) -> int:
    return len(str(request.url)) + sum(len(k) + len(v) + 4 for k, v in request.headers.raw)


class Meter(httpx.AsyncBaseTransport):
    """The sandbox's transport, measuring: the sandbox's own CPU time (not the engine's
    work), raw bytes per endpoint, and when each purchase request arrives."""

    def __init__(self, inner: httpx.AsyncBaseTransport, clock: VirtualClock) -> None:
        self.inner = inner
        self.clock = clock
        self.server_cpu = 0.0
        self.bytes: Counter[str] = Counter()
        self.calls: Counter[str] = Counter()
        self.pending: list[str] = []  # item ids the buyer let through, request not seen yet
        self.requested: dict[str, float] = {}
        self.began = (0.0, 0.0, 0.0)  # market time, CPU, server CPU of the handling under way
        self.source = ""
        self.sources: dict[str, str] = {}
        self.price_rows = 0  # rows of every GET /v1/prices answer (the cheap audit)
        self.price_gzip = 0
        self.search_gzip = 0  # search answers' bodies gzip'd here, for a gzip'ing service
        self.price_encodings: Counter[str] = Counter()

    def now(self) -> float:
        """Market time now: the handling's start plus the engine's CPU since."""
        at, cpu, server = self.began
        return at + max(0.0, time.process_time() - cpu - (self.server_cpu - server))

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path.startswith("/v1/buy") and self.pending:
            at = self.now()
            for item_id in self.pending:
                self.requested.setdefault(item_id, at)
                self.sources.setdefault(item_id, self.source)
            self.pending.clear()
        body = await request.aread()
        began = time.process_time()
        response = await self.inner.handle_async_request(request)
        await response.aread()
        self.server_cpu += time.process_time() - began
        kind = "snapshot" if "snapshot" in path else "search" if "search" in path else "other"
        if path == "/v1/prices" and request.url.params.get("game") == "csgo":
            kind = "prices"  # the cheap audit's (the references step asks for every game)
            self.price_rows += len(json.loads(response.content).get("items") or ())
            self.price_encodings[response.headers.get("content-encoding", "identity")] += 1
            self.price_gzip += len(gzip.compress(response.content, 6))
        if kind == "search":
            self.search_gzip += head_bytes(request) + len(gzip.compress(response.content, 6))
        self.calls[kind] += 1
        head = head_bytes(request)
        self.bytes[kind] += head + len(body) + response.num_bytes_downloaded
        return response


async def measure_frames(frames: list[str]) -> dict[str, tuple[float, float]]:
    """Bytes a frame takes on a real socket, and the CPU seconds of both ends per frame
    (server and client share this process), per compression mode of the feed client:
    ``frames`` sent in order by a Starlette websocket served by hypercorn (the sandbox's
    stack: it accepts permessage-deflate when offered) on 127.0.0.1 to snipe's
    :class:`FeedClient`, whose network stream counts what it reads
    (``wire_bytes_received``: frame headers and payloads, compressed or not; the open,
    namespace and ``subscribed`` packets, ~150 B in all, are counted too)."""
    from hypercorn.asyncio import serve
    from hypercorn.config import Config
    from starlette.applications import Starlette
    from starlette.routing import WebSocketRoute
    from starlette.websockets import WebSocket

    async def replay(ws: WebSocket) -> None:
        await ws.accept()
        await ws.send_text(open_packet("bench", FeedConfig(ping_interval=600, ping_timeout=600)))
        await ws.receive_text()  # 40
        await ws.send_text('40{"sid":"bench"}')
        await ws.receive_text()  # the subscription
        await ws.send_text(event_frame("subscribed", {"name": "csgo"}))
        for frame in frames:
            await ws.send_text(frame)
        await ws.receive()  # until the client leaves

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    config = Config()
    config.bind = [f"fd://{sock.detach()}"]
    config.accesslog = config.errorlog = None
    app: Any = Starlette(routes=[WebSocketRoute("/socket.io/", replay)])
    per_frame: dict[str, tuple[float, float]] = {}
    stop = anyio.Event()
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: serve(app, config, shutdown_trigger=stop.wait))
        for mode in ("off", "auto"):
            cpu = time.process_time()
            async with FeedClient(url, games=["csgo"], compression=mode) as feed:
                with anyio.fail_after(600):
                    async for _ in feed:
                        if feed.health().events_received >= len(frames):
                            break
                health = feed.health()
                assert health.compressed is (mode == "auto"), health
                count = max(1, len(frames))
                per_frame[mode] = (
                    health.wire_bytes_received / count,
                    (time.process_time() - cpu) / count,
                )
        stop.set()
    return per_frame


def _gb(count: float) -> str:
    return f"{count / 1e9:.2f} GB"


def report_bytes(snap: Any, feed: Any, days: float) -> None:
    """The bytes of both ways (``RunResult``s of bench_detection.py), per day on the
    sandbox and extrapolated to the live csgo market; ``days``: the market days run."""
    print(
        f"bytes on the wire per day, sandbox: snapshot way {_gb(snap.per_day())} "
        f"({', '.join(f'{k} {_gb(v / days)}' for k, v in sorted(snap.bytes.items()))}); "
        f"feed way {_gb(feed.per_day())} "
        f"({', '.join(f'{k} {_gb(v / days)}' for k, v in sorted(feed.bytes.items()))})"
    )
    rows = max(1, feed.price_rows)
    row, row_gzip = feed.price_bytes / rows, feed.price_gzip / rows
    encodings = ", ".join(f"{k} x{n}" for k, n in sorted(feed.price_encodings.items())) or "none"
    print(
        f"audit tiers on the sandbox: {feed.price_calls} GET /v1/prices?game=csgo answers "
        f"({feed.audits_cheap} judged as cheap audits; the others bases after a snapshot "
        f"poll, or fetched too late in the run to be judged), "
        f"{feed.price_rows / max(1, feed.price_calls):.0f} rows each, {row:.0f} B a row as "
        f"sent (request included; content-encoding {encodings}: the sandbox does not gzip "
        f"it although httpx asks for gzip; {row_gzip:.0f} B a row gzip'd here), "
        f"{feed.suspects} suspect name(s) searched; {feed.snapshots} snapshot polls "
        f"({feed.audits_full} full audits; the heal's and the one after it)"
    )
    csgo = GAME_SNAPSHOT_BYTES["csgo"]
    frames = LIVE_EVENTS_PER_SECOND * feed.frame_bytes * DAY
    deflated = LIVE_EVENTS_PER_SECOND * feed.deflated_bytes * DAY
    full_polls = DAY / FULL_AUDIT_EVERY + 2 * RECONNECTS_PER_DAY
    live_full = full_polls * csgo
    # one per audit slot (a cheap audit, or the base after a full one), and the base
    # after each of a reconnection's two full polls
    answers = DAY / AUDIT_EVERY + 2 * RECONNECTS_PER_DAY
    live_prices = answers * LIVE_CSGO_PRICE_ROWS * row
    live_prices_gzip = answers * LIVE_CSGO_PRICE_ROWS * row_gzip
    live_search = feed.bytes["search"] / days
    live_other = feed.bytes["other"] / days
    print(
        f"extrapolated to the live market (csgo), per day: frames {_gb(frames)} as sent "
        f"({LIVE_EVENTS_PER_SECOND:g} events/s x {feed.frame_bytes:.0f} B, measured) or "
        f"{_gb(deflated)} with permessage-deflate ({feed.deflated_bytes:.0f} B a frame, "
        f"measured on a socket); full snapshots {_gb(live_full)} ({full_polls:.0f} x "
        f"{csgo / 1e6:.0f} MB: one audit every {FULL_AUDIT_EVERY / 60:.0f} min, 2 a "
        f"reconnection x {RECONNECTS_PER_DAY:g} reconnections assumed); cheap audits "
        f"{_gb(live_prices)} ({answers:.0f} x {LIVE_CSGO_PRICE_ROWS:,} rows assumed x "
        f"{row:.0f} B; {_gb(live_prices_gzip)} if the service gzips them); searches "
        f"{_gb(live_search)} (as measured: confirming and suspects' searches, none in the "
        f"background while the feed is trusted); the rest {_gb(live_other)}"
    )
    for label, feed_bytes in (("as sent", frames), ("deflated", deflated)):
        total = feed_bytes + live_full + live_prices + live_search + live_other
        verdict = "meets" if total <= TARGET_BYTES else "MISSES"
        rest = total - live_search
        rest_gzip = rest - live_prices + live_prices_gzip
        print(
            f"  total, frames {label}: {_gb(total)}/day; target <= {_gb(TARGET_BYTES)}: "
            f"{verdict}; without the searches {_gb(rest)} ({_gb(rest_gzip)} with "
            f"/v1/prices gzip'd); of it the searches "
            f"{_gb(live_search)}, the audits "
            f"{_gb(live_full + live_prices)} (a full-snapshot audit every "
            f"{AUDIT_EVERY / 60:.0f} min instead: {_gb(DAY / AUDIT_EVERY * csgo)}); ratio to the "
            f"snapshot way every 10 s ({_gb(SNAPSHOT_WAY_LIVE)}): {SNAPSHOT_WAY_LIVE / total:.0f}x"
            " less"
        )
    # The client subscribes to csgo alone: its share of the feed's events, split by game
    # like the snapshot (the estimate `snipe check` uses), and the JSON answers as a
    # service that honours httpx's Accept-Encoding: gzip would send them.
    share = csgo / sum(GAME_SNAPSHOT_BYTES.values())
    search_gzip = feed.search_gzip / days
    likely = deflated * share + live_full + live_prices_gzip + live_other
    for label, searches in (("no confirming rule", 0.0), ("with the sticker rule", search_gzip)):
        total = likely + searches
        verdict = "meets" if total <= TARGET_BYTES else "MISSES"
        print(
            f"  total, csgo's share of the frames ({share:.0%}) deflated and the JSON answers "
            f"gzip'd, {label}: {_gb(total)}/day (searches {_gb(searches)}); target <= "
            f"{_gb(TARGET_BYTES)}: {verdict}"
        )
    print(
        f"  feed frames measured on a socket ({feed.sampled_frames:,} of this run's frames, "
        f"snipe's client against hypercorn): {feed.deflated_bytes:.1f} B a frame with "
        f"permessage-deflate, {feed.frame_bytes:.1f} B plain ({_gb(frames)}/day): "
        f"{feed.frame_bytes / feed.deflated_bytes:.1f}x less; CPU of both ends (server, "
        f"client's decoding) {feed.frame_cpu[1] * 1e6:.0f} us a frame against "
        f"{feed.frame_cpu[0] * 1e6:.0f} us plain"
    )
