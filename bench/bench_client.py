"""Per-call cost of MarketClient against a bare httpx client doing the same request.

Both send through the same in-process ``httpx.MockTransport`` (no network) and parse the
answer with the same model, so the difference is what the client adds: argument checks,
the key-injecting transport's request copy, the deadline watchdog task, and the error
mapping. Most of it is the second ``httpx.Request`` the transport builds so that the key
never sits in a request httpx can show. Target: at most 2.5x the bare call for a purchase
(small answer), measured in the same run. A real round trip to the service is
milliseconds; these are microseconds.

Run: ``.venv/bin/python bench/bench_client.py [--calls N] [--backend asyncio|trio]``
"""

from __future__ import annotations

import argparse
import statistics
import time

import anyio
import httpx

from engine.client import MarketClient
from engine.models import BuyResult

KEY = "bench-key-0123456789"
ANSWER = b'{"success": true, "id": 30717149, "price": 5000}'


def handler(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, content=ANSWER, headers={"content-type": "application/json"})


async def bare(calls: int) -> float:
    async with httpx.AsyncClient(
        base_url="https://m.invalid", transport=httpx.MockTransport(handler)
    ) as http:
        start = time.perf_counter()
        for i in range(calls):
            response = await http.get(
                "/v1/buy-one-p2p",
                params={
                    "item_id": "555",
                    "price": "5000",
                    "partner": "123456",
                    "token": "AbCdEfGh",
                    "project_id": f"p-{i}",
                    "api": KEY,
                },
            )
            BuyResult.model_validate_json(response.content, context={"image_base_url": None})
        return (time.perf_counter() - start) / calls


async def client(calls: int) -> float:
    async with MarketClient(
        KEY, base_url="https://m.invalid", transport=httpx.MockTransport(handler)
    ) as market:
        start = time.perf_counter()
        for i in range(calls):
            await market.buy_one_p2p(
                item_id="555", price=5000, partner="123456", token="AbCdEfGh", project_id=f"p-{i}"
            )
        return (time.perf_counter() - start) / calls


async def main(calls: int, rounds: int) -> None:
    bare_times, client_times = [], []
    for _ in range(rounds):
        bare_times.append(await bare(calls))
        client_times.append(await client(calls))
    b, c = statistics.median(bare_times), statistics.median(client_times)
    print(f"bare httpx + parse : {b * 1e6:8.1f} us/call (median of {rounds} x {calls})")
    print(f"MarketClient       : {c * 1e6:8.1f} us/call")
    print(f"ratio              : {c / b:8.2f}x (target <= 2.5x)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio")
    args = parser.parse_args()
    anyio.run(main, args.calls, args.rounds, backend=args.backend)
