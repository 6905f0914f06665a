"""Materialize a sweep: exactly the missing or stale partitions, as real Dagster runs.

Each partition is one in-process Dagster run against the project's instance, so it shows up in
the UI exactly as if launched there (run, logs, materializations, lineage). Runs are spread over
a pool of worker processes, one per core, each single-threaded: sweeps are many independent
cells, so process-level parallelism keeps every core busy without BLAS oversubscription.
Datasets go first (once per data key), then cells, then the metric table and the report.
"""

from __future__ import annotations

import multiprocessing
import re
import os
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache

from lab_assets.dr import keystore
from lab_assets.runtime.instance import get_instance
from lab_assets.core.k8s_resources import k8s_tags
from lab_assets.defs.partitions import cell_key
from lab_assets.defs.plan import FRESH, SweepPlan, make_plan
from lab_assets.defs.register import register
from lab_assets.runner.submit import Submitter
from lab_assets.dr.sweep import Sweep
from lab_assets.core.threads import SINGLE_THREADED


@dataclass
class Outcome:
    job: str
    partition: str
    ok: bool
    seconds: float
    run_id: str = ""
    error: str = ""


@dataclass
class SweepResult:
    plan_before: SweepPlan
    outcomes: list[Outcome] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # cells whose dataset failed
    seconds: float = 0.0

    @property
    def failed(self) -> list[Outcome]:
        return [o for o in self.outcomes if not o.ok]

    def count(self, job: str) -> int:
        return sum(o.ok for o in self.outcomes if o.job == job)


# The run's full event log is in the instance (and the UI); the terminal gets errors only.
QUIET = {"loggers": {"console": {"config": {"log_level": "ERROR"}}}}


@cache
def _defs():
    from lab_assets.defs.definitions import defs

    return defs


def _partition_key(partition: str):
    return cell_key(*partition.split("|")) if "|" in partition else partition


def run_tags(job: str, partition: str | None) -> dict[str, str]:
    """A cell's run carries its method's resource request as dagster-k8s tags (lab_assets/core/k8s_resources.py),
    so the same run launched on a cluster lands on a node that has what it asked for."""
    if job != "cells" or not partition:
        return {}
    return k8s_tags(keystore.method_config(partition.split("|")[1]).resources)


def _root_cause(error) -> str:
    """The user's exception, not Dagster's wrapper around it."""
    if error is None:
        return "failed (see the run's logs)"
    while error.cause is not None:
        error = error.cause
    message = error.message.strip()
    if not error.cls_name:
        return message
    # Dagster's message usually starts with the class name already, sometimes fully qualified.
    message = re.sub(rf"^(?:[\w.]+\.)?{re.escape(error.cls_name)}: ", "", message)
    return f"{error.cls_name}: {message}"


def execute_partition(job: str, partition: str | None) -> Outcome:
    """One Dagster run for one partition (None: unpartitioned), in this process. `job` is
    "datasets", "cells", "metric_table" or "report" (the `materialize_<job>` job)."""
    start = time.perf_counter()
    result = _defs().resolve_job_def(f"materialize_{job}").execute_in_process(
        instance=get_instance(),
        partition_key=_partition_key(partition) if partition else None,
        run_config=QUIET,
        tags=run_tags(job, partition),
        raise_on_error=False,
    )
    errors = [_root_cause(e.step_failure_data.error) for e in result.all_events if e.is_step_failure]
    return Outcome(job, partition or "", result.success, time.perf_counter() - start, result.run_id, "\n".join(errors))


@contextmanager
def worker_pool(workers: int) -> Iterator[ProcessPoolExecutor | None]:
    """Worker processes kept for the whole sweep (imports and numba compilation are paid once
    per worker, not per phase); None means run in this process."""
    if workers <= 1:
        yield None
        return
    saved = {k: os.environ.get(k) for k in SINGLE_THREADED}
    os.environ.update(SINGLE_THREADED)
    # spawn, not fork: the parent holds SQLite connections and threads that must not be copied.
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))
    try:
        yield pool
    finally:
        pool.shutdown(cancel_futures=True)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def run_partitions(
    job: str, partitions: list[str], pool: "ProcessPoolExecutor | Submitter | None", on_done: Callable[[Outcome], None]
) -> list[Outcome]:
    if isinstance(pool, Submitter):
        return pool.run(job, partitions, on_done) if partitions else []
    outcomes = []
    if pool is None:
        for p in partitions:
            outcomes.append(execute_partition(job, p))
            on_done(outcomes[-1])
        return outcomes
    for f in as_completed([pool.submit(execute_partition, job, p) for p in partitions]):
        outcomes.append(f.result())
        on_done(outcomes[-1])
    return outcomes


def register_and_plan(sweep: Sweep) -> SweepPlan:
    instance = get_instance()
    register(instance, sweep)
    return make_plan(sweep, instance, _defs().resolve_asset_graph())


def default_workers() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@contextmanager
def _runner(workers: int, submit: str | None) -> Iterator["ProcessPoolExecutor | Submitter | None"]:
    if submit:
        yield Submitter(submit, run_tags)
    else:
        with worker_pool(workers) as pool:
            yield pool


def run_sweep(
    sweep: Sweep,
    workers: int | None = None,
    progress: Callable[[str, int], Callable[[Outcome], None]] | None = None,
    submit: str | None = None,
) -> SweepResult:
    """Materialize the sweep's missing or stale partitions. `progress(label, total)` returns a
    callback invoked once per finished run. `submit`: a Dagster webserver URL to launch the runs
    through (its run launcher and queue) instead of running them here."""
    start = time.perf_counter()
    workers = workers or default_workers()
    progress = progress or (lambda label, total: lambda outcome: None)
    instance, graph = get_instance(), _defs().resolve_asset_graph()
    before = register_and_plan(sweep)
    result = SweepResult(before)

    with _runner(min(workers, len(before.pending_cells())), submit) as pool:
        data = before.pending_data()
        result.outcomes += run_partitions("datasets", data, pool, progress("datasets", len(data)))
        failed_data = {o.partition for o in result.failed}

        # Plan again: a re-materialized dataset whose content did not change leaves its cells
        # fresh. Only then: one plan is a stale-status query per cell (~15 ms each).
        cells = make_plan(sweep, instance, graph).pending_cells() if data else before.pending_cells()
        result.skipped = [c.partition for c in cells if c.data in failed_data]
        todo = [c.partition for c in cells if c.data not in failed_data]
        result.outcomes += run_partitions("cells", todo, pool, progress("cells", len(todo)))

        if todo or result.outcomes or before.report.status != FRESH:
            tick = progress("report", 2)
            # The report needs the consolidated table first: two phases, one run each.
            reporter = pool if isinstance(pool, Submitter) else None
            for job, partition in (("metric_table", None), ("report", sweep.name)):
                result.outcomes += run_partitions(job, [partition], reporter, tick)
    result.seconds = time.perf_counter() - start
    return result


def materialize_report(sweep: Sweep) -> list[Outcome]:
    register_and_plan(sweep)
    return [execute_partition("metric_table", None), execute_partition("report", sweep.name)]


def iter_lines(outcomes: Iterable[Outcome]) -> Iterable[str]:
    for o in outcomes:
        if not o.ok:
            first = o.error.splitlines()[0] if o.error else "failed (see the run's logs)"
            yield f"FAILED {o.job} {o.partition}: {first}  [run {o.run_id}]"
