"""The embedded instance's "head", read with the standard library, without loading Dagster: a
value that changes whenever anything Dagster's stale-status resolver reads changes (an event
stored or deleted, an asset wiped, a dynamic partition added or removed).

Only for the embedded SQLite instance, the one `runtime/instance.py` adds
(`OneEngineSqliteEventLogStorage`, Dagster's consolidated SQLite event log: one
`<base_dir>/event_log.db`); None for any other (Postgres, a DAGSTER_HOME of the user's own).
It reads Dagster's SQLite schema (tables `event_logs`, `asset_keys`, `dynamic_partitions`),
which no public API describes: docs/ARCHITECTURE.md ("Private Dagster API"), guarded by
lab_assets_tests/test_dagster_guards.py.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import yaml

STORAGE = {"module": "lab_assets.runtime.sqlite_storage", "class": "OneEngineSqliteEventLogStorage"}
EVENT_LOG_FILE = "event_log.db"  # dagster's SQLITE_EVENT_LOG_FILENAME + ".db"
# Count, largest and sum of ids: a deleted row lowers the count (or the sum), a new one raises
# the largest id. SQLite may reuse the largest id after a delete, so the newest row's timestamp
# is part of it too.
QUERIES = (
    "SELECT count(*), max(id), total(id), (SELECT timestamp FROM event_logs ORDER BY id DESC LIMIT 1) FROM event_logs",
    "SELECT count(*), max(wipe_timestamp), max(last_materialization_timestamp) FROM asset_keys",
    "SELECT count(*), max(id), total(id) FROM dynamic_partitions",
)


def event_log_file(dagster_home: Path) -> Path | None:
    """The event database of the instance in `dagster_home`, if it is the embedded SQLite one."""
    try:
        config = yaml.safe_load((dagster_home / "dagster.yaml").read_text()) or {}
    except (OSError, yaml.YAMLError):
        return None
    storage = config.get("event_log_storage") or {}
    if "storage" in config or {k: storage.get(k) for k in STORAGE} != STORAGE:
        return None
    path = Path((storage.get("config") or {}).get("base_dir", "")) / EVENT_LOG_FILE
    return path if path.is_file() else None


def _read(dagster_home: Path, queries: tuple[tuple[str, tuple], ...]) -> tuple | None:
    path = event_log_file(dagster_home)
    if path is None:
        return None
    try:
        # Not read-only (`mode=ro`): a WAL database is read through its shared-memory file, which
        # a reader may need to create. Nothing is written.
        with closing(sqlite3.connect(path, timeout=30)) as conn:
            return tuple(tuple(conn.execute(q, args).fetchone() or ()) for q, args in queries)
    except sqlite3.Error:
        return None


def head(dagster_home: Path) -> tuple | None:
    """The instance's head (see above), or None when it cannot be read this way."""
    return _read(dagster_home, tuple((q, ()) for q in QUERIES))


# The newest event now: its id, its timestamp and how many events lie at or below it.
_MARK = (
    "SELECT id, timestamp, (SELECT count(*) FROM event_logs WHERE id <= m.id) "
    "FROM event_logs m ORDER BY id DESC LIMIT 1"
)
_AT = "SELECT id, timestamp, (SELECT count(*) FROM event_logs WHERE id <= ?1) FROM event_logs WHERE id = ?1"


def deletion_mark(dagster_home: Path) -> list | None:
    """A mark that `deleted_since` compares to tell whether any event stored so far was deleted
    since (SQLite reuses the largest id after a delete: an id alone does not name one event
    forever): [newest id, its timestamp, count], [0, None, 0] for an empty event log; None when
    it cannot be read this way."""
    found = _read(dagster_home, ((_MARK, ()),))
    return None if found is None else list(found[0]) or [0, None, 0]


def deleted_since(dagster_home: Path, mark: list) -> bool:
    """Whether an event that was stored when `mark` was taken is gone (a deleted row lowers the
    count at or below the mark's newest event; deleting that one too and storing new ones in
    its place changes its timestamp). True when it cannot be told."""
    if mark[0] == 0:
        return False  # nothing was stored then
    found = _read(dagster_home, ((_AT, (mark[0],)),))
    return found is None or list(found[0]) != mark
