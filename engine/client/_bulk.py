"""Bulk purchase (``POST /v1/buy``): the request body, the answer, and per-item results.

No public source shows this endpoint's body; wire-notes.md records the project's working
assumption. Its wire shape lives in this module only (:func:`bulk_body` and
:func:`bulk_results`), so a correction is one edit here.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .._errors import PurchaseRefusal
from ..models import BulkBuyItemResult, BulkBuyResponse
from ._params import MAX_PROJECT_ID, Query
from ._responses import classify_refusal, hides_purchase

__all__ = ["BulkItem", "BulkItemResult", "BulkPurchase", "BulkStatus"]


@dataclass(frozen=True)
class BulkItem:
    """One item to buy: its ``item_id``, the price ceiling (USD x 1000) and the caller's
    ``project_id`` (at most 50 characters), which resolves the item if the answer is lost."""

    item_id: str
    price: int
    project_id: str


class BulkStatus(enum.Enum):
    """What happened to one item of a bulk purchase."""

    BOUGHT = "bought"
    """The service says it bought the item."""
    REFUSED = "refused"
    """The service says it did not buy the item (certain; no money moved for it)."""
    UNKNOWN = "unknown"
    """The answer does not mention the item: it may or may not have been bought. Resolve
    it by ``project_id``; never treat it as refused."""


@dataclass(frozen=True)
class BulkItemResult:
    """The result for one requested item. ``answer`` is the service's entry for it
    (``None`` when the answer does not mention the item); ``refusal`` is the typed reason
    when REFUSED."""

    item: BulkItem
    status: BulkStatus
    answer: BulkBuyItemResult | None = None
    refusal: PurchaseRefusal | None = None

    @property
    def item_id(self) -> str:
        return self.item.item_id

    @property
    def project_id(self) -> str:
        return self.item.project_id

    @property
    def msg(self) -> str | None:
        """The item's reason: ``msg``, or ``error_msg`` when ``msg`` is empty."""
        if self.answer is None:
            return None
        return self.answer.msg or self.answer.error_msg

    @property
    def charged(self) -> int | None:
        """What was charged (USD x 1000), for a BOUGHT item that says so."""
        return self.answer.price if self.status is BulkStatus.BOUGHT and self.answer else None

    @property
    def new_price(self) -> int | None:
        """The price now asked, for a PRICE_CHANGED refusal that says so."""
        if self.refusal is PurchaseRefusal.PRICE_CHANGED and self.answer is not None:
            return self.answer.new_price
        return None


@dataclass(frozen=True)
class BulkPurchase:
    """Per-item results of one bulk purchase, in the order the items were requested.
    ``msg`` is the answer's top-level message."""

    results: tuple[BulkItemResult, ...]
    msg: str | None = None

    def _with(self, status: BulkStatus) -> tuple[BulkItemResult, ...]:
        return tuple(r for r in self.results if r.status is status)

    @property
    def bought(self) -> tuple[BulkItemResult, ...]:
        return self._with(BulkStatus.BOUGHT)

    @property
    def refused(self) -> tuple[BulkItemResult, ...]:
        return self._with(BulkStatus.REFUSED)

    @property
    def unknown(self) -> tuple[BulkItemResult, ...]:
        return self._with(BulkStatus.UNKNOWN)


def check_items(query: Query, items: Sequence[BulkItem]) -> tuple[BulkItem, ...]:
    """The items, checked: ids and prices valid, no item or project_id twice."""
    checked: list[BulkItem] = []
    seen_items: set[str] = set()
    seen_projects: set[str] = set()
    if isinstance(items, str | bytes) or not items:
        raise query.fail("items needs at least one BulkItem")
    for i, item in enumerate(items):
        if not isinstance(item, BulkItem):
            raise query.fail(f"items[{i}] must be a BulkItem, got {type(item).__name__}")
        item_id = query.text(f"items[{i}].item_id", item.item_id)
        price = query.check_money(f"items[{i}].price", item.price)
        project_id = query.text(f"items[{i}].project_id", item.project_id, max_len=MAX_PROJECT_ID)
        if item_id in seen_items:
            raise query.fail(f"items[{i}]: item_id {item_id!r} is listed twice")
        if project_id in seen_projects:
            raise query.fail(f"items[{i}]: project_id {project_id!r} is listed twice")
        seen_items.add(item_id)
        seen_projects.add(project_id)
        checked.append(BulkItem(item_id=item_id, price=price, project_id=project_id))
    return tuple(checked)


def bulk_body(
    items: Sequence[BulkItem],
    *,
    partner: str,
    token: str,
    all_or_none: bool,
    allow_trade_locked: bool,
) -> dict[str, Any]:
    """The JSON body of ``POST /v1/buy`` (working assumption, wire-notes.md)."""
    return {
        "items": [
            {"item_id": it.item_id, "price": it.price, "project_id": it.project_id} for it in items
        ],
        "token": token,
        "partner": partner,
        "all": all_or_none,
        "allow_trade_locked": allow_trade_locked,
    }


def bulk_results(requested: Sequence[BulkItem], answer: BulkBuyResponse) -> BulkPurchase:
    """Match the answer's entries to the requested items (by ``project_id`` when the entry
    carries one, else by ``item_id``). A requested item with no entry is UNKNOWN."""
    by_project = {e.project_id: e for e in answer.items if e.project_id}
    by_item = {e.item_id: e for e in answer.items}
    results: list[BulkItemResult] = []
    for item in requested:
        entry = by_project.get(item.project_id) or by_item.get(item.item_id)
        if entry is None or "success" not in entry.model_fields_set:
            # Not mentioned, or mentioned without a verdict: it may have been bought.
            results.append(BulkItemResult(item, BulkStatus.UNKNOWN, entry))
        elif entry.success:
            results.append(BulkItemResult(item, BulkStatus.BOUGHT, entry))
        else:
            said = entry.msg or entry.error_msg
            reason = classify_refusal(said, entry.new_price)
            if hides_purchase(said, reason):
                # "projectId already exists" or a reason snipe does not know: maybe bought
                results.append(BulkItemResult(item, BulkStatus.UNKNOWN, entry))
            else:
                results.append(BulkItemResult(item, BulkStatus.REFUSED, entry, reason))
    return BulkPurchase(results=tuple(results), msg=answer.msg)
