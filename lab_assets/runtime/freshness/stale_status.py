"""Fresh / stale / missing per asset partition, from Dagster's own stale-status resolver.

This is the resolver behind the UI's "stale" badges (`CachingStaleStatusResolver`, built on an
`AssetGraphView` at the current time). Dagster has no public API that answers "is this partition
stale, and why" for many partitions in one consistent look at the instance, so it lives here.
Read-only. Listed in docs/ARCHITECTURE.md ("Private Dagster API"), guarded by
lab_assets_tests/test_dagster_guards.py.
"""

from __future__ import annotations

from dataclasses import dataclass

import dagster as dg
from dagster._core.asset_graph_view.asset_graph_view import AssetGraphView
from dagster._core.definitions.data_version import CachingStaleStatusResolver, StaleStatus
from dagster._core.definitions.temporal_context import TemporalContext
from dagster._time import get_current_datetime

MISSING, STALE, FRESH = "missing", "stale", "fresh"
_FROM_DAGSTER = {StaleStatus.MISSING: MISSING, StaleStatus.STALE: STALE, StaleStatus.FRESH: FRESH}


@dataclass
class Status:
    status: str
    reason: str = ""


class StaleStatusReader:
    """Dagster's stale-status resolver for one consistent look at the instance.

    `asset_graph`: `defs.resolve_asset_graph()`, or a sensor's `context.repository_def.asset_graph`."""

    def __init__(self, instance: dg.DagsterInstance, asset_graph):
        view = AssetGraphView(
            temporal_context=TemporalContext(effective_dt=get_current_datetime(), last_event_id=None),
            instance=instance,
            asset_graph=asset_graph,
        )
        self._r = CachingStaleStatusResolver(instance=instance, asset_graph=asset_graph, loading_context=view)

    def status(self, asset: str, partition: str | dg.MultiPartitionKey | None) -> Status:
        key = dg.AssetKey(asset)
        status = _FROM_DAGSTER[self._r.get_status(key, partition)]
        if status == STALE:
            causes = self._r.get_stale_root_causes(key, partition)
            reason = "; ".join(sorted({f"{c.key.asset_key.to_user_string()} {c.reason}" for c in causes}))
            return Status(STALE, reason)
        return Status(status, "never materialized" if status == MISSING else "")

    def observed(self, asset: str, partition: str | None = None) -> str | None:
        """The current data version of a source asset (partition): its last observation's."""
        return self._r.get_current_data_version(dg.AssetKey(asset), partition).value
