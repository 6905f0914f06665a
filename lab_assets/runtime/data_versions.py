"""Data versions recorded without a run: "observe if changed".

An observation carries its data version in the event's `dagster/data_version` tag, the tag the
UI's "Observe" writes and Dagster's stale-status resolver reads. Dagster exports neither the tag's
name (`DATA_VERSION_TAG`) nor a runless "observe with this data version" call, so both live here.
Reading the last observation and reporting one are public (`fetch_observations`,
`report_runless_asset_event`); the latest observation of every partition at once is
`latest_events.py`'s. Listed in docs/ARCHITECTURE.md ("Private Dagster API"), guarded by
lab_assets_tests/test_dagster_guards.py.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import dagster as dg
from dagster._core.definitions.data_version import DATA_VERSION_TAG

from lab_assets.runtime.latest_events import latest_tags


def last_data_version(instance: dg.DagsterInstance, asset: str, partition: str | None = None) -> str | None:
    """The data version of the asset's (partition's) latest observation, None if never observed."""
    records = instance.fetch_observations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset), asset_partitions=[partition] if partition else None),
        limit=1,
    ).records
    if not records:
        return None
    return (records[0].event_log_entry.tags or {}).get(DATA_VERSION_TAG)


def last_data_versions(instance: dg.DagsterInstance, asset: str) -> dict[str, str]:
    """{partition: data version of its latest observation} for every partition of the asset
    whose latest observation has one."""
    return latest_tags(instance, asset, DATA_VERSION_TAG, observed=True)


def observe_if_changed(
    instance: dg.DagsterInstance,
    asset: str,
    version: str,
    partition: str | None = None,
    metadata: Callable[[], Mapping[str, Any]] | None = None,
) -> bool:
    """Record an observation of `asset` (`partition`) with data version `version`, unless its last
    observation already has that version. `metadata` is called only when one is recorded. Returns
    whether one was recorded."""
    if last_data_version(instance, asset, partition) == version:
        return False
    observe(instance, asset, version, partition, metadata)
    return True


def observe(
    instance: dg.DagsterInstance,
    asset: str,
    version: str,
    partition: str | None = None,
    metadata: Callable[[], Mapping[str, Any]] | None = None,
) -> None:
    """Record an observation of `asset` (`partition`) with data version `version`."""
    instance.report_runless_asset_event(
        dg.AssetObservation(
            asset_key=dg.AssetKey(asset),
            partition=partition,
            tags={DATA_VERSION_TAG: version},
            metadata=dict(metadata()) if metadata else None,
        )
    )
