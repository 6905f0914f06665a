"""What a process loads before it executes runs: the definitions, and what a process's first
cell run would otherwise load on the way (`load`), once per warm worker (`warm`: sweep workers,
the UI launcher's workers named in dagster.yaml) or once per warm service (runner/warm_service_process.py).
Nothing heavy is imported at module level: `lab sweep run` starts its workers (`warm_workers`)
before it has loaded anything.
"""

from __future__ import annotations

from functools import cache

from lab_assets.core.warm_workers import WarmWorkers


@cache
def definitions():
    from lab_assets.defs.definitions import defs  # loading them costs ~1 s: not for `lab --help`

    return defs


def load(wandb: bool = True) -> None:
    """Load now what a process's first cell run loads on top of the run itself (profiled: the
    first run of a trivial cell took 1.7-1.8 s, the next 0.15 s): the definitions, scikit-learn's
    neighbours, numba's cached rank kernels, and, with `wandb`, W&B's modules. Starts no thread:
    a process that forks later (the warm service) loads this."""
    definitions()
    import numpy as np

    from lab_assets.core import tracking
    from lab_assets.dr.metrics import METRICS
    from lab_assets.dr.metrics.neighbors import Neighborhoods

    # One rank-based metric on 12 points: scikit-learn's neighbour search and numba's cached
    # rank kernels (~0.4 s to load in a fresh process) through the metrics' own path.
    points = np.random.default_rng(0).normal(size=(12, 3))
    METRICS["trustworthiness"](Neighborhoods(points, points[:, ::-1][:, :2], k_max=3), k=3)
    if wandb:
        tracking.warm()


def warm() -> None:
    """A warm worker's warm-up (core/warm_workers.py): `load` without W&B. W&B's modules (~1.5
    CPU-s) are needed at the end of a cell's metrics step only: warmed here, they delayed every
    worker's first run by that much (issue 44), so the first cell that logs imports them
    (`tracking.track_cell`). A worker forked from the warm service has them loaded already."""
    load(wandb=False)


def warm_workers(workers: int, fork: bool = False) -> WarmWorkers:
    """A sweep's `workers` single-threaded processes, each started now and warmed by `warm`
    (~3 s of CPU each on the reference machine): `lab sweep run` starts them first, so that this
    overlaps its own imports, registration and plan (BENCHMARKS.md, "Fixed costs"). Spawned, or,
    with `fork`, forked from this process, which must then hold no thread, connection or instance
    yet (a command run by the warm service: the workers start loaded). A sweep's workers load its
    code once: no retirement during a command."""
    return WarmWorkers(workers, warm=warm, fork=fork)
