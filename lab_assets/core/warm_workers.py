"""Warm worker processes: the one mechanism behind `lab sweep run`'s workers
(`runner/preload.warm_workers`), the UI's run launcher (`runtime/launcher.py`) and the warm
service (`runner/warm_service_process.py`).

- Warm-up: each worker calls `warm` once, before its first run (what a process's first run would
  load on the way: `runner/preload.warm`). Warming is an optimisation: whatever fails there fails
  again, and is reported, in the run that needs it.
- Start: spawned, or forked where the caller asks and no other thread runs (`start_method`): a
  parent holding threads, SQLite connections or an instance must not be copied. A parent that
  will fork loaded workers prepares for it before it loads anything (`prepare_to_fork`).
- Single-threaded: `SINGLE_THREADED` is in each worker's environment before it starts, so that
  NumPy, BLAS and numba size their pools for one core (process-level parallelism).
- Retirement: with `code`, a stamp of the sources they loaded (`CodeWatch`), workers that loaded
  code since edited finish their runs and are replaced before the next run starts: an edit is
  never run by code loaded before it.
- Isolation: each worker is its own one-process executor, so a worker that dies (out of memory, a
  crash in native code) fails its own run only and is replaced; a run goes to an idle worker, or
  waits for the first one to free (one queue, as one shared executor would have).

Standard library only: `lab sweep run` starts its workers before it imports Dagster.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import signal
import threading
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from lab_assets.core import gc_thresholds
from lab_assets.core.fast_exit import end_without_teardown
from lab_assets.core.threads import SINGLE_THREADED

# Work estimated below this (its steps' recorded seconds, RUN_SECONDS a run) runs in the calling
# process: spread over workers it would wait for their warm-up (~5 CPU-s each, issue 44), which
# costs more than it saves (`runner/sweeps.small_enough_here`, `runner/commands.route_sweep_run`).
HERE_SECONDS = 5.0
RUN_SECONDS = 0.15  # a run's own cost beside its step's recorded seconds (Dagster's floor and ours)


def default_workers() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def running_threads() -> list[str]:
    """Threads other than this one: a fork would copy their locks held."""
    return [t.name for t in threading.enumerate() if t is not threading.main_thread()]


def start_method(fork: bool) -> str:
    return "fork" if fork and not running_threads() else "spawn"


def prepare_to_fork() -> None:
    """Before a process that will fork workers loads anything: its libraries then load as the
    workers need them. numba's default (OpenMP) threading layer kills with SIGTERM a forked child
    that runs a parallel kernel once the parent has ("fork() called from a process already using
    GNU OpenMP"); its workqueue layer survives a fork, and with one thread the counts are the same."""
    os.environ.update(SINGLE_THREADED)
    os.environ["NUMBA_THREADING_LAYER"] = "workqueue"


def freeze_loaded() -> None:
    """What is loaded now stays out of forked children's garbage collections: its pages stay shared."""
    gc.collect()
    gc.freeze()


class CodeWatch:
    """What warm processes loaded, as `stamp()` describes it (source stamps: core/source_stamps.py);
    `seen`: the stamp they loaded, if taken before (default: now)."""

    def __init__(self, stamp: Callable[[], object], seen: object = None):
        self._stamp, self._seen = stamp, stamp() if seen is None else seen

    def changed(self) -> bool:
        return self._stamp() != self._seen

    def renewed(self) -> bool:
        """Whether it changed since the last look; the current stamp is the new reference."""
        now = self._stamp()
        changed, self._seen = now != self._seen, now
        return changed


_interrupted = False  # this worker saw SIGINT while idle: it starts no further run


def interrupted() -> bool:
    return _interrupted


def _sigint(signum, frame) -> None:
    """A worker's SIGINT outside a Dagster run (Dagster handles it inside one): no traceback from
    an idle worker; it starts nothing more (`interrupted`)."""
    global _interrupted
    _interrupted = True


def _init(warm: Callable[[], None] | None) -> None:
    signal.signal(signal.SIGINT, _sigint)
    # Ending a pool waits for every worker to end. Status 0: an executor never reads it (a worker
    # lost mid-run is told by its run's BrokenProcessPool).
    end_without_teardown(0)
    gc_thresholds.raise_for_a_large_stack()
    if warm is not None:
        try:
            warm()
        except Exception:  # noqa: BLE001 - an optimisation (see the module's docstring)
            pass


class WarmWorkers:
    """`size` single-threaded worker processes, all started now, each warmed by `warm` (a
    module-level function: it reaches a spawned worker by name); `fork`: forked from this process
    if it runs no other thread; `code`: a stamp function, workers are retired when it changes."""

    def __init__(
        self,
        size: int,
        warm: Callable[[], None] | None = None,
        fork: bool = False,
        code: Callable[[], object] | None = None,
    ):
        self._size, self._warm = size, warm
        self._context = multiprocessing.get_context(start_method(fork))
        self._code = CodeWatch(code) if code is not None else None
        self._lock = threading.Lock()
        self._idle: list[ProcessPoolExecutor] = []
        self._busy: set[ProcessPoolExecutor] = set()
        # Runs not started, by affinity (None: any worker), in the order their affinities came.
        self._pending: dict[str | None, deque[tuple[Future, Callable, tuple]]] = {}
        self._ran: dict[ProcessPoolExecutor, set[str | None]] = {}  # the affinities each worker has run
        self._closed = False
        self.used = False  # a run was submitted: closing waits for the runs instead of ending the workers
        with self._lock:
            self._fill()
        self._context = multiprocessing.get_context("spawn")

    def __enter__(self) -> WarmWorkers:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def submit(self, fn: Callable, *args, affinity: str | None = None) -> Future:
        """`fn(*args)` on the first idle worker; the future is the run's (`submit_all`)."""
        return self.submit_all([(fn, args, affinity)])[0]

    def submit_all(self, calls: Sequence[tuple[Callable, tuple, str | None]]) -> list[Future]:
        """Each `(fn, args, affinity)` on the first idle worker; the futures are the runs'. Runs of
        one affinity go to a worker that has run one before while any is left for it (a method's
        library loads or compiles its numba code once a process: UMAP's first fit ~3 s with its
        cache, ~12 s on a machine's first); an idle worker with none of its own takes an affinity
        no other worker has, else any run. All are queued before any is handed out: handed out as
        they came, a sweep's first two runs (two UMAP cells) went to both idle workers, and both
        compiled UMAP."""
        futures: list[Future] = []
        with self._lock:
            self.used = True
            for fn, args, affinity in calls:
                futures.append(Future())
                self._pending.setdefault(affinity, deque()).append((futures[-1], fn, args))
        self._dispatch()
        return futures

    def _next(self, worker: ProcessPoolExecutor) -> tuple[Future, Callable, tuple]:
        """The pending run `worker` takes (under the lock; something is pending)."""
        mine = self._ran.setdefault(worker, set())
        others = set().union(*(ran for w, ran in self._ran.items() if w is not worker))
        own = [k for k in self._pending if k in mine]
        key = own[0] if own else next((k for k in self._pending if k not in others), next(iter(self._pending)))
        if key is not None:
            mine.add(key)
        queue = self._pending[key]
        item = queue.popleft()
        if not queue:
            del self._pending[key]
        return item

    def processes(self) -> list[multiprocessing.Process]:
        with self._lock:
            return [p for w in (*self._idle, *self._busy) for p in getattr(w, "_processes", {}).values()]

    def signal(self, signum: int) -> None:
        for process in self.processes():
            try:
                os.kill(process.pid, signum)
            except (ProcessLookupError, AttributeError, TypeError):
                pass

    def close(self, wait: bool = True) -> None:
        """Cancel the runs not started and wait for the others (`wait`), or, if none was ever
        submitted (nothing to do, or the command failed first), end the workers now rather than
        after their warm-up."""
        with self._lock:
            self._closed = True
            pending, self._pending = [item for queue in self._pending.values() for item in queue], {}
        for future, _, _ in pending:
            if future.cancel():
                future.set_running_or_notify_cancel()  # tells as_completed and wait
        if not self.used:
            # SIGKILL, not SIGTERM: a worker still between fork and exec carries this process's
            # handler, which a Dagster run here sets to SIGINT's, so a SIGTERM there is swallowed
            # and the worker warms up in full (seen under load). A never-used worker has opened
            # nothing: no run, no instance, no W&B service.
            self.signal(signal.SIGKILL)
        with self._lock:
            workers, self._idle, self._busy = [*self._idle, *self._busy], [], set()
        for worker in workers:
            worker.shutdown(wait=wait, cancel_futures=True)

    def _fill(self) -> None:
        """Start workers up to `size` (under the lock), with `SINGLE_THREADED` in the environment
        they start with: set for the start only, since this process's own pools are its own."""
        missing = self._size - len(self._idle) - len(self._busy)
        if missing <= 0:
            return
        # Forked, the second worker on start while the first one's executor threads run: they touch
        # only that executor's queues, which no other worker uses. A later start (a dead worker's
        # replacement) spawns: this process may hold connections and threads by then.
        saved = {k: os.environ.get(k) for k in SINGLE_THREADED}
        os.environ.update(SINGLE_THREADED)
        try:
            for _ in range(missing):
                worker = ProcessPoolExecutor(1, mp_context=self._context, initializer=_init, initargs=(self._warm,))
                worker.submit(int)  # starts its process now (an executor starts it at the first run)
                self._idle.append(worker)
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    def _dispatch(self) -> None:
        started = []
        with self._lock:
            if self._closed:
                return
            if self._code is not None and self._pending and self._code.renewed():
                for worker in self._idle + list(self._busy):
                    worker.shutdown(wait=False)  # each finishes the run it has, then exits
                self._idle, self._busy, self._ran = [], set(), {}
            self._fill()
            while self._pending and self._idle:
                future, fn, args = self._next(self._idle[0])
                if future.set_running_or_notify_cancel():  # False: cancelled while it waited
                    worker = self._idle.pop(0)
                    self._busy.add(worker)
                    started.append((worker, future, fn, args))
        for worker, future, fn, args in started:
            try:
                inner = worker.submit(fn, *args)
            except Exception as e:  # noqa: BLE001 - it died while idle, or was closed or retired meanwhile
                self._done(worker, future, error=e)
                continue
            inner.add_done_callback(lambda f, w=worker, o=future: self._done(w, o, f))

    def _done(
        self,
        worker: ProcessPoolExecutor,
        future: Future,
        inner: Future | None = None,
        error: BaseException | None = None,
    ) -> None:
        if inner is not None:
            error = RuntimeError("its worker was stopped before it started") if inner.cancelled() else inner.exception()
        with self._lock:
            if worker in self._busy:  # not retired or closed meanwhile
                self._busy.discard(worker)
                if isinstance(error, BrokenProcessPool):
                    worker.shutdown(wait=False)  # it died: replaced at the next dispatch
                    self._ran.pop(worker, None)
                else:
                    self._idle.append(worker)
        self._dispatch()  # the next run first, then the caller hears of this one
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(inner.result())
