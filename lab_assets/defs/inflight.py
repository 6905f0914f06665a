"""One computation per partition at a time, across commands, from Dagster's run storage.

Two runs compete when they materialize the same partition (`dagster/partition`; or both none,
the unpartitioned metric table) of at least one common asset, whatever their jobs: a
`materialize_*` run of `lab sweep run`, a run of Dagster's implicit asset job that a UI or sensor
backfill launched, a run started from the UI's launchpad. A run's assets are its
`asset_selection`, else its job's (`runtime/run_assets.py`: the execution plan stored with it),
so runs that select a subset of a job compete only where the subsets meet.

A run yields to a competing run that another command has in flight (created earlier: a lower
storage id), or that another command finished after this one planned (`PLANNED_AT`): the runner
checks before it starts a run, and the run's first step checks again once its own run record
exists (`claim`), which closes the window between the runner's look and the run's creation: of
two runs created at once, the later one stops before computing anything (`ComputedElsewhere`).
The runner then waits for the other run and counts it. A run launched from the UI or by the
daemon carries no command tag and is checked the same way: the later of two competing backfill
and command runs fails at once, naming the run it deferred to (its partition is reported as in
flight elsewhere, not computed twice).

Overlap is enough to wait for a run in flight; once it has finished, what it did not compute is
computed after all (`work.remaining`: a new cell's run whose dataset a backfill's run
materialized goes on as the cell's own run), and a finished run counts only if it computed all
of this run's assets.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Callable, Collection, Mapping

import dagster as dg

from lab_assets.core import keys
from lab_assets.runtime.orphans import fail_orphans
from lab_assets.runtime.run_assets import run_assets

COMMAND_TAG = keys.tag("command")  # the command a run belongs to: never waits for its own runs
PLANNED_AT_TAG = keys.tag("planned_at")  # when that command's plan looked (epoch seconds)
OWNER_TAG = keys.tag("owner")  # `<host>:<pid>` of the process executing a local run
UNFINISHED = [
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
    dg.DagsterRunStatus.CANCELING,
]
POLL_SECONDS = 0.5
PARTITION_TAG = "dagster/partition"
# One query per look, newest runs of the partition first: an unfinished run older than this many
# newer ones of the same partition is not looked for. Unpartitioned runs (the metric table) have
# no tag to filter by: the look takes the newest in-flight or successful runs of any partition
# and keeps those without one.
RECENT = 16
RECENT_UNPARTITIONED = 64


class ComputedElsewhere(Exception):
    """This run's partition is computed by another command's run: it stopped before computing."""

    def __init__(self, what: str, run_id: str):
        super().__init__(f"{what} is computed by run {run_id} of another command; this run stopped before computing it")


def elsewhere(reason: str) -> str | None:
    """The run id in a `ComputedElsewhere` failure's reason (a run's root cause), else None."""
    found = re.match(r"ComputedElsewhere: .* is computed by run ([0-9a-f-]{36}) ", reason)
    return found and found[1]


def command_tags(planned_at: float) -> dict[str, str]:
    """Tags for every run of one command whose work comes from a plan taken at `planned_at`."""
    return {COMMAND_TAG: uuid.uuid4().hex[:12], PLANNED_AT_TAG: f"{planned_at:.3f}"}


def other_run(
    instance: dg.DagsterInstance,
    job: str,
    partition: str | None,
    tags: Mapping[str, str],
    run_id: str | None = None,
    assets: Collection[str | dg.AssetKey] = (),
) -> dg.RunRecord | None:
    """Another command's run competing with this one (the same partition, a common asset) that
    this one should wait for instead of computing: the oldest one in flight (created before run
    `run_id`, when given: ties go to the earlier run), else a successful one that ended after this
    command planned. This run's assets: run `run_id`'s own, else `assets`; with neither (a
    caller that names none), other runs of `job` compete, as before assets were compared."""
    statuses = [*UNFINISHED, dg.DagsterRunStatus.SUCCESS]
    if partition is None:
        found = [
            r
            for r in instance.get_run_records(dg.RunsFilter(statuses=statuses), limit=RECENT_UNPARTITIONED)
            if PARTITION_TAG not in r.dagster_run.tags
        ]
    else:
        found = instance.get_run_records(
            dg.RunsFilter(statuses=statuses, tags={PARTITION_TAG: partition}), limit=RECENT
        )
    me = next((r for r in found if r.dagster_run.run_id == run_id), None) or (
        instance.get_run_record_by_id(run_id) if run_id else None
    )
    mine = (
        run_assets(instance, me.dagster_run)
        if me is not None
        else frozenset(a if isinstance(a, dg.AssetKey) else dg.AssetKey(a) for a in assets)
    )
    command = tags.get(COMMAND_TAG)

    def competes(r: dg.RunRecord) -> bool:
        if r.dagster_run.run_id == run_id or (command is not None and r.dagster_run.tags.get(COMMAND_TAG) == command):
            return False
        return bool(mine & run_assets(instance, r.dagster_run)) if mine else r.dagster_run.job_name == job

    others = [r for r in found if competes(r)]
    flying = [r for r in others if r.dagster_run.status in UNFINISHED and (me is None or r.storage_id < me.storage_id)]
    if flying:
        return min(flying, key=lambda r: r.storage_id)
    if PLANNED_AT_TAG not in tags:
        return None
    planned_at = float(tags[PLANNED_AT_TAG])
    # Finished: only a run that computed all of this one's assets makes it unnecessary.
    return next(
        (
            r
            for r in others
            if r.dagster_run.status == dg.DagsterRunStatus.SUCCESS
            and (r.end_time or 0) > planned_at
            and mine <= run_assets(instance, r.dagster_run)
        ),
        None,
    )


def computed(instance: dg.DagsterInstance, run: dg.DagsterRun) -> frozenset[str]:
    """The names of the assets a (finished) run materializes: what waiting for it got."""
    return frozenset(key.to_user_string() for key in run_assets(instance, run))


def claim(context: dg.AssetExecutionContext) -> None:
    """The first step of a run: stop before computing if another command's competing run (the
    same partition, a common asset, any job) came first (the runner then waits for it)."""
    run = context.run
    partition = run.tags.get(PARTITION_TAG)
    other = other_run(context.instance, run.job_name, partition, run.tags, run.run_id)
    if other is not None:
        raise ComputedElsewhere(partition or run.job_name, other.dagster_run.run_id)


def wait(instance: dg.DagsterInstance, run_id: str, stop: Callable[[], bool]) -> dg.DagsterRun | None:
    """The run once it has finished (None: it was deleted, or `stop()` said to stop waiting). A
    local run whose process is gone is marked failed (its owner tag says which process), so
    nobody waits for it forever."""
    while True:
        run = instance.get_run_by_id(run_id)
        if run is None or run.is_finished or stop():
            return run if run is not None and run.is_finished else None
        fail_orphans(instance, [run], OWNER_TAG)
        time.sleep(POLL_SECONDS)
