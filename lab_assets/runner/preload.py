"""What a process loads before it executes runs: the definitions, and what a process's first
cell run would otherwise load on the way (`warm`). Nothing heavy is imported at module level:
`pool` imports this before a worker has loaded anything.
"""

from __future__ import annotations

from functools import cache


@cache
def definitions():
    from lab_assets.defs.definitions import defs  # loading them costs ~1 s: not for `lab --help`

    return defs


def warm() -> None:
    """Pay now what a process's first cell run pays on top of the run itself (profiled: the first
    run of a trivial cell took 1.7-1.8 s, the next 0.15 s): the definitions, scikit-learn's
    neighbours, numba's cached rank kernels, W&B's modules and service. Warming is an
    optimisation: whatever fails here fails again, and is reported, in the run that needs it."""
    try:
        definitions()
        import numpy as np

        from lab_assets.core import tracking
        from lab_assets.dr.metrics import METRICS
        from lab_assets.dr.metrics.neighbors import Neighborhoods

        # One rank-based metric on 12 points: scikit-learn's neighbour search and numba's
        # cached rank kernels (~0.4 s to load in a fresh process) through the metrics' own path.
        points = np.random.default_rng(0).normal(size=(12, 3))
        METRICS["trustworthiness"](Neighborhoods(points, points[:, ::-1][:, :2], k_max=3), k=3)
        tracking.warm()
    except Exception:  # noqa: BLE001 - see above
        pass
