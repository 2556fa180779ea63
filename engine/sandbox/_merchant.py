"""Merchant data of the sandbox (interface.md 4.5): inventories, deposits and webhook
records, generated deterministically per merchant and platform id."""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any

from ._catalogue import CatalogueItem

__all__ = ["MerchantDesk"]

_RARITIES = (("Mil-Spec Grade", "4b69ff"), ("Restricted", "8847ff"), ("Covert", "eb4b4b"))


def _rng(*parts: object) -> random.Random:
    digest = hashlib.sha256(":".join(map(str, parts)).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


@dataclass
class _MerchantBook:
    deposits: list[dict[str, Any]] = field(default_factory=list)
    webhooks: list[dict[str, Any]] = field(default_factory=list)


class MerchantDesk:
    """Deposits and webhooks per merchant, made on first use."""

    def __init__(self, *, seed: int, items: tuple[CatalogueItem, ...], start: float) -> None:
        self._seed = seed
        self._items = items
        self._start = start
        self._books: dict[str, _MerchantBook] = {}

    def inventory(self, platform_id: str, game: str) -> list[dict[str, Any]]:
        rng = _rng(self._seed, "inventory", platform_id, game)
        pool = [item for item in self._items if item.game == game] or list(self._items)
        rows = []
        for n in range(8):
            item = rng.choice(pool)
            rarity, color = rng.choice(_RARITIES)
            accepted = n % 4 != 3  # some items cannot be deposited
            icon = f"economy/image/{hashlib.sha1(item.name.encode()).hexdigest()[:20]}"
            rows.append(
                {
                    "item_id": str(30_000_000_000 + rng.randrange(10**9)),
                    "icon_url": icon,  # relative, joined to the image base address
                    "name": item.name,
                    "type": item.type or "",
                    "platform_price": {
                        "name": item.name,
                        "average": item.reference,
                        "current": round(item.reference * rng.uniform(0.95, 1.05)),
                        "img": icon,
                        "lowest_price": round(item.reference * rng.uniform(0.85, 1.0)),
                        "rarity_color": color,
                        "rarity": rarity,
                    },
                    "limit": rng.randrange(1, 5) if accepted else 0,
                    "instant_price": round(item.reference * 0.8) if accepted else 0,
                }
            )
        return rows

    def book(self, merchant: str) -> _MerchantBook:
        book = self._books.get(merchant)
        if book is None:
            book = self._books[merchant] = self._make_book(merchant)
        return book

    def _make_book(self, merchant: str) -> _MerchantBook:
        rng = _rng(self._seed, "merchant", merchant)
        book = _MerchantBook()
        when = self._start - 30 * 86400.0
        for n in range(450):
            when += rng.uniform(60.0, 11_000.0)
            transaction_id = 900_001 + n
            platform_id = str(76561198_000_000_000 + rng.randrange(10**6))
            item = rng.choice(self._items)
            done = rng.random() < 0.85
            created = int(when)
            deposit = {
                "transaction_id": transaction_id,
                "deposit_id": f"dep-{merchant[:20]}-{n:05d}",
                "merchant": merchant,
                "platform_id": platform_id,
                "trade_url_token": f"{rng.randrange(16**8):08x}",
                "currency": "USD",
                "min_amount": 1000,
                "max_amount": 500_000,
                "result_url": "https://merchant.sandbox.invalid/result",
                "fail_url": "https://merchant.sandbox.invalid/fail",
                "success_url": "https://merchant.sandbox.invalid/success",
                "game": item.game,
                "priority_game": item.game,
                "hash": hashlib.sha256(f"{merchant}{n}".encode()).hexdigest()[:32],
                "widget": n % 3 == 0,
                "platform_trade": 5_000_000 + n,
                "created": created,
                "items": [str(40_000_000_000 + n)],
                "platform_trade_data": {
                    "trade_id": str(6_600_000_000 + n),
                    "done": done,
                    "reason": "" if done else "Trade declined",
                    "created": created,
                    "proccessed_time": created + 120,
                    "user": {"name": f"user{n}", "avatar": "", "platform_id": platform_id},
                    "items": [
                        {
                            "item_id": str(40_000_000_000 + n),
                            "name": item.name,
                            "price": item.reference,
                            "give_amount": round(item.reference * 0.8),
                            "status": 5 if done else 6,
                        }
                    ],
                },
            }
            book.deposits.append(deposit)
            status = "completed" if done else rng.choice(("failed", "pending"))
            code = 200 if status == "completed" else rng.choice((500, 502, 404))
            book.webhooks.append(
                {
                    "id": 70_001 + n,
                    "transaction_id": str(transaction_id) if n % 2 else transaction_id,
                    "deposit_id": deposit["deposit_id"],
                    "platform_trade": deposit["platform_trade"],
                    "status": status,
                    "status_code": code,
                    "created_at": created + 130,
                    "updated_at": created + 130,
                    "attempts": [{"attempt": 1, "status_code": code, "created_at": created + 130}],
                }
            )
        return book

    def deposits(
        self,
        merchant: str,
        *,
        start: date,
        end: date,
        platform_id: str | None,
        start_from: int | None,
    ) -> list[dict[str, Any]]:
        rows = []
        for deposit in self.book(merchant).deposits:
            day = datetime.fromtimestamp(deposit["created"], UTC).date()
            if not start <= day <= end:
                continue
            if platform_id is not None and deposit["platform_id"] != platform_id:
                continue
            if start_from is not None and deposit["transaction_id"] <= start_from:
                continue
            rows.append(deposit)
        return rows

    def webhooks(
        self, merchant: str, *, status: str | None, start_from: int | None
    ) -> list[dict[str, Any]]:
        return [
            hook
            for hook in self.book(merchant).webhooks
            if (status is None or hook["status"] == status)
            and (start_from is None or hook["id"] > start_from)
        ]

    def webhook(
        self, merchant: str, *, deposit_id: str | None, transaction_id: int | None
    ) -> dict[str, Any] | None:
        for hook in self.book(merchant).webhooks:
            if deposit_id is not None and hook["deposit_id"] == deposit_id:
                return hook
            if transaction_id is not None and int(hook["transaction_id"]) == transaction_id:
                return hook
        return None

    def resend(self, hook: dict[str, Any], now: float) -> None:
        attempt = len(hook["attempts"]) + 1
        hook["attempts"].append({"attempt": attempt, "status_code": 200, "created_at": int(now)})
        hook["status"], hook["status_code"], hook["updated_at"] = "completed", 200, int(now)
