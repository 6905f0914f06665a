"""The Postgres instance storage of the Kubernetes deployment, with the asset row kept at the
newest materialization under concurrent writers (docs/postgres-asset-row-race.md).

dagster-postgres's `PostgresEventLogStorage.store_event` inserts an event (which gives it its
id) in one transaction and upserts the asset's row (`asset_keys.last_materialization`, what a
step reads its inputs' versions from) in a second one. Two run pods materializing the same asset
can commit those four transactions interleaved: the older event's upsert lands last and the row
names a materialization older than the newest. A downstream step then records the older input
version and its cell plans stale right after it was materialized. The SQLite storage of the
laptop default has the same guard (`sqlite_storage.OneEngineSqliteEventLogStorage`).

Configured in k8s/base/dagster.yaml as

    storage:
      custom:
        module: lab_assets.runtime.postgres_storage
        class: LabPostgresStorage
        config: {postgres_db: {...}}     # exactly dagster-postgres's `storage: postgres:` config

Runs and schedules are dagster-postgres's own; the event log's asset-row upsert differs, and
the webserver's connection pool checks a connection before use (it survives a Postgres restart).
"""

from __future__ import annotations

import sqlalchemy as db
from dagster._core.storage.base_storage import DagsterStorage
from dagster._core.storage.event_log.migration import ASSET_KEY_INDEX_COLS
from dagster._core.storage.event_log.schema import AssetKeyTable
from dagster_postgres.event_log import PostgresEventLogStorage
from dagster_postgres.run_storage import PostgresRunStorage
from dagster_postgres.schedule_storage import PostgresScheduleStorage
from dagster_postgres.storage import DagsterPostgresStorage
from dagster_postgres.utils import get_token_provider_from_config, pg_url_from_config
from sqlalchemy.dialects import postgresql

# A serialized EventLogRecord ends in `"storage_id": N}`; metadata may hold NaN (not JSON), so
# the id is read as the trailing integer rather than with a JSON operator.
_TRAILING_ID = r"(\d+)\}\s*$"


def stored_storage_id(column=AssetKeyTable.c.last_materialization):
    """SQL: the storage id of the materialization the asset row names (NULL when none)."""
    return db.cast(db.func.substring(column, _TRAILING_ID), db.BigInteger)


class _PingedWebserverPool:
    """The webserver (`optimize_for_webserver`) holds pooled connections; dagster-postgres builds
    that pool without a liveness check, so after a Postgres restart the first query on each
    pooled connection fails (an HTTP 500 to the UI or a GraphQL client). A ping at checkout
    replaces a dead connection instead. (Other processes use no pool: a connection per query.)"""

    def optimize_for_webserver(self, statement_timeout: int, pool_recycle: int, max_overflow: int) -> None:
        super().optimize_for_webserver(statement_timeout, pool_recycle, max_overflow)  # type: ignore[misc]
        self._engine.pool._pre_ping = True  # type: ignore[attr-defined]  # = create_engine(pool_pre_ping=True)


class PingedPostgresRunStorage(_PingedWebserverPool, PostgresRunStorage):
    pass


class PingedPostgresScheduleStorage(_PingedWebserverPool, PostgresScheduleStorage):
    pass


class ForwardOnlyPostgresEventLogStorage(_PingedWebserverPool, PostgresEventLogStorage):
    """`PostgresEventLogStorage` whose asset-row upsert only moves the row forward: a step
    materialization replaces `last_materialization` only if its event id is larger than the one
    the row holds. The check runs inside the upsert (`ON CONFLICT DO UPDATE ... WHERE`), which
    Postgres evaluates on the locked, latest committed row, so it holds under any interleaving."""

    def _store_asset_event(self, conn, event, event_id: int) -> None:
        dagster_event = event.dagster_event
        if not (dagster_event and dagster_event.asset_key and dagster_event.is_step_materialization):
            return super()._store_asset_event(conn, event, event_id)
        values = self._get_asset_entry_values(event, event_id, self.has_secondary_index(ASSET_KEY_INDEX_COLS))
        newer = db.or_(AssetKeyTable.c.last_materialization.is_(None), stored_storage_id() < event_id)
        conn.execute(
            postgresql.insert(AssetKeyTable)
            .values(asset_key=dagster_event.asset_key.to_string(), **values)
            .on_conflict_do_update(index_elements=[AssetKeyTable.c.asset_key], set_=values, where=newer)
        )


class LabPostgresStorage(DagsterPostgresStorage):
    """dagster-postgres's storage (same config, same tables) with the forward-only event log
    and, in the webserver, pooled connections checked before use."""

    def __init__(self, postgres_url: str, should_autocreate_tables: bool = True, inst_data=None, token_provider=None):
        # DagsterPostgresStorage.__init__ with the event log swapped (not built twice: each
        # storage connects and checks its tables when built).
        self.postgres_url = postgres_url
        self.should_autocreate_tables = should_autocreate_tables
        self._inst_data = inst_data
        args = (postgres_url, should_autocreate_tables)
        self._run_storage = PingedPostgresRunStorage(*args, token_provider=token_provider)
        self._event_log_storage = ForwardOnlyPostgresEventLogStorage(*args, token_provider=token_provider)
        self._schedule_storage = PingedPostgresScheduleStorage(*args, token_provider=token_provider)
        DagsterStorage.__init__(self)

    @classmethod
    def from_config_value(cls, inst_data, config_value) -> "LabPostgresStorage":
        return cls(
            inst_data=inst_data,
            postgres_url=pg_url_from_config(config_value),
            should_autocreate_tables=config_value.get("should_autocreate_tables", True),
            token_provider=get_token_provider_from_config(config_value),
        )
