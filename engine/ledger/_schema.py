"""The ledger's schema, its version, and the ordered migrations that reach it.

The version lives in ``PRAGMA user_version``; ``PRAGMA application_id`` marks the file as
a snipe ledger, so pointing snipe at some other SQLite file is refused instead of
"migrated". Migration ``n`` takes a file from version ``n - 1`` to ``n``; an empty file is
version 0. All pending migrations run in one transaction: a crash halfway leaves the file
as it was.
"""

from __future__ import annotations

from ._orders import ORDERS_V3
from ._states import BUDGET_STATES, PurchaseState

__all__ = [
    "APPLICATION_ID",
    "MIGRATIONS",
    "MIN_SQLITE",
    "SCHEMA_VERSION",
    "SECONDS_PER_DAY",
    "split_statements",
]

APPLICATION_ID = 0x736E7065
"""``'snpe'``: written into the file header by the first migration."""

MIN_SQLITE = (3, 37, 0)
"""STRICT tables (money columns that refuse a float) need SQLite 3.37."""

# The states as version 1 shipped them: a migration's text never changes once shipped.
_V1_STATES = "'INTENT', 'UNKNOWN', 'FAILED', 'BOUGHT', 'RESERVED', 'COMPLETED', 'REFUNDED'"
_STATES = ", ".join(f"'{state.value}'" for state in PurchaseState)
_BUDGET = ", ".join(f"'{state.value}'" for state in sorted(BUDGET_STATES))

SECONDS_PER_DAY = 86_400


def _day(row: str) -> str:
    # Floor to whole seconds first: floor(t) >= N exactly when t >= N for an integer N,
    # so a day bucket and a "created_at >= day start" comparison never disagree.
    return f"(CAST({row}.created_at AS INTEGER) / {SECONDS_PER_DAY})"


_V1 = f"""
CREATE TABLE purchases (
    project_id         TEXT    PRIMARY KEY CHECK (length(project_id) BETWEEN 1 AND 50),
    item_id            TEXT    NOT NULL CHECK (item_id <> ''),
    name               TEXT    NOT NULL,
    game               TEXT,
    price              INTEGER NOT NULL CHECK (price >= 0),
    charged_price      INTEGER CHECK (charged_price >= 0),
    rule               TEXT    NOT NULL,
    state              TEXT    NOT NULL CHECK (state IN ({_V1_STATES})),
    batch_id           TEXT,
    allow_trade_locked INTEGER NOT NULL CHECK (allow_trade_locked IN (0, 1)),
    created_at         REAL    NOT NULL,
    updated_at         REAL    NOT NULL,
    unlock_at          INTEGER,
    send_until         INTEGER,
    marketplace_id     INTEGER,
    reason             TEXT
) STRICT;

-- A listing is bought at most once: only a FAILED purchase frees its item_id.
CREATE UNIQUE INDEX purchases_live_item ON purchases (item_id) WHERE state <> 'FAILED';
CREATE INDEX purchases_state ON purchases (state);
CREATE INDEX purchases_rule_created ON purchases (rule, created_at);
CREATE INDEX purchases_created ON purchases (created_at);

CREATE TABLE events (
    id          INTEGER PRIMARY KEY,
    project_id  TEXT    NOT NULL REFERENCES purchases (project_id),
    at          REAL    NOT NULL,
    from_state  TEXT,
    to_state    TEXT    NOT NULL,
    details     TEXT
) STRICT;
CREATE INDEX events_project ON events (project_id, id);

-- Every purchase starts with its INTENT event, in the statement that creates it.
CREATE TRIGGER purchases_intent_event AFTER INSERT ON purchases
BEGIN
    INSERT INTO events (project_id, at, from_state, to_state, details)
    VALUES (NEW.project_id, NEW.created_at, NULL, NEW.state, NULL);
END;
CREATE TRIGGER events_no_update BEFORE UPDATE ON events
BEGIN SELECT RAISE(ABORT, 'ledger events are append-only'); END;
CREATE TRIGGER events_no_delete BEFORE DELETE ON events
BEGIN SELECT RAISE(ABORT, 'ledger events are append-only'); END;
CREATE TRIGGER purchases_no_delete BEFORE DELETE ON purchases
BEGIN SELECT RAISE(ABORT, 'ledger purchases are never deleted'); END;

-- What budgets count, per rule and UTC day, kept by triggers in the transaction of every
-- change, so a cap check reads a few rows instead of every purchase ever made.
CREATE TABLE budget_days (
    rule    TEXT    NOT NULL,
    day     INTEGER NOT NULL,
    amount  INTEGER NOT NULL,
    count   INTEGER NOT NULL,
    PRIMARY KEY (rule, day)
) STRICT, WITHOUT ROWID;

CREATE TRIGGER budget_on_insert AFTER INSERT ON purchases
WHEN NEW.state IN ({_BUDGET})
BEGIN
    INSERT INTO budget_days (rule, day, amount, count)
    VALUES (NEW.rule, {_day("NEW")}, coalesce(NEW.charged_price, NEW.price), 1)
    ON CONFLICT (rule, day) DO UPDATE
    SET amount = amount + excluded.amount, count = count + 1;
END;

CREATE TRIGGER budget_on_update AFTER UPDATE OF state, charged_price ON purchases
BEGIN
    UPDATE budget_days
    SET amount = amount - coalesce(OLD.charged_price, OLD.price), count = count - 1
    WHERE OLD.state IN ({_BUDGET}) AND rule = OLD.rule AND day = {_day("OLD")};
    INSERT INTO budget_days (rule, day, amount, count)
    SELECT NEW.rule, {_day("NEW")}, coalesce(NEW.charged_price, NEW.price), 1
    WHERE NEW.state IN ({_BUDGET})
    ON CONFLICT (rule, day) DO UPDATE
    SET amount = amount + excluded.amount, count = count + 1;
END;

PRAGMA application_id = {APPLICATION_ID};
"""

_V2 = """
-- Buy orders snipe placed (one per item name, as the service allows), so a restart knows
-- which orders are its own: those it removes when their rule goes, and whose fills it
-- records as purchases.
CREATE TABLE buy_orders (
    name        TEXT    PRIMARY KEY,
    order_id    INTEGER NOT NULL,
    rule        TEXT    NOT NULL,
    game        TEXT,
    price       INTEGER NOT NULL CHECK (price >= 0),
    amount      INTEGER NOT NULL CHECK (amount >= 0),
    filled      INTEGER NOT NULL CHECK (filled >= 0),
    active      INTEGER NOT NULL CHECK (active IN (0, 1)),
    created_at  REAL    NOT NULL,
    updated_at  REAL    NOT NULL
) STRICT;
"""

# -- version 4, purchases: the RELEASED state --------------------------------------------
# A purchase the service showed no trace of is RELEASED (budget and item released, watched
# for a day), no longer FAILED for ever. SQLite cannot change a CHECK
# constraint in place, so ``purchases`` and ``events`` are rebuilt with every row kept
# (``events`` first refers to the new table, and follows it through the rename), then the
# indexes and triggers of version 1 are made again. ``budget_days`` is untouched: RELEASED
# does not count against a budget, and no row is RELEASED yet.
_RELEASED_MIGRATION = f"""
CREATE TABLE purchases_v3 (
    project_id         TEXT    PRIMARY KEY CHECK (length(project_id) BETWEEN 1 AND 50),
    item_id            TEXT    NOT NULL CHECK (item_id <> ''),
    name               TEXT    NOT NULL,
    game               TEXT,
    price              INTEGER NOT NULL CHECK (price >= 0),
    charged_price      INTEGER CHECK (charged_price >= 0),
    rule               TEXT    NOT NULL,
    state              TEXT    NOT NULL CHECK (state IN ({_STATES})),
    batch_id           TEXT,
    allow_trade_locked INTEGER NOT NULL CHECK (allow_trade_locked IN (0, 1)),
    created_at         REAL    NOT NULL,
    updated_at         REAL    NOT NULL,
    unlock_at          INTEGER,
    send_until         INTEGER,
    marketplace_id     INTEGER,
    reason             TEXT
) STRICT;
INSERT INTO purchases_v3 SELECT * FROM purchases;
CREATE TABLE events_v3 (
    id          INTEGER PRIMARY KEY,
    project_id  TEXT    NOT NULL REFERENCES purchases_v3 (project_id),
    at          REAL    NOT NULL,
    from_state  TEXT,
    to_state    TEXT    NOT NULL,
    details     TEXT
) STRICT;
INSERT INTO events_v3 SELECT * FROM events;
DROP TABLE events;
DROP TABLE purchases;
ALTER TABLE purchases_v3 RENAME TO purchases;
ALTER TABLE events_v3 RENAME TO events;

-- A listing is bought at most once: a FAILED or RELEASED purchase frees its item_id. (A
-- released one that turns up while its item has a new live purchase cannot be written: the
-- reconciler halts for a person to look.)
CREATE UNIQUE INDEX purchases_live_item ON purchases (item_id)
WHERE state NOT IN ('FAILED', 'RELEASED');
CREATE INDEX purchases_state ON purchases (state);
CREATE INDEX purchases_rule_created ON purchases (rule, created_at);
CREATE INDEX purchases_created ON purchases (created_at);
CREATE INDEX events_project ON events (project_id, id);

CREATE TRIGGER purchases_intent_event AFTER INSERT ON purchases
BEGIN
    INSERT INTO events (project_id, at, from_state, to_state, details)
    VALUES (NEW.project_id, NEW.created_at, NULL, NEW.state, NULL);
END;
CREATE TRIGGER events_no_update BEFORE UPDATE ON events
BEGIN SELECT RAISE(ABORT, 'ledger events are append-only'); END;
CREATE TRIGGER events_no_delete BEFORE DELETE ON events
BEGIN SELECT RAISE(ABORT, 'ledger events are append-only'); END;
CREATE TRIGGER purchases_no_delete BEFORE DELETE ON purchases
BEGIN SELECT RAISE(ABORT, 'ledger purchases are never deleted'); END;

CREATE TRIGGER budget_on_insert AFTER INSERT ON purchases
WHEN NEW.state IN ({_BUDGET})
BEGIN
    INSERT INTO budget_days (rule, day, amount, count)
    VALUES (NEW.rule, {_day("NEW")}, coalesce(NEW.charged_price, NEW.price), 1)
    ON CONFLICT (rule, day) DO UPDATE
    SET amount = amount + excluded.amount, count = count + 1;
END;

CREATE TRIGGER budget_on_update AFTER UPDATE OF state, charged_price ON purchases
BEGIN
    UPDATE budget_days
    SET amount = amount - coalesce(OLD.charged_price, OLD.price), count = count - 1
    WHERE OLD.state IN ({_BUDGET}) AND rule = OLD.rule AND day = {_day("OLD")};
    INSERT INTO budget_days (rule, day, amount, count)
    SELECT NEW.rule, {_day("NEW")}, coalesce(NEW.charged_price, NEW.price), 1
    WHERE NEW.state IN ({_BUDGET})
    ON CONFLICT (rule, day) DO UPDATE
    SET amount = amount + excluded.amount, count = count + 1;
END;
"""

# -- version 5: what operators did ---------------------------------------------------------
# Control actions taken through the API (pause, resume, reload, remove orders, stop), each
# with its time and the NAME of the token that did it (never the token). Append-only, like
# ``events``; apart from ``events`` because those belong to one purchase each.
_CONTROL_MIGRATION = """
CREATE TABLE control_events (
    id      INTEGER PRIMARY KEY,
    at      REAL    NOT NULL,
    action  TEXT    NOT NULL CHECK (action <> ''),
    actor   TEXT    NOT NULL,
    outcome TEXT    NOT NULL,
    details TEXT
) STRICT;
CREATE TRIGGER control_events_no_update BEFORE UPDATE ON control_events
BEGIN SELECT RAISE(ABORT, 'ledger events are append-only'); END;
CREATE TRIGGER control_events_no_delete BEFORE DELETE ON control_events
BEGIN SELECT RAISE(ABORT, 'ledger events are append-only'); END;
"""

# -- version 6: what kind of ledger this is -----------------------------------------------
# A few settings that belong to the file rather than to a run: ``mode`` (``paper`` for the
# ledger of ``snipe run --paper``; absent for a real one) and the paper wallet's starting
# balance. Written once: a row is never changed or deleted, so a paper ledger can never
# become a real one (or the reverse), and its wallet never silently restarts.
_META_MIGRATION = """
CREATE TABLE ledger_meta (
    key    TEXT PRIMARY KEY CHECK (key <> ''),
    value  TEXT NOT NULL,
    at     REAL NOT NULL
) STRICT;
CREATE TRIGGER ledger_meta_no_update BEFORE UPDATE ON ledger_meta
BEGIN SELECT RAISE(ABORT, 'ledger settings are written once'); END;
CREATE TRIGGER ledger_meta_no_delete BEFORE DELETE ON ledger_meta
BEGIN SELECT RAISE(ABORT, 'ledger settings are written once'); END;
"""

MIGRATIONS: tuple[str, ...] = (
    _V1,
    _V2,
    ORDERS_V3,
    _RELEASED_MIGRATION,
    _CONTROL_MIGRATION,
    _META_MIGRATION,
)
"""``MIGRATIONS[n - 1]`` takes version ``n - 1`` to ``n``. Append only; never edit one that
has shipped."""

SCHEMA_VERSION = len(MIGRATIONS)
"""The version this code reads and writes."""


def split_statements(script: str) -> list[str]:
    """Split a migration into statements (``CREATE TRIGGER`` bodies keep their ``;``)."""
    import sqlite3

    statements: list[str] = []
    current = ""
    for line in script.splitlines(keepends=True):
        if line.lstrip().startswith("--"):
            continue
        current += line
        if sqlite3.complete_statement(current):
            statements.append(current.strip())
            current = ""
    if current.strip():
        statements.append(current.strip())
    return statements
