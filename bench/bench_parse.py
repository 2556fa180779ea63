"""Parse and validate a v2 search response, in full and prefiltered; compare with ``json.loads``.

A v2 search answers up to 50 names with up to 50 listings each. snipe validates every
answer into typed models (ids to ``str``, prices to ``int``, times to epoch seconds,
relative images joined to the image base address). The target: validating costs at most
2x what ``json.loads`` alone costs on the same bytes, measured in the same run.

Measured on the shared 2-core development machine (medians of 31 pairs, several runs,
interleaved): 1.78-2.04x (mostly 1.8-1.9x) before issue 10 added ``delivery``,
``inspect`` and ``auto``; 2.04-2.36x just after; 2.00-2.15x since pydantic-core caches
only keys, lenient fields fall back in pydantic-core and ``Listing._normalise`` was
trimmed. Some 15% of validation is the cyclic garbage collector walking the ~22,000
objects an answer is made of (pausing it only moves that cost), and about a tenth
``Listing._normalise`` joining image addresses.

With the rules' raw predicate (issue 20, point 2: ``decode_search(..., screen=RawScreen)``)
only the listings some rule watching the name could accept are built: the answer is split
into each listing's JSON text, each read by msgspec into a stand-in in plain forms only
(an odd listing is built, and set aside as before), the rule's own checks run on the
stand-in, and a listing passed over stays in place as its stand-in so that decisions and
skip counts are those of the full decode. Measured here with one rule over every name
(``max_price`` at a share of the price range, a float range, the game), at several
shares: the trade-locked tenth of the answer is never built (the rule buys tradable
listings only), so "100%" builds 90%.

The realistic share: the shipped ``rules.example.yaml`` builds **0.18%** of the listings
its searches show (3,110 of 1,772,512 over the first hour of ``bench_backtest.py``'s
100k market, 1,001 search answers: its discount, float, phase and sticker rules turn
nearly every listing down), so 1% is generous and 10% a rule set buying well into the
market. Target: at most 1.0x ``json.loads``. Last measured (2026-11-25, 2 shared cores,
load 4-9, two runs of 21 pairs): 0.1% built 0.76-0.82x, 0.5% built 0.75-0.78x, 9% built
0.88-0.92x (target met), 44% built 1.45-1.56x, 90% built 2.29-2.46x; the full validation
1.92-2.03x in the same runs. What the screened decode costs with nothing built: msgspec
splitting the answer (~0.1x) and reading every listing typed (~0.4x), the stand-ins'
values settled as the model reads them and the rules' checks (~0.1x each); each built
listing then costs what the full decode pays for it.

Run: ``.venv/bin/python bench/bench_parse.py [--reps N]``
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from engine._plugins import make_plugin_host
from engine.models import SearchResponse, decode_search
from engine.rules import RawScreen, load_rules_text

IMAGE_BASE_URL = "https://images.market.invalid/econ"
NAMES = 50
LISTINGS_PER_NAME = 50
PHASES = ["Phase 1", "Phase 2", "Phase 3", "Phase 4", "Ruby", "Sapphire", "Black Pearl", "Emerald"]
EXTERIORS = ["Factory New", "Minimal Wear", "Field-Tested", "Well-Worn", "Battle-Scarred"]
PRICE_HIGH = 2_000_000
STICKERS = [f"Sticker | Team {i} | Major 2025" for i in range(40)]


def _rfc3339(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _image(rng: random.Random) -> str:
    path = "".join(rng.choices("abcdefghijklmnopqrstuvwxyz0123456789_-", k=120))
    # most icons arrive relative to the image base, some as full addresses
    return path if rng.random() < 0.8 else f"https://cdn.market.invalid/{path}"


def _sticker(rng: random.Random, slot: int) -> dict[str, Any]:
    return {
        "name": rng.choice(STICKERS),
        "image": _image(rng),
        "wear": None if rng.random() < 0.3 else round(rng.random(), 6),
        "slot": slot,
        "price": 0 if rng.random() < 0.2 else rng.randrange(10, 200_000),
    }


def _listing(rng: random.Random, name: str, price: int, phased: bool) -> dict[str, Any]:
    stickers = [_sticker(rng, slot) for slot in range(rng.randrange(0, 6))]
    item_id: int | str = rng.randrange(10**9, 10**10)
    listing: dict[str, Any] = {
        "name": name,
        "price": price if rng.random() < 0.9 else str(price),
        "image": _image(rng),
        "item_id": item_id if rng.random() < 0.5 else str(item_id),
        "phase": rng.choice(PHASES) if phased else "",
        "float": round(rng.random(), 12),
        "sticker_names": [s["name"] for s in stickers],
        "stickers": stickers,
        # fields the service adds without notice; they must be skipped, not rejected
        "paintseed": rng.randrange(1000),
        "paintindex": rng.randrange(1000),
        "inspect": "steam://rungame/730/" + "".join(rng.choices("0123456789", k=40)),
        "auto": rng.random() < 0.5,
        "delivery": {"avg": rng.randrange(60, 600), "success_rate": round(rng.random(), 3)},
    }
    reference = price + rng.randrange(0, 20_000)
    if rng.random() < 0.5:
        listing["platform_price"] = reference
    else:
        listing["platform_price_number"] = reference
    if rng.random() < 0.1:  # trade-locked
        unlock = 1_767_225_600 + rng.randrange(3_600, 7 * 86_400)
        listing["unlock_at"] = _rfc3339(unlock)
        listing["send_until"] = _rfc3339(unlock + 12 * 3_600)
    return listing


def build_response(seed: int = 2026) -> bytes:
    """A deterministic v2 search answer: 50 names x 50 listings, cheapest first."""
    rng = random.Random(seed)
    items: dict[str, list[dict[str, Any]]] = {}
    for n in range(NAMES):
        phased = n % 5 == 0
        base = f"★ Knife {n} | Doppler" if phased else f"AK-47 | Skin {n}"
        name = f"{base} ({EXTERIORS[n % len(EXTERIORS)]})"
        prices = sorted(rng.randrange(1_000, PRICE_HIGH) for _ in range(LISTINGS_PER_NAME))
        items[name] = [_listing(rng, name, price, phased) for price in prices]
    return json.dumps({"success": True, "items": items}).encode()


def screen_for(share: float) -> RawScreen:
    """The raw predicate of a rule watching every name of :func:`build_response` whose
    ``max_price`` lets ``share`` of the listings through (prices are spread evenly over
    $1-$2,000), with a float range every listing passes (read on each stand-in) and the
    game."""
    ceiling = 1 + round(share * (PRICE_HIGH - 1))
    text = f"""\
account: {{base_url: "https://market.example.com"}}
budgets: {{per_day: "50000.00", total: "50000.00"}}
rules:
  - name: candidates
    match: {{patterns: ["AK-47 | *", "★ Knife *"], game: csgo}}
    float: {{max: 1.0}}
    max_price: "{ceiling / 1000:.3f}"
"""
    ruleset = load_rules_text(text, host=make_plugin_host(load_entry_points=False))
    return RawScreen(ruleset, "csgo")


def timed_ms(func: Callable[[], object]) -> float:
    """CPU time of one call, in ms. Both measured calls are single-threaded, so CPU time
    is what they cost, and it is far less disturbed than wall time by other processes
    sharing the machine."""
    gc.collect()
    start = time.process_time()
    func()
    return (time.process_time() - start) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=31, help="measured pairs")
    parser.add_argument(
        "--shares",
        default="0.002,0.01,0.1,0.5,1",
        help="candidate shares to measure the screened decode at (comma-separated)",
    )
    args = parser.parse_args()

    data = build_response()
    context = {"image_base_url": IMAGE_BASE_URL}
    parsed = SearchResponse.model_validate_json(data, context=context)
    listings = sum(len(v) for v in parsed.items.values())
    stickers = sum(len(x.stickers) for v in parsed.items.values() for x in v)
    locked = sum(x.trade_locked for v in parsed.items.values() for x in v)
    print(
        f"response: {len(data) / 1e6:.2f} MB, {len(parsed.items)} names, {listings} listings, "
        f"{stickers} stickers, {locked} trade-locked"
    )

    # The engine searches the names its rules watch and hands the decode its rules'
    # raw predicate (engine.rules.RawScreen): only the listings some rule could accept
    # are built. One rule over every name of the answer (max_price, a float range and
    # the game, as the shipped rules check), its max_price set for each candidate share.
    shares = [float(x) for x in args.shares.split(",")]
    screens = {share: screen_for(share) for share in shares}
    for share, screen in screens.items():
        lazy = decode_search(data, None, context=context, screen=screen)
        built = sum(len(v) for v in lazy.items.values())
        print(
            f"screen at {share:.1%}: {built} candidates built ({built / listings:.1%}), "
            f"{lazy.passed_over} passed over unbuilt"
        )

    # Measure in alternation so all see the same machine load, and compare each pair:
    # the median of the per-pair ratios is steadier than a ratio of medians on a shared
    # machine.
    loads: list[float] = []
    validate: list[float] = []
    screened: dict[float, list[float]] = {share: [] for share in shares}
    for _ in range(args.reps):
        loads.append(timed_ms(lambda: json.loads(data)))
        validate.append(timed_ms(lambda: SearchResponse.model_validate_json(data, context=context)))
        for share, screen in screens.items():
            screened[share].append(
                timed_ms(lambda s=screen: decode_search(data, None, context=context, screen=s))  # type: ignore[misc]
            )
    loads_ms = statistics.median(loads)
    print(f"json.loads (baseline):              {loads_ms:8.2f} ms per response")
    rows = [(f"decode_search, {share:.1%} price share:", runs) for share, runs in screened.items()]
    for label, runs in (*rows, ("SearchResponse.model_validate_json:", validate)):
        ratio = statistics.median(v / j for v, j in zip(runs, loads, strict=True))
        print(
            f"{label:35s} {statistics.median(runs):8.2f} ms per response, "
            f"{ratio:.2f}x json.loads (median of {args.reps} pairs; "
            f"fastest runs {min(runs) / min(loads):.2f}x)"
        )
    print("targets: decode_search <= 1.00x, full validation <= 2.00x")


if __name__ == "__main__":
    main()
