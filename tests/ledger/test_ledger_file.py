"""The ledger file: crashes, migrations, versions, corruption, foreign files."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from engine import LedgerError, VirtualClock
from engine.ledger import SCHEMA_VERSION, Ledger, PurchaseState
from engine.ledger._schema import APPLICATION_ID

from .support import intent

S = PurchaseState

# The child writes, acknowledges on stdout, then dies without closing anything: no
# checkpoint, no cleanup, exactly what a killed process leaves behind.
CRASHING_CHILD = textwrap.dedent(
    """
    import os, sys
    import anyio
    from engine import VirtualClock
    from engine.ledger import Intent, Ledger, PurchaseState

    async def main(path, stage):
        ledger = await Ledger.open(path, clock=VirtualClock())
        await ledger.record_intent(Intent("snp-crash-1", "item-1", "AK-47", 5000, "r1"))
        if stage == "after-send":
            await ledger.record_intent(Intent("snp-crash-2", "item-2", "M4A4", 7000, "r1"))
            await ledger.transition("snp-crash-2", PurchaseState.UNKNOWN)
        print("acknowledged", flush=True)
        os._exit(9)

    anyio.run(main, sys.argv[1], sys.argv[2], backend=sys.argv[3])
    """
)


def _crash_after(path: Path, stage: str, backend: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", CRASHING_CHILD, str(path), stage, backend],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 9, done.stderr
    assert done.stdout.strip() == "acknowledged"


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize(
    ("stage", "unresolved"),
    [
        ("after-intent", [("snp-crash-1", S.INTENT)]),
        ("after-send", [("snp-crash-1", S.INTENT), ("snp-crash-2", S.UNKNOWN)]),
    ],
)
def test_a_crash_keeps_every_acknowledged_write_for_the_restart(
    tmp_path: Path, backend: str, stage: str, unresolved: list[tuple[str, S]]
) -> None:
    path = tmp_path / "ledger.sqlite"
    _crash_after(path, stage, backend)
    assert Path(f"{path}-wal").stat().st_size > 0  # the writes are only in the log

    async def restart() -> list[tuple[str, S]]:
        async with await Ledger.open(path, clock=VirtualClock()) as ledger:
            return [(p.project_id, p.state) for p in await ledger.unresolved()]

    import anyio

    assert anyio.run(restart, backend=backend) == unresolved


async def test_an_empty_file_is_migrated_from_version_0(
    ledger_path: Path, clock: VirtualClock
) -> None:
    _write(ledger_path, b"")
    async with await Ledger.open(ledger_path, clock=clock) as ledger:
        await ledger.record_intent(intent(1))
    raw = _raw(ledger_path)
    assert raw.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert raw.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    raw.close()
    async with await Ledger.open(ledger_path, clock=clock) as again:  # no second migration
        assert [p.project_id for p in await again.purchases()] == ["snp-test-0001"]


async def test_a_newer_schema_version_is_refused_by_name(
    ledger_path: Path, clock: VirtualClock
) -> None:
    async with await Ledger.open(ledger_path, clock=clock):
        pass
    raw = _raw(ledger_path)
    raw.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    raw.close()
    for readonly in (False, True):
        with pytest.raises(LedgerError) as refused:
            await Ledger.open(ledger_path, clock=clock, readonly=readonly)
        message = str(refused.value)
        assert str(ledger_path) in message
        assert f"version {SCHEMA_VERSION + 1} is newer" in message
        assert f"({SCHEMA_VERSION})" in message


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b"this is not a database, just text\n" * 200, "not a database"),
        (b"SQLite format 3\x00" + b"\xff" * 4000, "not a database|malformed|corrupt"),
    ],
)
async def test_a_file_that_is_not_sqlite_is_a_clear_error(
    ledger_path: Path, clock: VirtualClock, content: bytes, says: str
) -> None:
    _write(ledger_path, content)
    for readonly in (False, True):
        with pytest.raises(LedgerError, match=says) as refused:
            await Ledger.open(ledger_path, clock=clock, readonly=readonly)
        assert str(ledger_path) in str(refused.value)
    assert _read(ledger_path) == content  # never "repaired" into something else


async def test_a_damaged_ledger_is_a_clear_error(ledger_path: Path, clock: VirtualClock) -> None:
    async with await Ledger.open(ledger_path, clock=clock) as ledger:
        for n in range(200):
            await ledger.record_intent(intent(n))
    data = bytearray(_read(ledger_path))
    page = 4096
    assert len(data) > 4 * page
    data[2 * page : 4 * page] = b"\x07" * (2 * page)  # scribble over two b-tree pages
    _write(ledger_path, bytes(data))
    with pytest.raises(LedgerError, match=r"corrupt|malformed") as refused:
        async with await Ledger.open(ledger_path, clock=clock, readonly=True) as reader:
            await reader.purchases()
    assert str(ledger_path) in str(refused.value)


async def test_another_sqlite_database_is_not_taken_for_a_ledger(
    ledger_path: Path, clock: VirtualClock
) -> None:
    raw = _raw(ledger_path)
    raw.execute("CREATE TABLE notes (text TEXT)")
    raw.close()
    with pytest.raises(LedgerError, match="not a snipe ledger"):
        await Ledger.open(ledger_path, clock=clock)
    assert _raw(ledger_path).execute("SELECT name FROM sqlite_schema").fetchall() == [("notes",)]


@pytest.mark.parametrize(
    ("make", "says"),
    [
        ("missing", "no ledger file there"),
        ("empty", "ledger is empty"),
        ("directory", "is a directory"),
    ],
)
async def test_readonly_needs_an_existing_current_ledger(
    ledger_path: Path, clock: VirtualClock, make: str, says: str
) -> None:
    if make == "empty":
        _write(ledger_path, b"")
    elif make == "directory":
        _mkdir(ledger_path)
    with pytest.raises(LedgerError, match=says):
        await Ledger.open(ledger_path, clock=clock, readonly=True)
    if make == "empty":
        assert _read(ledger_path) == b""


async def test_a_missing_directory_is_a_clear_error(tmp_path: Path, clock: VirtualClock) -> None:
    with pytest.raises(LedgerError, match="does not exist"):
        await Ledger.open(tmp_path / "nope" / "ledger.sqlite", clock=clock)


def _raw(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path, isolation_level=None)


# Plain file work in sync helpers: the async tests must not block on the file system.
def _write(path: Path, data: bytes) -> None:
    path.write_bytes(data)


def _read(path: Path) -> bytes:
    return path.read_bytes()


def _mkdir(path: Path) -> None:
    path.mkdir()


async def test_pending_migrations_run_in_order_and_all_or_nothing(
    ledger_path: Path, clock: VirtualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    from engine.ledger import _ledger

    async with await Ledger.open(ledger_path, clock=clock) as ledger:
        await ledger.record_intent(intent(1))
    v1 = _ledger.MIGRATIONS

    broken = "ALTER TABLE purchases ADD COLUMN note TEXT;\nSELECT no_such_column FROM purchases;"
    monkeypatch.setattr(_ledger, "MIGRATIONS", (*v1, broken))
    monkeypatch.setattr(_ledger, "SCHEMA_VERSION", len(v1) + 1)
    with pytest.raises(LedgerError, match="no_such_column"):
        await Ledger.open(ledger_path, clock=clock)
    raw = _raw(ledger_path)
    assert raw.execute("PRAGMA user_version").fetchone()[0] == len(v1)  # untouched
    assert "note" not in [c[1] for c in raw.execute("PRAGMA table_info(purchases)")]
    raw.close()

    added = (
        "ALTER TABLE purchases ADD COLUMN note TEXT;",
        "UPDATE budget_days SET count = count;",
    )
    monkeypatch.setattr(_ledger, "MIGRATIONS", (*v1, *added))
    monkeypatch.setattr(_ledger, "SCHEMA_VERSION", len(v1) + 2)
    async with await Ledger.open(ledger_path, clock=clock) as migrated:
        assert [p.project_id for p in await migrated.purchases()] == ["snp-test-0001"]
    raw = _raw(ledger_path)
    assert raw.execute("PRAGMA user_version").fetchone()[0] == len(v1) + 2
    assert "note" in [c[1] for c in raw.execute("PRAGMA table_info(purchases)")]
    raw.close()
