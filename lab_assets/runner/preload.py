"""What a process loads before it executes runs: the definitions, and what a process's first
cell run would otherwise load on the way (`load`), once per warm worker (`warm`: sweep workers,
the UI launcher's workers named in dagster.yaml) or once per warm service (cli/service_server.py).
Nothing heavy is imported at module level: `pool` imports this before a worker has loaded anything.
"""

from __future__ import annotations

from functools import cache


@cache
def definitions():
    from lab_assets.defs.definitions import defs  # loading them costs ~1 s: not for `lab --help`

    return defs


def load() -> None:
    """Load now what a process's first cell run loads on top of the run itself (profiled: the
    first run of a trivial cell took 1.7-1.8 s, the next 0.15 s): the definitions, scikit-learn's
    neighbours, numba's cached rank kernels, W&B's modules. Starts no thread: a process that
    forks later (the warm service) loads this."""
    definitions()
    import numpy as np

    from lab_assets.core import tracking
    from lab_assets.dr.metrics import METRICS
    from lab_assets.dr.metrics.neighbors import Neighborhoods

    # One rank-based metric on 12 points: scikit-learn's neighbour search and numba's cached
    # rank kernels (~0.4 s to load in a fresh process) through the metrics' own path.
    points = np.random.default_rng(0).normal(size=(12, 3))
    METRICS["trustworthiness"](Neighborhoods(points, points[:, ::-1][:, :2], k_max=3), k=3)
    tracking.warm(start=False)


def warm() -> None:
    """A warm worker's warm-up (core/warm_workers.py): `load`, then W&B's service process."""
    from lab_assets.core import tracking

    load()
    tracking.warm()
