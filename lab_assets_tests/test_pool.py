"""The sweep's worker pool (runner/preload.warm_workers): every worker started at once and warmed before its
first run, W&B left to the first cell that logs; a pool never given a run is ended at once, one that ran
waits for its runs."""

import os
import signal
import sys

import pytest

from lab_assets.core.threads import SINGLE_THREADED
from lab_assets.runner.preload import warm_workers


def _state() -> dict:
    from lab_assets.runner import preload

    return {
        "definitions loaded": preload.definitions.cache_info().currsize == 1,
        "modules": {m for m in ("sklearn.neighbors", "wandb", "lab_assets.dr.rank_kernels") if m in sys.modules},
        "threads": {k: os.environ.get(k) for k in SINGLE_THREADED},
    }


@pytest.mark.slow
def test_workers_start_at_once_and_are_warm_before_their_first_run_without_wandb(lab):
    saved = {k: os.environ.get(k) for k in SINGLE_THREADED}
    pool = warm_workers(2)
    try:
        assert len(pool.processes()) == 2  # both spawned before anything was submitted by a runner
        state = pool.submit(_state).result(timeout=300)
        assert state["definitions loaded"]
        # W&B's imports (~1.5 CPU-s) would delay the first run; a cell needs them at its end only.
        assert state["modules"] == {"sklearn.neighbors", "lab_assets.dr.rank_kernels"}
        assert state["threads"] == SINGLE_THREADED
    finally:
        processes = pool.processes()
        pool.close()
    assert [p.exitcode for p in processes] == [0, 0]  # a used pool's workers end on their own
    assert {k: os.environ.get(k) for k in SINGLE_THREADED} == saved  # this process's threads as before


def test_a_pool_never_given_a_run_is_ended_not_waited_for(lab):
    pool = warm_workers(2)
    processes = pool.processes()
    pool.close()  # while they are still warming up (imports take seconds)
    assert [p.exitcode for p in processes] == [-signal.SIGKILL] * 2


def test_a_rerun_here_is_priced_at_its_median_cells_recorded_step(monkeypatch):
    """`sweeps.small_enough_here` (the end to end case: test_minimal_recompute.py's lost suite
    record): a process's first step, which recorded its imports too, does not price the others."""
    from lab_assets.defs.freshness import CellPlan, SweepPlan
    from lab_assets.runner import sweeps

    cells = [CellPlan("swissroll", f"pca{i}", "stale", assets={"metrics": "new column"}) for i in range(3)]
    recorded = {c.partition: {"metrics": s} for c, s in zip(cells, (3.0, 0.01, 0.02))}
    monkeypatch.setattr(sweeps, "get_instance", lambda: None)  # the records are these
    monkeypatch.setattr(sweeps, "recorded_seconds", lambda instance, cells, parts: recorded)
    plan = SweepPlan(None, {}, cells, report=None, metric_table=None)
    bound = 3 * (0.02 + sweeps.RUN_SECONDS)
    monkeypatch.setattr(sweeps, "HERE_SECONDS", bound + 0.001)
    assert sweeps.small_enough_here(plan)
    monkeypatch.setattr(sweeps, "HERE_SECONDS", bound - 0.001)
    assert not sweeps.small_enough_here(plan)
    monkeypatch.setattr(sweeps, "HERE_SECONDS", 100.0)
    cells[0].assets = {"embedding": "new method", "metrics": "its embedding"}
    assert not sweeps.small_enough_here(plan)  # an embedding to compute
    cells[0].assets = {"metrics": "new column"}
    del recorded[cells[0].partition]
    assert not sweeps.small_enough_here(plan)  # a cell without a recorded cost
