"""The instance's event log: Dagster's consolidated SQLite storage, with connections reused.

Dagster's default SQLite event log creates (and migrates) one database file per run and writes
every asset event twice (run file + index). Its consolidated variant keeps one database, but
opens a new SQLAlchemy engine and connection for each of the ~200 queries and inserts of a
sweep cell's run. With both fixed, a cell's platform overhead drops from ~0.7 s to ~0.3 s
(profile in BENCHMARKS.md). `dagster.yaml` selects this class; the webserver, the daemon and
`lab` all load it from there.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from functools import cached_property

import sqlalchemy as db
from dagster._core.storage.event_log import ConsolidatedSqliteEventLogStorage
from dagster._core.storage.sqlite import SQLITE_BUSY_TIMEOUT_SECONDS


def _no_fsync_per_commit(dbapi_connection, _record) -> None:
    # WAL mode (set when Dagster creates the database) with synchronous=NORMAL: still never
    # corrupt, but commits skip the fsync; a power cut may lose the last events, which makes
    # their cells look missing and recomputed (asset files are fsynced on their own).
    dbapi_connection.execute("PRAGMA synchronous=NORMAL")


class PooledSqliteEventLogStorage(ConsolidatedSqliteEventLogStorage):
    """One engine per process; SQLAlchemy's pool hands each thread its own connection."""

    @cached_property
    def _engine(self) -> db.Engine:
        engine = db.create_engine(self._conn_string, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS})
        db.event.listen(engine, "connect", _no_fsync_per_commit)
        return engine

    @contextmanager
    def _connect(self) -> Iterator[db.Connection]:
        with self._engine.connect() as conn, conn.begin():
            yield conn

    def dispose(self) -> None:
        super().dispose()
        self._engine.dispose()
