"""The worker processes of a local sweep, started before anything else.

A worker is a spawned Python that imports Dagster and the definitions, then pays what the first
cell run of a process pays (`preload.warm`: scikit-learn's neighbours, numba's cached kernels,
W&B's service): ~3 s of CPU each on the reference machine. `lab sweep run` starts them first,
so that this overlaps its own imports, registration and plan instead of following them
(BENCHMARKS.md, "Fixed costs"). This module (and what it imports) loads only the standard
library: the workers start within ~0.1 s of the command.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from concurrent.futures import ProcessPoolExecutor

from lab_assets.core.fast_exit import end_without_teardown
from lab_assets.core.threads import SINGLE_THREADED
from lab_assets.runner import preload


def default_workers() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


_interrupted = False  # this worker saw SIGINT while idle: it starts no further run


def interrupted() -> bool:
    return _interrupted


def _sigint(signum, frame) -> None:
    """A worker's SIGINT outside a Dagster run (Dagster handles it inside one): no traceback
    from an idle worker; it starts nothing more."""
    global _interrupted
    _interrupted = True


def _init() -> None:
    signal.signal(signal.SIGINT, _sigint)
    # The pool's shutdown waits for every worker to end. Status 0: the executor never reads it
    # (a worker lost mid-run is told by its missing result).
    end_without_teardown(0)
    preload.warm()


class WorkerPool:
    """`workers` single-threaded processes, each started now and warmed: spawned, or, with
    `fork`, forked from this process, which must then hold no thread, connection or instance
    yet (a command run by the warm service, cli/service.py: the workers start loaded)."""

    def __init__(self, workers: int, fork: bool = False):
        # Workers are single-threaded through the environment, set before they spawn.
        self._saved = {k: os.environ.get(k) for k in SINGLE_THREADED}
        os.environ.update(SINGLE_THREADED)
        # spawn unless asked: a parent that holds SQLite connections and threads must not be copied.
        context = multiprocessing.get_context("fork" if fork else "spawn")
        self.executor = ProcessPoolExecutor(workers, mp_context=context, initializer=_init)
        self.used = False  # a run was submitted: closing waits for the runs instead of ending the workers
        for _ in range(workers):  # the executor would spawn them one per submitted run, i.e. only once planned
            self.executor.submit(int)

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def submit(self, fn, *args):
        self.used = True
        return self.executor.submit(fn, *args)

    def processes(self) -> list[multiprocessing.Process]:
        return list(getattr(self.executor, "_processes", {}).values())

    def signal(self, signum: int) -> None:
        for process in self.processes():
            try:
                os.kill(process.pid, signum)
            except (ProcessLookupError, AttributeError):
                pass

    def close(self) -> None:
        """Wait for the submitted runs, or, if none was (nothing to do, or the command failed
        before running anything), end the workers now rather than after their warm-up."""
        if not self.used:
            self.signal(signal.SIGTERM)
        self.executor.shutdown(cancel_futures=True)
        for k, v in self._saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
