"""The asset row only moves forward: the one statement of the rule, used by both instance
storages (`sqlite_storage.py`, the laptop default; `postgres_storage.py`, the cluster).

Dagster stores a materialization in two transactions: the event (which gets its storage id),
then the asset's row (`asset_keys.last_materialization`, what a step reads its inputs' versions
from). Two writers of one asset can interleave them, and the older event's row update lands last:
the row then names a materialization older than the newest, a downstream step records that older
input version, and its cell plans stale right after it was materialized
(docs/postgres-asset-row-race.md). So a step materialization replaces the row only if its event
id is larger than the one the row holds, checked inside one upsert
(`INSERT ... ON CONFLICT (asset_key) DO UPDATE ... WHERE`) that the database evaluates on the
latest committed row under its write lock (SQLite's database lock, Postgres's row lock): it
holds under any interleaving. Private Dagster API (docs/ARCHITECTURE.md, "Private Dagster API").
"""

from __future__ import annotations

import sqlalchemy as db
from dagster._core.storage.event_log.schema import AssetKeyTable
from sqlalchemy.dialects import postgresql, sqlite

# The upsert each database spells the same way (SQLite >= 3.24, Postgres >= 9.5).
_INSERT = {"sqlite": sqlite.insert, "postgresql": postgresql.insert}


def stored_storage_id() -> db.ColumnElement:
    """SQL: the storage id of the materialization the asset row names, NULL when none. The row
    holds a serialized EventLogRecord ending in `"storage_id": N}`; N is read as the trailing
    integer, not with a JSON function: event metadata may hold NaN, which is not JSON."""
    text = db.func.rtrim(AssetKeyTable.c.last_materialization, "}")
    digits = db.func.substr(text, db.func.length(db.func.rtrim(text, "0123456789")) + 1)
    return db.cast(db.func.nullif(digits, ""), db.BigInteger)


def newer_than_stored(event_id: int) -> db.ColumnElement:
    """SQL: `event_id` is newer than the row's materialization (a row naming none, or one whose id
    cannot be read, counts as the oldest)."""
    return db.func.coalesce(stored_storage_id(), 0) < event_id


def forward_only_upsert(dialect: str, asset_key: str, values: dict, event_id: int):
    """The asset row's upsert for a step materialization with id `event_id`: inserted if new,
    updated only while `newer_than_stored`."""
    return (
        _INSERT[dialect](AssetKeyTable)
        .values(asset_key=asset_key, **values)
        .on_conflict_do_update(
            index_elements=[AssetKeyTable.c.asset_key], set_=values, where=newer_than_stored(event_id)
        )
    )


class ForwardOnlyAssetRow:
    """Mixin for a Dagster SQL event log storage: its `_store_asset_event(conn, event, event_id)`
    (called by `store_event` for every asset event) with step materializations written by
    `forward_only_upsert`. Other asset events (observations, planned materializations) move only
    the row's timestamp and run id, which Dagster's own code writes."""

    def _asset_key_index_cols(self, conn) -> bool:
        """Whether the asset row has the index columns (Dagster's SQL storages ask the connection)."""
        return self._has_asset_key_index_cols_on_connection(conn)  # type: ignore[attr-defined]

    def _store_asset_event(self, conn, event, event_id: int) -> None:
        dagster_event = event.dagster_event
        if not (dagster_event and dagster_event.asset_key and dagster_event.is_step_materialization):
            return super()._store_asset_event(conn, event, event_id)  # type: ignore[misc]
        has_index_cols = self._asset_key_index_cols(conn)
        values = self._get_asset_entry_values(event, event_id, has_index_cols)  # type: ignore[attr-defined]
        conn.execute(forward_only_upsert(conn.dialect.name, dagster_event.asset_key.to_string(), values, event_id))
