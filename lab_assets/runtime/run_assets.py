"""The asset keys a run materializes, read from its own record in run storage; and a job of
exactly some assets, whose runs' plans name them.

A run that selects assets (a backfill's run of the implicit asset job, a job launched with an
`asset_selection`) carries them in `DagsterRun.asset_selection`; a run of a whole asset job
carries an empty selection, and what it materializes is its execution plan's: the plan snapshot
stored with the run (`DagsterInstance.get_execution_plan_snapshot`, not marked public), whose
`asset_selection` is every asset output of the steps it executes. Snapshots are content
addressed (the id is a digest of the plan), so one read per distinct plan serves a process.
"""

from __future__ import annotations

import dagster as dg

_PLANNED: dict[str, frozenset[dg.AssetKey]] = {}  # execution plan snapshot id -> its assets
_MOST = 512  # distinct plans remembered (a plan per job and selection: a few in practice)


def run_assets(instance: dg.DagsterInstance, run: dg.DagsterRun) -> frozenset[dg.AssetKey]:
    """What `run` materializes (empty: a run that materializes no asset, or has no plan stored)."""
    if run.asset_selection:
        return frozenset(run.asset_selection)
    snapshot_id = run.execution_plan_snapshot_id
    if snapshot_id is None:
        return frozenset()
    if snapshot_id not in _PLANNED:
        if len(_PLANNED) >= _MOST:
            _PLANNED.clear()
        _PLANNED[snapshot_id] = frozenset(instance.get_execution_plan_snapshot(snapshot_id).asset_selection)
    return _PLANNED[snapshot_id]


def job_of(job: dg.JobDefinition, keys: frozenset[dg.AssetKey]) -> dg.JobDefinition:
    """`job` with exactly `keys` (of a multi-asset: those outputs alone), through
    `JobDefinition.get_subset` (not marked public). A caller keeps it: an `asset_selection` given to
    `execute_in_process` builds this again, with the parent job's snapshot, in every run. Its runs
    carry no `asset_selection`; their plan names `keys` (`run_assets`)."""
    return job.get_subset(asset_selection=set(keys)) if keys else job
