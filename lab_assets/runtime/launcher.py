"""A run launcher with warm workers: runs launched from the UI pay what `lab sweep run` pays.

Dagster's default launcher starts a fresh process per run, which imports dagster and the
definitions and compiles numba (UMAP) again: seconds per run, on a sweep of many small cells
more than the cells' compute. Here the daemon hands each run to one of a few long-lived
worker processes (one per allowed concurrent run, single-threaded like `lab sweep run`'s),
which execute it exactly as Dagster's own run worker does (`core_execute_run`): same events,
same run in the UI.

The workers are `core/warm_workers.py`'s, as `lab sweep run`'s: warmed by the function that
`warm_up` names (dagster.yaml: `runner/preload.warm`, named rather than imported, as dagster.yaml
names this class), retired when the package's sources change (before each run starts: an edit is
never run stale), one process per worker so that one that dies takes only its own run with it
(marked failed). Cancelling from the UI interrupts the worker running that run.
"""

from __future__ import annotations

import importlib
import os
import signal
import threading
from concurrent.futures import Future

import dagster as dg
from dagster._core.launcher import CheckRunHealthResult, LaunchRunContext, RunLauncher, WorkerStatus
from dagster._serdes import ConfigurableClass, ConfigurableClassData

from lab_assets.core import keys
from lab_assets.core.source_stamps import package_sources, plugin_sources
from lab_assets.core.warm_workers import WarmWorkers

WORKER_PID_TAG = keys.tag("worker_pid")


def code_stamps() -> tuple:
    """The package's sources and the lab's plugin modules: a change retires the warm workers."""
    return package_sources(), plugin_sources()


def _execute(run_id: str) -> None:
    """In a warm worker: what `dagster api execute_run` does with a run, minus the process start."""
    from dagster._core.events import EngineEventData
    from dagster._core.origin import JobPythonOrigin
    from dagster._grpc.impl import core_execute_run
    from dagster._utils.hosted_user_process import recon_job_from_origin

    instance = dg.DagsterInstance.get()  # DAGSTER_HOME came with the daemon's environment
    run = instance.get_run_by_id(run_id)
    origin = run.job_code_origin
    assert isinstance(origin, JobPythonOrigin), f"run {run_id} has no Python origin"
    instance.add_run_tags(run_id, {WORKER_PID_TAG: str(os.getpid())})
    instance.report_engine_event(
        f"Started in warm worker process {os.getpid()}.", run, EngineEventData.in_process(os.getpid())
    )
    for _ in core_execute_run(recon_job_from_origin(origin), run, instance, inject_env_vars=True):
        pass


def _function(name: str):
    """`module:function` -> the function."""
    module, _, function = name.partition(":")
    return getattr(importlib.import_module(module), function)


class WarmWorkerRunLauncher(RunLauncher, ConfigurableClass):
    """`workers`: how many runs execute at once; match the run queue's `max_concurrent_runs`.
    `warm_up`: `module:function` each worker calls once before its first run (none: no warm-up).
    The workers start at the first launch (the webserver, which only terminates runs, starts none)."""

    def __init__(self, workers: int = 2, warm_up: str | None = None, inst_data: ConfigurableClassData | None = None):
        self._size, self._warm_up = workers, warm_up
        self._inst_data = inst_data
        self._workers: WarmWorkers | None = None
        self._lock = threading.Lock()
        super().__init__()

    @property
    def inst_data(self) -> ConfigurableClassData | None:
        return self._inst_data

    @classmethod
    def config_type(cls) -> dict:
        return {
            "workers": dg.Field(int, is_required=False, default_value=2),
            "warm_up": dg.Field(dg.Noneable(str), is_required=False, default_value=None),
        }

    @classmethod
    def from_config_value(cls, inst_data, config_value) -> WarmWorkerRunLauncher:
        return cls(inst_data=inst_data, **config_value)

    def workers(self) -> WarmWorkers:
        with self._lock:
            if self._workers is None:
                warm = _function(self._warm_up) if self._warm_up else None
                self._workers = WarmWorkers(self._size, warm=warm, code=code_stamps)
            return self._workers

    def launch_run(self, context: LaunchRunContext) -> None:
        run_id = context.dagster_run.run_id
        self.workers().submit(_execute, run_id).add_done_callback(lambda f: self._after(run_id, f))

    def _after(self, run_id: str, future: Future) -> None:
        stopped = RuntimeError("the daemon stopped before a worker started it")
        error = stopped if future.cancelled() else future.exception()
        # A run whose worker died (or that failed outside Dagster's own error handling) must not
        # stay STARTED forever: fail it, with the reason.
        run = self._instance.get_run_by_id(run_id)
        if error is not None and run is not None and not run.is_finished:
            self._instance.report_run_failed(run, f"Warm worker failed: {type(error).__name__}: {error}")

    def _worker_pid(self, run: dg.DagsterRun) -> int | None:
        pid = run.tags.get(WORKER_PID_TAG)
        return int(pid) if pid else None

    def terminate(self, run_id: str) -> bool:
        # Called from the webserver, which does not own the pool: interrupt the worker by pid.
        run = self._instance.get_run_by_id(run_id)
        if run is None or run.is_finished or (pid := self._worker_pid(run)) is None:
            return False
        self._instance.report_run_canceling(run)
        try:
            os.kill(pid, signal.SIGINT)
        except ProcessLookupError:
            return False
        return True

    @property
    def supports_check_run_worker_health(self) -> bool:
        return True

    def check_run_worker_health(self, run: dg.DagsterRun) -> CheckRunHealthResult:
        pid = self._worker_pid(run)
        if pid is None:
            return CheckRunHealthResult(WorkerStatus.UNKNOWN, "not yet picked up by a worker")
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return CheckRunHealthResult(WorkerStatus.FAILED, f"worker process {pid} is gone")
        return CheckRunHealthResult(WorkerStatus.RUNNING)

    def dispose(self) -> None:
        with self._lock:
            workers, self._workers = self._workers, None
        if workers is not None:
            workers.close(wait=False)
