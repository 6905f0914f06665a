"""A run launcher with warm workers: runs launched from the UI pay what `lab sweep run` pays.

Dagster's default launcher starts a fresh process per run, which imports dagster and the
definitions and compiles numba (UMAP) again: seconds per run, on a sweep of many small cells
more than the cells' compute. Here the daemon hands each run to one of a few long-lived
worker processes (one per allowed concurrent run, single-threaded like `lab sweep run`'s),
which execute it exactly as Dagster's own run worker does (`core_execute_run`): same events,
same run in the UI.

Edited code is never run stale: before each launch the launcher fingerprints the package's
source files and, if any changed, retires the warm workers (they finish their runs) and starts
fresh ones. A worker that dies takes only its own run with it (marked failed); the next launch
starts a fresh one. Cancelling from the UI interrupts the worker running that run.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

import dagster as dg
from dagster._core.launcher import CheckRunHealthResult, LaunchRunContext, RunLauncher, WorkerStatus
from dagster._serdes import ConfigurableClass, ConfigurableClassData

from lab_assets.core import keys
from lab_assets.core.fast_exit import end_without_teardown
from lab_assets.core.source_stamps import package_sources, plugin_sources
from lab_assets.core.threads import SINGLE_THREADED

WORKER_PID_TAG = keys.tag("worker_pid")


def code_stamps() -> tuple:
    """The package's sources and the lab's plugin modules: a change retires the warm workers."""
    return package_sources(), plugin_sources()


def _worker_init(env: dict[str, str]) -> None:
    os.environ.update(env)
    end_without_teardown(0)  # retiring a worker waits for it to end; its status is never read


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


def _spawn_worker() -> ProcessPoolExecutor:
    # spawn: the daemon holds threads and database connections that must not be forked.
    return ProcessPoolExecutor(
        1, mp_context=multiprocessing.get_context("spawn"), initializer=_worker_init, initargs=(SINGLE_THREADED,)
    )


class WarmWorkerRunLauncher(RunLauncher, ConfigurableClass):
    """`workers`: how many runs execute at once; match the run queue's `max_concurrent_runs`.

    Each worker is its own one-process executor, so a worker that dies (out of memory, a crash
    in native code) fails its own run only, not the runs of its neighbours."""

    def __init__(self, workers: int = 2, inst_data: ConfigurableClassData | None = None):
        self._size = workers
        self._inst_data = inst_data
        self._busy: dict[ProcessPoolExecutor, int] = {}  # each live worker -> its runs not yet done
        self._code_stamps: tuple = ()
        self._lock = threading.Lock()
        super().__init__()

    @property
    def inst_data(self) -> ConfigurableClassData | None:
        return self._inst_data

    @classmethod
    def config_type(cls) -> dict:
        return {"workers": dg.Field(int, is_required=False, default_value=2)}

    @classmethod
    def from_config_value(cls, inst_data, config_value) -> "WarmWorkerRunLauncher":
        return cls(inst_data=inst_data, **config_value)

    def _least_busy_worker(self) -> ProcessPoolExecutor:
        stamps = code_stamps()
        with self._lock:
            if stamps != self._code_stamps:
                for worker in self._busy:
                    worker.shutdown(wait=False)  # finishes the run it has, then exits
                self._busy, self._code_stamps = {}, stamps
            while len(self._busy) < self._size:
                self._busy[_spawn_worker()] = 0
            worker = min(self._busy, key=self._busy.__getitem__)
            self._busy[worker] += 1
            return worker

    def launch_run(self, context: LaunchRunContext) -> None:
        run_id = context.dagster_run.run_id
        worker = self._least_busy_worker()
        future = worker.submit(_execute, run_id)
        future.add_done_callback(lambda f: self._after(worker, run_id, f))

    def _after(self, worker: ProcessPoolExecutor, run_id: str, future: Future) -> None:
        error = RuntimeError("the daemon stopped before a worker started it") if future.cancelled() else future.exception()
        with self._lock:
            if worker in self._busy:  # not retired meanwhile
                self._busy[worker] -= 1
                if isinstance(error, BrokenProcessPool):
                    del self._busy[worker]  # it died: a fresh one replaces it at the next launch
                    worker.shutdown(wait=False)
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
            for worker in self._busy:
                worker.shutdown(wait=False, cancel_futures=True)
            self._busy = {}
