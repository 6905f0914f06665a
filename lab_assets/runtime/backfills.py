"""Asset backfills requested by a sensor, and whether one is still running.

Dagster has no public API for either: a sensor requests a backfill with
`RunRequest.for_asset_graph_subset`, whose `AssetGraphSubset` argument is private (Dagster's
docstring: "intentionally left private"), and backfills are counted by status and tag only through
`instance.get_backfills_count(BulkActionsFilter(...))`. Listed in docs/ARCHITECTURE.md ("Private
Dagster API"), guarded by lab_assets_tests/test_dagster_guards.py.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import dagster as dg
from dagster._core.definitions.assets.graph.asset_graph_subset import AssetGraphSubset
from dagster._core.definitions.events import AssetKeyPartitionKey
from dagster._core.execution.backfill import BulkActionsFilter, BulkActionStatus

AssetPartition = tuple[str, "str | None"]  # (asset name, partition key or None when unpartitioned)


def partition_subset(partitions: Iterable[AssetPartition], asset_graph) -> AssetGraphSubset:
    """These (asset, partition) pairs of `asset_graph`, as the subset a backfill covers."""
    wanted = {AssetKeyPartitionKey(dg.AssetKey(asset), partition) for asset, partition in partitions}
    return AssetGraphSubset.from_asset_partition_set(wanted, asset_graph)


def backfill_request(subset: AssetGraphSubset, tags: Mapping[str, str]) -> dg.RunRequest:
    """A sensor's request for one asset backfill of `subset` (the daemon orders its runs)."""
    return dg.RunRequest.for_asset_graph_subset(subset, tags=dict(tags))


def requested_partitions(request: dg.RunRequest) -> set[AssetPartition]:
    """The (asset, partition) pairs a backfill request covers."""
    subset = request.asset_graph_subset
    assert subset is not None, "not a backfill request"
    return {(p.asset_key.to_user_string(), p.partition_key) for p in subset.iterate_asset_partitions()}


def backfill_running(instance: dg.DagsterInstance, tags: Mapping[str, str]) -> bool:
    """Whether a backfill with these tags is still requested (not yet completed, failed or canceled)."""
    active = BulkActionsFilter(statuses=[BulkActionStatus.REQUESTED], tags=dict(tags))
    return instance.get_backfills_count(filters=active) > 0


def requested_backfill_partitions(instance: dg.DagsterInstance) -> set[str]:
    """The partition keys that requested (unfinished) asset backfills target: `lab gc` leaves them."""
    found: set[str] = set()
    for backfill in instance.get_backfills(filters=BulkActionsFilter(statuses=[BulkActionStatus.REQUESTED])):
        data = backfill.asset_backfill_data
        if data is not None:
            found |= {p.partition_key for p in data.target_subset.iterate_asset_partitions() if p.partition_key}
    return found
