"""Build and serve a full-size prices snapshot (1.3 million listings, as the real market
has): time to build it, time to serve it as gzip CSV through the sandbox's ASGI app, and
peak memory.

The sandbox keeps a snapshot as one typed array per column and streams CSV and gzip in
chunks, so a row costs a few dozen bytes and serving never holds the file. The baseline,
measured in the same run, is the obvious way: one dict per row, then ``csv.DictWriter``
into an in-memory gzip file. It runs on a tenth of the rows (it would need gigabytes at
full size); the ratios compare cost per row at that same size.

Run: ``.venv/bin/python bench/bench_snapshot_build.py [--rows N] [--backend asyncio|trio]``
"""

from __future__ import annotations

import argparse
import csv
import gc
import gzip
import io
import random
import resource
import time
import tracemalloc
from typing import Any

import anyio

from engine import VirtualClock
from engine.sandbox import MarketConfig, Sandbox, SandboxConfig, Snapshot, build_catalogue

START = 1_767_225_600.0


def build(rows: int) -> tuple[Snapshot, float]:
    started = time.perf_counter()
    snapshot = Snapshot.generate(rows, seed=1, timestamp=START)
    return snapshot, time.perf_counter() - started


async def serve(snapshot: Snapshot) -> tuple[int, int, float]:
    """Serve ``snapshot`` as gzip CSV through the ASGI app; (status, gzip bytes, seconds)."""
    sandbox = Sandbox(SandboxConfig(market=MarketConfig(size=0)), clock=VirtualClock(START))
    sandbox.pin_snapshot(snapshot)
    received = 0
    status = 0

    asked = False

    async def receive() -> dict[str, Any]:
        nonlocal asked
        if asked:  # the server listens for a disconnect while it streams: none comes
            await anyio.sleep_forever()
        asked = True
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        nonlocal received, status
        if message["type"] == "http.response.start":
            status = message["status"]
        else:
            received += len(message.get("body", b""))

    scope = {
        "type": "http",
        "method": "GET",
        "path": "/v1/prices/snapshot",
        "query_string": b"format=csv&include_hold=1",
        "headers": [],
    }
    started = time.perf_counter()
    await sandbox.server_app(scope, receive, send)
    return status, received, time.perf_counter() - started


def naive(rows: int) -> tuple[int, float]:
    """The baseline: a dict per row, csv.DictWriter into gzip in memory."""
    rng = random.Random(1)
    catalogue = build_catalogue()
    started = time.perf_counter()
    table = []
    for n in range(rows):
        item = rng.choice(catalogue)
        held = rng.random() < 0.15
        unlock = int(START) + rng.randrange(3600, 7 * 86400) if held else None
        table.append(
            {
                "item_id": str(40_000_001 + n),
                "name": item.name,
                "price": f"{int(item.reference * rng.lognormvariate(0.0, 0.12)):012d}",
                "auto": "",
                "inspect": "",
                "unlock_at": unlock or "",
                "send_until": unlock + 43_200 if unlock else "",
            }
        )
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb") as gz, io.TextIOWrapper(gz, "utf-8") as text:
        writer = csv.DictWriter(text, fieldnames=list(table[0]))
        writer.writeheader()
        writer.writerows(table)
    return len(out.getvalue()), time.perf_counter() - started


def traced_peak(func: Any, *args: Any) -> tuple[Any, int]:
    gc.collect()
    tracemalloc.start()
    try:
        result = func(*args)
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def compact_build_and_serve(rows: int) -> int:
    snapshot, _ = build(rows)
    return sum(len(chunk) for chunk in snapshot_gzip(snapshot))


def snapshot_gzip(snapshot: Snapshot) -> Any:
    from engine.sandbox import gzip_chunks

    return gzip_chunks(snapshot.csv_chunks(include_hold=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_300_000)
    parser.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio")
    args = parser.parse_args()
    rows = args.rows
    base_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    snapshot, build_s = build(rows)
    status, gz_bytes, serve_s = anyio.run(serve, snapshot, backend=args.backend)
    assert status == 200, status
    peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    del snapshot
    gc.collect()

    small = max(1000, rows // 10)
    _, compact_peak = traced_peak(compact_build_and_serve, small)
    (naive_bytes, _), naive_peak = traced_peak(naive, small)
    small_snapshot, small_build = build(small)
    started = time.perf_counter()
    small_gz = sum(len(chunk) for chunk in snapshot_gzip(small_snapshot))
    compact_s = small_build + time.perf_counter() - started
    _, naive_s = naive(small)

    print(f"snapshot of {rows:,} listings, gzip CSV with the include_hold columns ({args.backend})")
    print(f"  build:           {build_s:6.2f} s   ({build_s / rows * 1e6:.2f} us/row)")
    print(
        f"  serve gzip CSV:  {serve_s:6.2f} s   {gz_bytes / 1e6:.1f} MB gzip, "
        f"{gz_bytes / 1e6 / serve_s:.1f} MB/s out"
    )
    print(f"  peak RSS:        {peak_rss:6.0f} MB  (interpreter and imports: {base_rss:.0f} MB)")
    print(f"baseline at {small:,} rows (dict per row + csv.DictWriter + in-memory gzip):")
    print(
        f"  time   compact {compact_s:6.2f} s   naive {naive_s:6.2f} s   "
        f"ratio {naive_s / compact_s:.2f}x"
    )
    print(
        f"  memory compact {compact_peak / 1e6:6.1f} MB  naive {naive_peak / 1e6:6.1f} MB  "
        f"ratio {naive_peak / compact_peak:.1f}x  (traced peak; "
        f"{compact_peak / small:.0f} vs {naive_peak / small:.0f} bytes/row)"
    )
    print(f"  gzip   compact {small_gz / 1e6:6.2f} MB  naive {naive_bytes / 1e6:6.2f} MB")


if __name__ == "__main__":
    main()
