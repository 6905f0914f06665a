"""Runs on this machine: each run is one in-process Dagster run against the project's instance,
so it shows up in the UI exactly as if launched there (run, logs, materializations, lineage).

Runs are spread over a pool of worker processes, one per core, each single-threaded: sweeps are
many independent cells, so process-level parallelism keeps every core busy without BLAS
oversubscription. The warm workers (`preload.warm_workers`) live as long as the target or the
command that started them, and each worker is warmed once (imports, numba's cache), not per run.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Sequence
from concurrent.futures import as_completed
from dataclasses import replace
from functools import cache

from dagster import AssetKey, DagsterRunStatus, JobDefinition

from lab_assets.core.warm_workers import WarmWorkers, interrupted
from lab_assets.defs import inflight
from lab_assets.defs.failures import root_cause
from lab_assets.defs.jobs import job_name
from lab_assets.defs.work import Run, remaining
from lab_assets.runner.preload import definitions, warm_workers
from lab_assets.runner.run import FAILED, INTERRUPTED, MATERIALIZED, WAITED, Interrupted, Outcome, name
from lab_assets.runtime.instance import get_instance
from lab_assets.runtime.orphans import owner
from lab_assets.runtime.run_assets import job_of

# The run's full event log is in the instance (`lab logs <run>`, the UI); the terminal gets one
# line per failure from the caller, never Dagster's own step-failure traces (logged at ERROR).
QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
# Error classes of a run that Ctrl-C stopped (Dagster catches the interrupt and fails the run).
INTERRUPT_ERRORS = {"KeyboardInterrupt", "DagsterExecutionInterruptedError"}


def _errors(event) -> list:
    """The serialized errors a failure event carries (a step's, or the run's own)."""
    data = event.event_specific_data
    return [
        e
        for e in (getattr(data, "error", None), getattr(data, "first_step_failure_event", None))
        if e is not None and hasattr(e, "cls_name")
    ]


def _was_interrupted(result) -> bool:
    for event in result.all_events:
        for error in _errors(event):
            while error is not None:
                if error.cls_name in INTERRUPT_ERRORS:
                    return True
                error = error.cause
    return False


def execute_run(run: Run, tags: dict[str, str]) -> Outcome:
    """One Dagster run of one partition, in this process, unless another command has the same
    run in flight (defs/inflight.py): then its run is waited for (WAITED), or, if it fails or is
    stopped, this one runs after all. Ctrl-C during the run: Dagster fails the run; the outcome
    says INTERRUPTED."""
    start, instance, kind, partition = time.perf_counter(), get_instance(), run.job, name(run.partition) or None
    while True:
        other = inflight.other_run(instance, job_name(run.job), partition, tags, assets=run.assets)
        if interrupted():  # Ctrl-C while idle or looking: start nothing more
            return Outcome(kind, name(run.partition), INTERRUPTED, "interrupted before it started")
        if other is None:
            outcome = _execute(run, tags)
            other_id = inflight.elsewhere(outcome.why) if outcome.status == FAILED else None
            if other_id is None:
                return replace(outcome, job=kind)  # counted as what was asked for (a rest of it: see below)
        else:
            other_id = other.dagster_run.run_id
        done = inflight.wait(instance, other_id, stop=interrupted)
        if done is not None and done.status == DagsterRunStatus.SUCCESS:
            rest = remaining(run, inflight.computed(instance, done))
            if rest is None:
                return Outcome(
                    kind,
                    name(run.partition),
                    WAITED,
                    f"computed by run {other_id[:8]} of another command",
                    time.perf_counter() - start,
                    other_id,
                )
            run = rest  # it computed part of this run: the rest is still to do


@cache
def _job(job: str, assets: tuple[str, ...]) -> JobDefinition:
    """The job of exactly the run's assets (a cell whose embedding is fresh runs its metrics step
    alone), built once a process: 10-15 ms of a trivial cell's run when built per run."""
    return job_of(definitions().resolve_job_def(job_name(job)), frozenset(AssetKey(a) for a in assets))


def _execute(run: Run, tags: dict[str, str]) -> Outcome:
    start = time.perf_counter()
    result = _job(run.job, run.assets).execute_in_process(
        instance=get_instance(),
        partition_key=run.partition,
        run_config=QUIET,
        tags={**tags, **run.tags, inflight.OWNER_TAG: owner()},
        raise_on_error=False,
    )
    failures = [e for e in result.all_events if e.is_step_failure]
    errors = [root_cause(e.step_failure_data.error) for e in failures]
    status = MATERIALIZED if result.success else FAILED
    if not result.success and _was_interrupted(result):
        status, errors = INTERRUPTED, ["interrupted"]
    steps = ",".join(dict.fromkeys(e.step_key for e in failures if e.step_key))
    return Outcome(
        run.job, name(run.partition), status, "\n".join(errors), time.perf_counter() - start, result.run_id, steps
    )


class LocalTarget:
    """A `Target`: the warm `pool` given (its owner closes it), else `preload.warm_workers(workers)`:
    processes started here and closed on exit, or this process when `workers` <= 1."""

    def __init__(self, workers: int, pool: WarmWorkers | None = None):
        self._own = pool is None and workers > 1
        self.pool = warm_workers(workers) if self._own else pool

    def __enter__(self) -> LocalTarget:
        return self

    def __exit__(self, *exc) -> None:
        if self._own:
            self.pool.close()

    def execute(self, runs: Sequence[Run], tags: dict[str, str], on_done: Callable[[Outcome], None]) -> list[Outcome]:
        outcomes: list[Outcome] = []
        if self.pool is None:
            for r in runs:
                outcomes.append(execute_run(r, tags))
                on_done(outcomes[-1])
                if outcomes[-1].status == INTERRUPTED:  # Dagster swallowed the KeyboardInterrupt
                    raise Interrupted(outcomes)
            return outcomes
        futures = self.pool.submit_all([(execute_run, (r, tags), r.affinity) for r in runs])
        try:
            for f in as_completed(futures):
                outcomes.append(f.result())
                on_done(outcomes[-1])
        except KeyboardInterrupt:
            outcomes += self._stop(futures, outcomes)
            raise Interrupted(outcomes) from None
        return outcomes

    def _stop(self, futures, seen: list[Outcome]) -> list[Outcome]:
        """Ctrl-C: cancel the runs not started, interrupt the running ones (a terminal's Ctrl-C
        reaches the workers already; a SIGINT sent to this process alone does not), and wait for
        them, so that Dagster records them as failed and no worker outlives the command."""
        for f in futures:
            f.cancel()
        self.pool.signal(signal.SIGINT)
        late = []
        for f in futures:
            while not f.cancelled():
                try:
                    outcome = f.result()
                except KeyboardInterrupt:  # another Ctrl-C while the runs wind down: keep waiting
                    continue
                except Exception:
                    break
                if outcome not in seen:
                    late.append(outcome)
                break
        return late
