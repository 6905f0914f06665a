"""Each partition's latest materialization or observation of an asset, for all partitions at once.

One public query per partition (`fetch_materializations` with `asset_partitions=[p]`, limit 1)
costs ~1 ms: ~10 s at 10,000 cells; one query for all of them with `asset_partitions=[...]`
returns every event of those partitions, and Dagster answers at most 10,000 records a query.
The event log storage's own index query (`get_latest_storage_id_by_partition`, with Dagster's
event type enum; not public) names each partition's latest event; the public records query
then reads those events, a bounded number per query. Listed in docs/ARCHITECTURE.md ("Private
Dagster API"), guarded by lab_assets_tests/test_dagster_guards.py.
"""

from __future__ import annotations

from collections.abc import Iterable

import dagster as dg
from dagster._core.events import DagsterEventType

# Storage ids per records query: SQLite binds at most 32,766 parameters, and Dagster returns at
# most 10,000 records a query.
_IDS_PER_QUERY = 5_000


def latest_materializations(instance: dg.DagsterInstance, asset: str, partitions: Iterable[str] | None = None) -> dict[str, dg.EventLogRecord]:
    """{partition: its latest materialization} for every materialized partition of the asset, or
    of those among `partitions`."""
    return _latest(instance, asset, partitions, DagsterEventType.ASSET_MATERIALIZATION, instance.fetch_materializations)


def latest_observations(instance: dg.DagsterInstance, asset: str) -> dict[str, dg.EventLogRecord]:
    """{partition: its latest observation} for every observed partition of the asset."""
    return _latest(instance, asset, None, DagsterEventType.ASSET_OBSERVATION, instance.fetch_observations)


def _latest(instance: dg.DagsterInstance, asset: str, partitions: Iterable[str] | None, kind: DagsterEventType, fetch) -> dict[str, dg.EventLogRecord]:
    key = dg.AssetKey(asset)
    latest = instance.event_log_storage.get_latest_storage_id_by_partition(key, kind)
    if partitions is not None:
        # The index query names every partition (ids only, cheap); the records are read only for
        # the wanted ones: a 12-cell sweep in a lab home of 10,000 cells reads 12 (an
        # embedding's record carries its scatter plot).
        latest = {p: latest[p] for p in set(partitions) & latest.keys()}
    by_id = {storage_id: partition for partition, storage_id in latest.items()}
    ids, out = sorted(by_id), {}
    for start in range(0, len(ids), _IDS_PER_QUERY):
        chunk = ids[start : start + _IDS_PER_QUERY]
        records = fetch(dg.AssetRecordsFilter(asset_key=key, storage_ids=chunk), limit=len(chunk)).records
        out.update({by_id[r.storage_id]: r for r in records})
    return out
