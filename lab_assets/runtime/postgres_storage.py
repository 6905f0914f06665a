"""The Postgres instance storage of the Kubernetes deployment, with the asset row kept at the
newest materialization under concurrent writers (docs/postgres-asset-row-race.md).

Two run pods materializing the same asset can leave its row naming an older materialization than
the newest; `asset_row.py` states the race and holds the guard, shared with the SQLite storage of
the laptop default.

Configured in k8s/base/dagster.yaml as

    storage:
      custom:
        module: lab_assets.runtime.postgres_storage
        class: LabPostgresStorage
        config: {postgres_db: {...}}     # exactly dagster-postgres's `storage: postgres:` config

Runs and schedules are dagster-postgres's own; the event log's asset-row upsert differs, and
every process rides out a Postgres restart or failover:

- a connection is retried while Postgres is unreachable or restarting, for up to 120 s
  (`connect_patiently`), not dagster-postgres's ~11 s. A run worker that cannot reach Postgres
  before it has marked its run started exits, and its run then stays STARTING until run
  monitoring's start timeout (20 min) fails it; a run worker that waits instead carries on. A
  wrong password or database name fails at once (dagster-postgres retries those for ~11 s).
- a process waits for Postgres before it checks its tables (when the storage is built), with the
  same patience: a run worker starting during a restart would fail there.
- a run-storage read whose connection Postgres dropped mid-query is made once more
  (`read_again_on_disconnect`): the queue daemon left a run STARTING, never launched, on one.
- the webserver's pooled connections are checked before use (a dead one is replaced).
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import TypeVar

import sqlalchemy as db
from dagster._core.storage.base_storage import DagsterStorage
from dagster._core.storage.event_log.migration import ASSET_KEY_INDEX_COLS
from dagster_postgres.event_log import PostgresEventLogStorage
from dagster_postgres.run_storage import PostgresRunStorage
from dagster_postgres.schedule_storage import PostgresScheduleStorage
from dagster_postgres.storage import DagsterPostgresStorage
from dagster_postgres.utils import create_pg_engine, get_token_provider_from_config, pg_url_from_config

from lab_assets.runtime.asset_row import ForwardOnlyAssetRow

# How long a process waits for Postgres to come back: a restart takes seconds, a managed
# Postgres's failover 30-120 s. dagster-postgres's own retry gives up after ~11 s, whatever the error.
OUTAGE_SECONDS = 120
RETRY_DELAYS = (0.2, 0.5, 1, 2)  # then every 4 s: back within 4 s of Postgres
# Answers of a server that is up but not yet (or no longer) serving: worth waiting for. Any other
# answer from a server ("password authentication failed", "database ... does not exist") is final.
# No answer at all (refused, timed out, host name not resolved: DNS can lag a rescheduled
# Service) is waited out, so a mistyped host fails only after OUTAGE_SECONDS, naming the host.
_NOT_SERVING = ("the database system is", "too many clients", "connection slots are reserved")
log = logging.getLogger(__name__)
T = TypeVar("T")


def _unavailable(exc: Exception) -> bool:
    text = str(getattr(exc, "orig", None) or exc)
    return "FATAL:" not in text or any(phrase in text for phrase in _NOT_SERVING)


def connect_patiently(engine: db.engine.Engine) -> db.engine.Connection:
    """`engine.connect()`, retried while Postgres is unreachable or restarting, up to
    OUTAGE_SECONDS; a server that refuses (wrong password, no such database) fails at once."""
    deadline = time.monotonic() + OUTAGE_SECONDS
    delays = itertools.chain(RETRY_DELAYS, itertools.repeat(4))
    while True:
        try:
            return engine.connect()
        except (db.exc.OperationalError, db.exc.TimeoutError) as exc:
            delay = next(delays)
            if not _unavailable(exc) or time.monotonic() + delay > deadline:
                raise
            log.warning("Postgres is unavailable, retrying in %s s: %s", delay, str(getattr(exc, "orig", exc)).strip())
            time.sleep(delay)


@contextmanager
def patient_connection(engine: db.engine.Engine) -> Iterator[db.engine.Connection]:
    """`dagster_postgres.utils.create_pg_connection`, with `connect_patiently`."""
    conn = connect_patiently(engine)
    try:
        yield conn
    finally:
        conn.close()


def read_again_on_disconnect(read: Callable[[], T]) -> T:
    """A read whose connection Postgres dropped mid-query (a restart, a failover) is made once
    more, on a new connection (`connect_patiently` waits for one). Only reads: a write may have
    been applied before its connection dropped. Dagster's queue daemon marks a run STARTING and
    reads it back before launching it; that read failing left the run STARTING and never
    launched, until run monitoring's start timeout (20 min) failed it."""
    try:
        return read()
    except db.exc.DBAPIError as exc:
        if not exc.connection_invalidated:
            raise
        log.warning("Postgres dropped the connection mid-read, reading again: %s", str(exc.orig).strip())
        return read()


class _PingedWebserverPool:
    """The webserver (`optimize_for_webserver`) holds pooled connections; dagster-postgres builds
    that pool without a liveness check, so after a Postgres restart the first query on each
    pooled connection fails (an HTTP 500 to the UI or a GraphQL client). A ping at checkout
    replaces a dead connection instead. (Other processes use no pool: a connection per query.)"""

    def optimize_for_webserver(self, statement_timeout: int, pool_recycle: int, max_overflow: int) -> None:
        super().optimize_for_webserver(statement_timeout, pool_recycle, max_overflow)  # type: ignore[misc]
        self._engine.pool._pre_ping = True  # type: ignore[attr-defined]  # = create_engine(pool_pre_ping=True)


def _read_again(method: Callable[..., T]) -> Callable[..., T]:
    """`method` (a read of dagster-postgres's storage) through `read_again_on_disconnect`."""

    def read(self, *args):
        return read_again_on_disconnect(partial(method, self, *args))

    return read


class PatientPostgresRunStorage(_PingedWebserverPool, PostgresRunStorage):
    def connect(self):
        return patient_connection(self._engine)

    # Every read of the run storage: its queries (`fetchall`, `fetchone`) and the schema checks
    # that `get_run_records` and the backfill reads make first (each inspects a table's columns
    # on a connection of its own; a drop there left a run STARTING, never launched, as well).
    fetchall = _read_again(PostgresRunStorage.fetchall)
    fetchone = _read_again(PostgresRunStorage.fetchone)
    has_run_stats_index_cols = _read_again(PostgresRunStorage.has_run_stats_index_cols)
    has_bulk_actions_selector_cols = _read_again(PostgresRunStorage.has_bulk_actions_selector_cols)
    has_backfill_id_column = _read_again(PostgresRunStorage.has_backfill_id_column)
    has_bulk_action_job_name_column = _read_again(PostgresRunStorage.has_bulk_action_job_name_column)
    has_backfill_tags_table = _read_again(PostgresRunStorage.has_backfill_tags_table)


class PatientPostgresScheduleStorage(_PingedWebserverPool, PostgresScheduleStorage):
    def connect(self, run_id: str | None = None):
        return patient_connection(self._engine)


class ForwardOnlyPostgresEventLogStorage(ForwardOnlyAssetRow, _PingedWebserverPool, PostgresEventLogStorage):
    """`PostgresEventLogStorage` whose asset-row upsert only moves the row forward (`asset_row.py`)."""

    def _connect(self):
        return patient_connection(self._engine)

    def _asset_key_index_cols(self, conn) -> bool:
        return self.has_secondary_index(ASSET_KEY_INDEX_COLS)  # dagster-postgres's check, cached


class LabPostgresStorage(DagsterPostgresStorage):
    """dagster-postgres's storage (same config, same tables) with the forward-only event log,
    patient connections and, in the webserver, pooled connections checked before use."""

    def __init__(self, postgres_url: str, should_autocreate_tables: bool = True, inst_data=None, token_provider=None):
        # DagsterPostgresStorage.__init__ with the event log swapped (not built twice: each
        # storage connects and checks its tables when built).
        self.postgres_url = postgres_url
        self.should_autocreate_tables = should_autocreate_tables
        self._inst_data = inst_data
        # Each storage checks its tables when built, with dagster-postgres's short retry: wait
        # for Postgres here first.
        with patient_connection(create_pg_engine(postgres_url, token_provider, poolclass=db.pool.NullPool)):
            pass
        args = (postgres_url, should_autocreate_tables)
        self._run_storage = PatientPostgresRunStorage(*args, token_provider=token_provider)
        self._event_log_storage = ForwardOnlyPostgresEventLogStorage(*args, token_provider=token_provider)
        self._schedule_storage = PatientPostgresScheduleStorage(*args, token_provider=token_provider)
        DagsterStorage.__init__(self)

    @classmethod
    def from_config_value(cls, inst_data, config_value) -> LabPostgresStorage:
        return cls(
            inst_data=inst_data,
            postgres_url=pg_url_from_config(config_value),
            should_autocreate_tables=config_value.get("should_autocreate_tables", True),
            token_provider=get_token_provider_from_config(config_value),
        )
