"""The instance's event log: Dagster's consolidated SQLite storage, with one engine per process.

Dagster's default SQLite event log creates (and migrates) one database file per run and writes
every asset event twice (run file + index). Its consolidated variant keeps one database, but
creates a new SQLAlchemy engine for each of the ~200 queries and inserts of a sweep cell's
run. With both fixed, a cell's platform overhead drops from ~0.7 s to ~0.3 s (profile in
BENCHMARKS.md). `instance.prepare_dagster_home` adds it to the instance's
dagster.yaml, from which `lab`, its workers, the webserver and the daemon all load it.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from functools import cached_property

import sqlalchemy as db
from dagster._core.storage.event_log import ConsolidatedSqliteEventLogStorage
from dagster._core.storage.sqlite import SQLITE_BUSY_TIMEOUT_SECONDS
from sqlalchemy.pool import NullPool


def _no_fsync_per_commit(dbapi_connection, _record) -> None:
    # WAL mode (set when Dagster creates the database) with synchronous=NORMAL: still never
    # corrupt, but commits skip the fsync; a power cut may lose the last events, which makes
    # their cells look missing and recomputed (asset files are fsynced on their own).
    dbapi_connection.execute("PRAGMA synchronous=NORMAL")


class OneEngineSqliteEventLogStorage(ConsolidatedSqliteEventLogStorage):
    """One engine per process instead of one per query."""

    @cached_property
    def _engine(self) -> db.Engine:
        # NullPool: a fresh SQLite connection per use (cheap; the engine's set-up is what cost).
        # A pooled connection could keep a read snapshot open through a half-read cursor and miss
        # another worker's newer events; a fresh one cannot.
        engine = db.create_engine(
            self._conn_string, poolclass=NullPool, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS}
        )
        db.event.listen(engine, "connect", _no_fsync_per_commit)
        return engine

    @contextmanager
    def _connect(self) -> Iterator[db.Connection]:
        with self._engine.connect() as conn, conn.begin():
            yield conn

    def dispose(self) -> None:
        super().dispose()
        self._engine.dispose()
