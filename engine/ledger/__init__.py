"""The ledger: every purchase, written before it is sent, with its append-only history.

Open one with :meth:`Ledger.open` (a file path, or :data:`MEMORY` for backtests), write an
:class:`Intent` with :meth:`Ledger.record_intent` (checked against :class:`Cap` s in the
same transaction) before sending the request, and move it through :class:`PurchaseState`
with :meth:`Ledger.transition` as answers arrive. After a restart,
:meth:`Ledger.unresolved` lists what must be resolved by ``project_id``.
"""

from ._connection import Driver
from ._ledger import MEMORY, Ledger
from ._orders import (
    FILL_PREFIX,
    LIVE_ORDER_STATES,
    BuyOrderRecord,
    Exposure,
    HistoryFill,
    OrderState,
)
from ._records import (
    DETAIL_FIELDS,
    PROJECT_ID_MAX,
    Cap,
    Committed,
    ControlEvent,
    Event,
    Intent,
    Purchase,
    RuleTotals,
    Totals,
    new_project_id,
    summarize,
    utc_day_start,
)
from ._resolve import (
    DEFAULT_ABSENCE_GAP,
    DEFAULT_GRACE,
    DEFAULT_HISTORY_SLACK,
    DEFAULT_WATCH,
    Absence,
    Resolution,
    history_match,
    is_overdue,
    release,
    resolve,
    resolve_history,
    sent_at,
)
from ._schema import SCHEMA_VERSION
from ._states import (
    BUDGET_STATES,
    FINAL_STATES,
    IN_FLIGHT_STATES,
    LATE_STATES,
    SPENT_STATES,
    TRANSITIONS,
    PurchaseState,
)

__all__ = [
    "BUDGET_STATES",
    "DEFAULT_ABSENCE_GAP",
    "DEFAULT_GRACE",
    "DEFAULT_HISTORY_SLACK",
    "DEFAULT_WATCH",
    "DETAIL_FIELDS",
    "FILL_PREFIX",
    "FINAL_STATES",
    "IN_FLIGHT_STATES",
    "LATE_STATES",
    "LIVE_ORDER_STATES",
    "MEMORY",
    "PROJECT_ID_MAX",
    "SCHEMA_VERSION",
    "SPENT_STATES",
    "TRANSITIONS",
    "Absence",
    "BuyOrderRecord",
    "Cap",
    "Committed",
    "ControlEvent",
    "Driver",
    "Event",
    "Exposure",
    "HistoryFill",
    "Intent",
    "Ledger",
    "OrderState",
    "Purchase",
    "PurchaseState",
    "Resolution",
    "RuleTotals",
    "Totals",
    "history_match",
    "is_overdue",
    "new_project_id",
    "release",
    "resolve",
    "resolve_history",
    "sent_at",
    "summarize",
    "utc_day_start",
]
