"""What notifications and metrics add to the buying path, per purchase.

The buyer calls ``host.notify_purchase`` once per purchase attempt. With notifications on,
the ``NotificationHub`` builds a notice and offers it to every channel's bounded queue;
the detection-latency plugin records two timestamps. This measures that call:

- ``baseline``: the built-in plugins only (no notifier, no metrics);
- ``queued``: three channels (Discord, Telegram, webhook) with room in their queues;
- ``dropped``: the same three channels with full queues (every receiver down), so each
  offer is a counted drop;
- ``+ latency``: the ``queued`` case plus the detection-latency plugin.

Nothing is sent (no sender runs): sending happens in background tasks, off this path.
Target: well under a millisecond per purchase, negligible next to the purchase request's
own round trip (tens to hundreds of milliseconds). Run:
``.venv/bin/python bench/bench_notify.py [--calls N]``.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import anyio
from prometheus_client import CollectorRegistry, Histogram

from engine import VirtualClock
from engine._plugins import PluginHost, make_plugin_host
from engine.client._secret import Secret
from engine.metrics import DETECTION_BUCKETS, LatencyTracker
from engine.models import Listing
from engine.notify import (
    Delivery,
    DeliverySettings,
    DiscordChannel,
    NotificationHub,
    TelegramChannel,
    WebhookChannel,
)
from engine.rules import Decision, EvalContext


def _decision(n: int) -> Any:
    listing = Listing.model_validate(
        {
            "item_id": str(n),
            "name": "AK-47 | Redline (Field-Tested)",
            "price": 7_500,
            "platform_price": 10_000,
            "image": "https://img.example/ak.png",
        }
    )
    return Decision(listing, "deals", True, ("cheap",), 7_500, "buy", 0, False)


def _channels() -> list[Any]:
    events = ("purchase", "refund", "halted", "daily_summary")
    return [
        DiscordChannel(Secret("https://d.example/x"), username="snipe", events=events),
        TelegramChannel(Secret("1:t"), chat_id="1", api_base="https://t.example", events=events),
        WebhookChannel("https://w.example", Secret("s"), events=events),
    ]


def _time(host: PluginHost, calls: int, before: Any = None) -> float:
    decisions = [_decision(n) for n in range(calls)]
    context = EvalContext(now=0.0)
    start = time.perf_counter()
    for d in decisions:
        if before is not None:
            before(d, context)
        host.notify_purchase(d, "bought", None)
    return (time.perf_counter() - start) / calls


async def main(calls: int) -> None:
    clock = VirtualClock()
    baseline_host = make_plugin_host(load_entry_points=False)
    baseline = _time(baseline_host, calls)

    queued_host = make_plugin_host(load_entry_points=False)
    roomy = Delivery(_channels(), clock=clock, settings=DeliverySettings(queue_size=calls + 1))
    queued_host.register(NotificationHub(roomy, clock), "hub")
    queued = _time(queued_host, calls)
    roomy.close()

    full_host = make_plugin_host(load_entry_points=False)
    full = Delivery(_channels(), clock=clock, settings=DeliverySettings(queue_size=1))
    full_host.register(NotificationHub(full, clock), "hub")
    dropped = _time(full_host, calls)
    assert full.stats["webhook"].dropped == calls - 1
    full.close()

    latency_host = make_plugin_host(load_entry_points=False)
    roomy2 = Delivery(_channels(), clock=clock, settings=DeliverySettings(queue_size=calls + 1))
    latency_host.register(NotificationHub(roomy2, clock), "hub")
    histogram = Histogram("h", "h", buckets=DETECTION_BUCKETS, registry=CollectorRegistry())

    class _Engine:
        def __init__(self) -> None:
            self.clock = clock
            self.schedule = type("S", (), {"flagged_at": {}})()

    tracker = LatencyTracker(_Engine(), histogram)  # type: ignore[arg-type]
    latency_host.register(tracker, "latency")

    def before(d: Any, context: EvalContext) -> None:
        tracker.snipe_decisions([d], context)
        latency_host.veto(d, context)

    with_latency = _time(latency_host, calls, before)
    roomy2.close()

    print(f"notify_purchase per purchase, {calls:,} calls:")
    for label, value in [
        ("baseline (no notifier)", baseline),
        ("3 channels, queued", queued),
        ("3 channels, all dropped", dropped),
        ("3 channels + latency (decisions, veto, purchase hooks)", with_latency),
    ]:
        print(f"  {label:<56} {value * 1e6:8.2f} us   x{value / baseline:6.1f} baseline")
    print(f"  worst case is {max(queued, dropped, with_latency) * 1e3:.3f} ms per purchase")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20_000)
    args = parser.parse_args()
    anyio.run(main, args.calls)
