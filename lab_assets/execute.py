"""Materialize a sweep: exactly the missing or stale partitions, as real Dagster runs.

Each partition is one in-process Dagster run against the project's instance, so it shows up in
the UI exactly as if launched there (run, logs, materializations, lineage). Runs are spread over
a pool of worker processes, one per core, each single-threaded: sweeps are many independent
cells, so process-level parallelism keeps every core busy without BLAS oversubscription.
Datasets go first (once per data key), then cells, then the metric table and the report.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from functools import cache

from lab_assets import keystore
from lab_assets.plan import FRESH, SweepPlan, make_plan
from lab_assets.sweep import Sweep


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


@cache
def _defs():
    from lab_assets.definitions import defs

    return defs


def _partition_key(partition: str):
    import dagster as dg

    if "|" in partition:
        data, method = partition.split("|")
        return dg.MultiPartitionKey({"data": data, "method": method})
    return partition


def execute_partition(job: str, partition: str | None) -> Outcome:
    """One Dagster run of `job` for one partition (None: unpartitioned), in this process."""
    from lab_assets.instance import get_instance

    start = time.perf_counter()
    result = _defs().resolve_job_def(job).execute_in_process(
        instance=get_instance(),
        partition_key=_partition_key(partition) if partition else None,
        raise_on_error=False,
    )
    errors = [
        e.step_failure_data.error.message.strip()
        for e in result.all_events
        if e.is_step_failure and e.step_failure_data.error is not None
    ]
    return Outcome(job, partition or "", result.success, time.perf_counter() - start, result.run_id, "\n".join(errors))


def _init_worker() -> None:
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)


def run_partitions(
    job: str, partitions: list[str], workers: int, on_done: Callable[[Outcome], None]
) -> list[Outcome]:
    if workers <= 1 or len(partitions) <= 1:
        outcomes = []
        for p in partitions:
            outcomes.append(execute_partition(job, p))
            on_done(outcomes[-1])
        return outcomes
    # spawn, not fork: the parent holds SQLite connections and threads that must not be copied.
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(min(workers, len(partitions)), mp_context=ctx, initializer=_init_worker) as pool:
        futures = [pool.submit(execute_partition, job, p) for p in partitions]
        outcomes = []
        for f in as_completed(futures):
            outcomes.append(f.result())
            on_done(outcomes[-1])
    return outcomes


def register(sweep: Sweep) -> None:
    """Record what the sweep's keys mean, add them to Dagster, and observe their specs."""
    from lab_assets.instance import get_instance

    instance = get_instance()
    keystore.save_sweep(sweep)
    for dim, keys in (("data", [d.key for d in sweep.data]), ("method", [m.key for m in sweep.methods]), ("sweep", [sweep.name])):
        existing = set(instance.get_dynamic_partitions(dim))
        new = [k for k in keys if k not in existing]
        if new:
            instance.add_dynamic_partitions(dim, new)
    for spec in ("data_spec", "method_spec", "metric_spec"):
        outcome = execute_partition(f"observe_{spec}", None)
        if not outcome.ok:
            raise RuntimeError(f"observing {spec} failed (run {outcome.run_id}): {outcome.error}")


def default_workers() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def run_sweep(
    sweep: Sweep,
    workers: int | None = None,
    progress: Callable[[str, int], Callable[[Outcome], None]] | None = None,
) -> SweepResult:
    """Materialize the sweep's missing or stale partitions. `progress(label, total)` returns a
    callback invoked once per finished run."""
    from lab_assets.instance import get_instance

    start = time.perf_counter()
    workers = workers or default_workers()
    progress = progress or (lambda label, total: lambda outcome: None)
    instance, defs = get_instance(), _defs()
    register(sweep)
    before = make_plan(sweep, instance, defs)
    result = SweepResult(before)

    data = before.pending_data()
    result.outcomes += run_partitions("datasets", data, workers, progress("datasets", len(data)))
    failed_data = {o.partition for o in result.failed}

    # Plan again: a re-materialized dataset whose content did not change leaves its cells fresh.
    cells = [c for c in make_plan(sweep, instance, defs).pending_cells()]
    result.skipped = [c.partition for c in cells if c.data in failed_data]
    todo = [c.partition for c in cells if c.data not in failed_data]
    result.outcomes += run_partitions("cells", todo, workers, progress("cells", len(todo)))

    if todo or result.outcomes or before.report.status != FRESH:
        tick = progress("report", 2)
        for job, partition in (("metric_table", None), ("report", sweep.name)):
            result.outcomes.append(execute_partition(job, partition))
            tick(result.outcomes[-1])
    result.seconds = time.perf_counter() - start
    return result


def materialize_report(sweep: Sweep) -> list[Outcome]:
    register(sweep)
    return [execute_partition("metric_table", None), execute_partition("report", sweep.name)]


def iter_lines(outcomes: Iterable[Outcome]) -> Iterable[str]:
    for o in outcomes:
        if not o.ok:
            first = o.error.splitlines()[0] if o.error else "failed (see the run's logs)"
            yield f"FAILED {o.job} {o.partition}: {first}  [run {o.run_id}]"
