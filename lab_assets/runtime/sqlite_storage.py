"""The instance's SQLite storages with one pooled engine per process.

Event log: Dagster's default SQLite event log creates (and migrates) one database file per run and writes
every asset event twice (run file + index). Its consolidated variant keeps one database, but
creates a new SQLAlchemy engine (and SQLite connection) for each query and insert of a run, and
checks that a table exists with yet another engine before each dynamic-partition lookup.
Run storage: Dagster's SQLite run storage also builds an engine per query. What this costs per
cell, and what pooling saves, is measured in BENCHMARKS.md ("Why": profiles).
`instance.prepare_dagster_home` adds these storages to the instance's dagster.yaml, from which
`lab`, its workers, the webserver and the daemon all load them. Private Dagster API
(docs/ARCHITECTURE.md, "Private Dagster API").
"""

from collections.abc import Iterator
from contextlib import contextmanager
from functools import cached_property

import sqlalchemy as db
from dagster._core.storage.event_log import ConsolidatedSqliteEventLogStorage
from dagster._core.storage.runs import SqliteRunStorage
from dagster._core.storage.sqlite import SQLITE_BUSY_TIMEOUT_SECONDS
from sqlalchemy.pool import QueuePool

from lab_assets.runtime.asset_row import ForwardOnlyAssetRow


def _no_fsync_per_commit(dbapi_connection, _record) -> None:
    # WAL mode (set when Dagster creates the database) with synchronous=NORMAL: still never
    # corrupt, but commits skip the fsync; a power cut may lose the last events, which makes
    # their cells look missing and recomputed (asset files are fsynced on their own).
    dbapi_connection.execute("PRAGMA synchronous=NORMAL")


def pooled_engine(conn_string: str) -> db.Engine:
    # Pooled connections (BENCHMARKS.md, "Why"). A pooled SQLite
    # connection cannot hold an old read snapshot into its next use: outside a write, a
    # snapshot lives only while a statement is un-reset, and CPython resets it when the
    # result is fetched or dropped, which Dagster's storage does before returning.
    engine = db.create_engine(conn_string, poolclass=QueuePool, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS})
    db.event.listen(engine, "connect", _no_fsync_per_commit)
    return engine


class _OneEngine:
    """One pooled engine per process, in place of the storage's engine per query."""

    _conn_string: str

    @cached_property
    def _engine(self) -> db.Engine:
        return pooled_engine(self._conn_string)

    @contextmanager
    def _pooled(self) -> Iterator[db.Connection]:
        with self._engine.connect() as conn, conn.begin():
            yield conn

    def dispose(self) -> None:
        super().dispose()  # type: ignore[misc]
        self._engine.dispose()


class OneEngineSqliteEventLogStorage(ForwardOnlyAssetRow, _OneEngine, ConsolidatedSqliteEventLogStorage):
    """With two workers, the asset row keeps the newest materialization (`asset_row.py`)."""

    def _connect(self):
        return self._pooled()

    @cached_property
    def _known_tables(self) -> set[str]:
        return set()

    def has_table(self, table_name: str) -> bool:
        # Dagster asks before every dynamic-partition lookup; a table, once there, stays.
        if table_name not in self._known_tables:
            with self._engine.connect() as conn:
                if not self._engine.dialect.has_table(conn, table_name):
                    return False
            self._known_tables.add(table_name)
        return True


class OneEngineSqliteRunStorage(_OneEngine, SqliteRunStorage):
    @classmethod
    def from_config_value(cls, inst_data, config_value) -> "OneEngineSqliteRunStorage":
        return cls.from_local(inst_data=inst_data, **config_value)

    def connect(self):
        return self._pooled()
