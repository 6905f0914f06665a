"""The one warm-worker mechanism (core/warm_workers.py) with real processes: warmed once before
the first run, one queue over the workers, a dead worker fails its own run only and is replaced,
edited code retires the workers, and no fork while a thread runs. (The sweep's pool: test_pool.py;
the UI's launcher: test_launcher.py.)"""

import os
import signal
import subprocess
import sys
import time
from concurrent.futures.process import BrokenProcessPool

import pytest

from lab_assets.core.threads import SINGLE_THREADED
from lab_assets.core.warm_workers import WarmWorkers

WARMED = []  # in a worker: one entry per warm-up


def _warm() -> None:
    WARMED.append(os.getpid())


def _seen() -> tuple[int, list[int], dict]:
    return os.getpid(), list(WARMED), {k: os.environ.get(k) for k in SINGLE_THREADED}


def test_each_worker_is_warmed_once_before_its_runs_and_runs_queue_for_an_idle_one():
    with WarmWorkers(1, warm=_warm) as workers:
        seen = [workers.submit(_seen) for _ in range(3)]  # one worker: two wait for it
        results = [f.result(timeout=120) for f in seen]
    pid = results[0][0]
    assert results == [(pid, [pid], SINGLE_THREADED)] * 3


def _span(seconds: float) -> tuple[int, float, float]:
    """(pid, start, end) of a run that sleeps `seconds`."""
    start = time.time()
    time.sleep(seconds)
    return os.getpid(), start, time.time()


def test_runs_of_one_affinity_stay_on_the_worker_that_ran_one():
    """A method's runs go to the worker that compiled its library (UMAP's numba code: ~12 s a
    process on a machine's first sweep): short `a` runs queued behind long `b` ones all run on
    one worker; first come, first served would hand the second `b` to the `a` worker and the rest
    of the `a` runs to the other."""
    with WarmWorkers(2) as workers:
        workers.submit(os.getpid).result(timeout=120)  # both started and warm: a fair race
        order = [("a", 0.05), ("b", 1.0), ("b", 1.0), ("a", 0.05), ("a", 0.05), ("a", 0.05)]
        futures = [(key, workers.submit(_span, seconds, affinity=key)) for key, seconds in order]
        pids = {key: {f.result(timeout=120)[0] for k, f in futures if k == key} for key in ("a", "b")}
    assert len(pids["a"]) == 1 and pids["b"] - pids["a"], pids


def test_runs_submitted_together_start_on_different_affinities():
    """A sweep's runs, slow method first (two UMAP cells, then short ones), submitted together:
    the second idle worker starts the short ones, not the second UMAP cell (handed out one by one,
    both workers compiled UMAP: a machine's first 12-cell sweep 33.7 s instead of 26.7); once they are
    done it takes the UMAP cell left."""
    with WarmWorkers(2) as workers:
        workers.submit(os.getpid).result(timeout=120)  # both started and warm
        order = [("b", 2.0), ("b", 2.0)] + [("a", 0.05)] * 4
        futures = workers.submit_all([(_span, (seconds,), key) for key, seconds in order])
        (b1, b2, *a) = [f.result(timeout=120) for f in futures]
    assert {pid for pid, _, _ in a} == {b2[0]} != {b1[0]}, (b1, b2, a)
    assert a[-1][2] <= b2[1] < b1[2], "the short runs first, then the second slow one, beside the first"


def _tell_and_sleep(path: str, seconds: float) -> None:
    with open(path, "w") as f:
        f.write(str(os.getpid()))
    time.sleep(seconds)


def test_a_dead_worker_fails_its_own_run_only_and_is_replaced(tmp_path):
    with WarmWorkers(2) as workers:
        doomed = workers.submit(_tell_and_sleep, str(tmp_path / "pid"), 120)
        neighbour = workers.submit(time.sleep, 3)
        deadline = time.monotonic() + 60
        while not (tmp_path / "pid").exists() or not (tmp_path / "pid").read_text():
            assert time.monotonic() < deadline, "the doomed run never started"
            time.sleep(0.05)
        doomed_pid = int((tmp_path / "pid").read_text())
        os.kill(doomed_pid, signal.SIGKILL)  # out of memory, say
        with pytest.raises(BrokenProcessPool):
            doomed.result(timeout=60)
        assert neighbour.result(timeout=60) is None
        after = workers.submit(os.getpid).result(timeout=120)  # on a fresh worker or the neighbour's
        assert after != doomed_pid
        assert len(workers.processes()) == 2 and doomed_pid not in {p.pid for p in workers.processes()}


def test_edited_code_retires_the_workers_before_the_next_run():
    stamps = iter(["a", "a", "a", "b", "b"])
    with WarmWorkers(1, code=lambda: next(stamps)) as workers:
        first = workers.submit(os.getpid).result(timeout=120)
        assert workers.submit(os.getpid).result(timeout=120) == first  # same code: same warm worker
        assert workers.submit(os.getpid).result(timeout=120) != first  # a source changed: a fresh one


def test_no_fork_while_another_thread_runs():
    # In a fresh interpreter: pytest-xdist's worker has threads of its own.
    code = (
        "import threading\n"
        "from lab_assets.core.warm_workers import start_method\n"
        "print(start_method(False), start_method(True))\n"
        "stop = threading.Event(); thread = threading.Thread(target=stop.wait); thread.start()\n"
        "print(start_method(True))  # its locks would be copied held\n"
        "stop.set(); thread.join()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == ["spawn", "fork", "spawn"]
