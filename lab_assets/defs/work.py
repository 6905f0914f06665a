"""The work to materialize, as ordered phases of runs, derived in one place: `sweep_work` from a
sweep's plan, `report_work` for a sweep's report alone, `Work.single` for the study loop's next
run (`study_loop.advance`).

Whatever executes it gets the same description: the runner (lab_assets/runner: worker processes
on this machine, or a webserver's queue, which on a cluster whose instance uses K8sRunLauncher
is one Kubernetes Job per run) waits for each phase before the next; the daemon gets it as the
requests a sensor returns (`requests`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, replace

import dagster as dg

from lab_assets.core import keys
from lab_assets.core.k8s_resources import k8s_tags
from lab_assets.defs.freshness import FRESH, MISSING, SweepPlan
from lab_assets.defs.inflight import command_tags
from lab_assets.defs.jobs import CELLS, CELLS_WITH_DATA, DATASETS, METRIC_TABLE, REPORT, job_name
from lab_assets.dr.sweep import Sweep
from lab_assets.runtime.backfills import backfill_request, partition_subset

SWEEP_TAG = keys.tag("sweep")
UNCHANGED = "unchanged since its last materialization"
DATA_ASSETS = ("raw_dataset", "dataset")


@dataclass(frozen=True)
class Run:
    """One run: one partition of one job (a kind from defs/jobs.py)."""

    job: str
    partition: str | dg.MultiPartitionKey | None
    tags: Mapping[str, str] = field(default_factory=dict)
    assets: tuple[str, ...] = ()  # what a backfill requests of this partition
    needs: tuple[str, str] | None = None  # (job, partition) of an earlier run it reads: skipped if that one failed
    run_key: str | None = None  # makes a repeated sensor request launch once
    affinity: str | None = None  # the cell's method: its runs go to a worker that ran one (`WarmWorkers.submit`)


@dataclass(frozen=True)
class Fresh:
    """A partition the plan found up to date: reported, not run."""

    job: str
    partition: str
    why: str = UNCHANGED


@dataclass(frozen=True)
class Phase:
    label: str  # what progress displays call it
    runs: tuple[Run, ...]
    fresh: tuple[Fresh, ...] = ()
    in_order: bool = False  # each run reads the one before it (the report reads the metric table)
    recheck: bool = False  # derived again from a new plan when an earlier phase ran anything


@dataclass(frozen=True)
class Work:
    phases: tuple[Phase, ...]
    tags: Mapping[str, str] = field(default_factory=dict)  # on every run (and on a backfill)
    # The same derivation from a new plan; phases marked `recheck` are taken from it.
    recheck: Callable[[], Work] | None = None

    @staticmethod
    def single(run: Run, tags: Mapping[str, str] | None = None) -> Work:
        return Work((Phase(run.job, (run,)),), tags or {})

    @property
    def runs(self) -> list[Run]:
        return [r for p in self.phases for r in p.runs]


def _tables(sweep: Sweep, due: bool, table_due: bool = True) -> Phase:
    """The consolidated metric table (unless `table_due` is False), then the sweep's report (it
    reads the table)."""
    table, report = (METRIC_TABLE, None), (REPORT, sweep.name)
    if not due:
        return Phase("report", (), (Fresh(*table), Fresh(*report)))
    if not table_due:
        return Phase("report", (Run(*report, assets=("report",)),), (Fresh(*table),))
    runs = (Run(*table, assets=("metric_table",)), Run(*report, assets=("report",), needs=table))
    return Phase("report", runs, in_order=True)


def sweep_work(plan: SweepPlan, recheck: Callable[[], SweepPlan] | None = None) -> Work:
    """Exactly the plan's missing or stale partitions, datasets before the cells that read them,
    then the tables they feed. `recheck`: a new plan, taken after the datasets ran (a dataset
    re-materialized with unchanged content leaves its cells fresh)."""
    sweep = plan.sweep
    # Only trainable methods have a `model`: a backfill counts a requested partition that its
    # run skips as failed.
    trainable = {m.key for m in sweep.methods if m.entry.trainable}
    resources = {m.key: k8s_tags(m.resources) for m in sweep.methods}
    methods = {m.key: m for m in sweep.methods}
    # A dataset is partitioned by cell (defs/partitions.py). A new cell's dataset partition is
    # computed in the cell's own run; a stale or damaged one first, in a run of its own, so that
    # one re-materialized unchanged leaves its cells fresh (the cells phase is planned again).
    new_data = {c for c, s in plan.pending_datasets.items() if s.status == MISSING}
    datasets = Phase(
        "datasets",
        tuple(
            Run(DATASETS, keys.cell_key(d, m), assets=DATA_ASSETS)
            for d, m in plan.pending_datasets
            if (d, m) not in new_data
        ),
        tuple(Fresh(DATASETS, d) for d, s in plan.datasets.items() if s.status == FRESH),
    )

    def cell_run(c) -> Run:
        # A cell whose embedding is fresh runs its metrics step alone: nothing upstream is recomputed.
        if set(c.assets) == {"metrics"}:
            assets = ("metrics",)
        else:
            assets = ("model", "embedding", "metrics") if c.method in trainable else ("embedding", "metrics")
        method = methods[c.method].method
        if (c.data, c.method) in new_data:
            return Run(CELLS_WITH_DATA, c.partition, resources[c.method], DATA_ASSETS + assets, affinity=method)
        return Run(CELLS, c.partition, resources[c.method], assets, needs=(DATASETS, c.partition), affinity=method)

    cells = Phase(
        "cells",
        # Slow methods first: the sweep's last minutes are not one long cell on one core.
        tuple(cell_run(c) for c in sorted(plan.pending_cells(), key=lambda c: not methods[c.method].entry.slow)),
        tuple(Fresh(CELLS, c.partition) for c in plan.cells if c.status == FRESH),
        recheck=True,
    )
    ran = bool(datasets.runs or cells.runs)
    table_due = ran or plan.metric_table.status != FRESH
    return Work(
        (datasets, cells, _tables(sweep, ran or plan.report.status != FRESH, table_due)),
        # The command's tags: a run of another command in flight for the same partition is waited
        # for, not repeated (defs/inflight.py).
        {SWEEP_TAG: sweep.name, **command_tags(plan.planned_at)},
        None if recheck is None else lambda: sweep_work(recheck()),
    )


def remaining(run: Run, computed: Collection[str]) -> Run | None:
    """`run` once another command's run has computed the assets named `computed` of its
    partition: None when nothing is left; a new cell's run whose dataset was computed becomes the
    cell's own run; any other partial overlap leaves the whole run to do."""
    left = [a for a in run.assets if a not in computed]
    if not left:
        return None
    if run.job == CELLS_WITH_DATA and not set(left) & set(DATA_ASSETS):
        return replace(run, job=CELLS, assets=tuple(left))
    return run


def report_work(sweep: Sweep) -> Work:
    """The sweep's report, whatever its status (`lab report`)."""
    return Work((_tables(sweep, True),), {SWEEP_TAG: sweep.name})


def requests(work: Work, asset_graph=None) -> list[dg.RunRequest]:
    """The work for the daemon, as a sensor's run requests. One run is one request (its run key
    makes a repeated request launch once); more runs are one backfill of their assets'
    partitions (of `asset_graph`: the sensor's `context.repository_def.asset_graph`), which the
    daemon runs in the asset graph's order, as the phases say."""
    runs = work.runs
    if len(runs) == 1:
        (run,) = runs
        return [
            dg.RunRequest(
                job_name=job_name(run.job),
                partition_key=run.partition,
                run_key=run.run_key,
                tags={**work.tags, **run.tags},
            )
        ]
    wanted = {(a, r.partition) for r in runs for a in r.assets}
    if not wanted:
        return []
    return [backfill_request(partition_subset(wanted, asset_graph), work.tags)]
