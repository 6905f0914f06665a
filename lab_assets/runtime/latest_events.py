"""Each partition's latest materialization or observation of an asset, for all partitions at once.

One public query per partition (`fetch_materializations` with `asset_partitions=[p]`, limit 1)
costs ~1 ms: ~10 s at 10,000 cells; one query for all of them with `asset_partitions=[...]`
returns every event of those partitions, and Dagster answers at most 10,000 records a query.
The event log storage's own index queries (`get_latest_storage_id_by_partition`,
`get_latest_tags_by_partition`, with Dagster's event type enum; not public) name each
partition's latest event or its indexed tags; the public records query then reads those events,
a bounded number per query. Listed in docs/ARCHITECTURE.md ("Private
Dagster API"), guarded by lab_assets_tests/test_dagster_guards.py.
"""

from __future__ import annotations

from collections.abc import Iterable

import dagster as dg
from dagster._core.events import DagsterEventType

# Storage ids per records query: SQLite binds at most 32,766 parameters, and Dagster returns at
# most 10,000 records a query.
_IDS_PER_QUERY = 5_000


def latest_ids(
    instance: dg.DagsterInstance, asset: str, observed: bool = False, partitions: Iterable[str] | None = None
) -> dict[str, int]:
    """{partition: the storage id of its latest materialization (`observed`: observation)} for
    every partition of the asset that has one, or for those among `partitions`. One index query
    (ids only, cheap): a 12-cell sweep in a lab home of 10,000 cells then reads 12 records."""
    kind = DagsterEventType.ASSET_OBSERVATION if observed else DagsterEventType.ASSET_MATERIALIZATION
    latest = instance.event_log_storage.get_latest_storage_id_by_partition(dg.AssetKey(asset), kind)
    return latest if partitions is None else {p: latest[p] for p in set(partitions) & latest.keys()}


def records(
    instance: dg.DagsterInstance, asset: str, storage_ids: Iterable[int], observed: bool = False
) -> dict[int, dg.EventLogRecord]:
    """{storage id: its record} of the asset's materializations (`observed`: observations)."""
    key, ids, out = dg.AssetKey(asset), sorted(set(storage_ids)), {}
    fetch = instance.fetch_observations if observed else instance.fetch_materializations
    for start in range(0, len(ids), _IDS_PER_QUERY):
        chunk = ids[start : start + _IDS_PER_QUERY]
        out.update(
            {
                r.storage_id: r
                for r in fetch(dg.AssetRecordsFilter(asset_key=key, storage_ids=chunk), limit=len(chunk)).records
            }
        )
    return out


def latest_tags(instance: dg.DagsterInstance, asset: str, tag: str, observed: bool = False) -> dict[str, str]:
    """{partition: the value of `tag` on its latest materialization (`observed`: observation)}
    for every partition whose latest one has it, from Dagster's index of event tags: no record
    is read (registering 10,000 cells read 20,000 observation records for their data version).
    Dagster indexes only some tags (`DATA_VERSION_TAG` among them) and refuses the others."""
    kind = DagsterEventType.ASSET_OBSERVATION if observed else DagsterEventType.ASSET_MATERIALIZATION
    found = instance.event_log_storage.get_latest_tags_by_partition(dg.AssetKey(asset), kind, [tag])
    return {p: tags[tag] for p, tags in found.items() if tag in tags}
