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
    """Pay now what a process's first cell run pays (~1.7 s of a 0.15 s run, profiled): the
    definitions, scikit-learn's neighbours, numba's cached rank kernels, W&B's modules and
    service. Warming is an optimisation: whatever fails here fails again, and is reported, in
    the run that needs it."""
    try:
        definitions()
        import sklearn.neighbors  # noqa: F401 - every kNN metric's search

        from lab_assets.core import tracking
        from lab_assets.dr.metrics import neighbors

        neighbors.warm()
        tracking.warm()
    except Exception:  # noqa: BLE001 - see above
        pass
