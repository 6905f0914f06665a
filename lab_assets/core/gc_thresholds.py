"""The cyclic garbage collector's thresholds for a process that loads a large stack (Dagster,
pandas, scikit-learn: about a million objects the collector tracks) and then runs.

CPython's defaults (700, 10, 10) collect the young generation every 700 net allocations and, while
that much is being loaded, every object loaded so far several times over: a cold `lab sweep run`
that adds a metric to 8 cells spent ~1.0 s of its ~5 s in collections, 0.8 s of it in 6 full ones
(measured with `gc.callbacks`; issue 44). With the young generation at 10,000, the same command
spends ~0.3 s and runs no full collection; a long command still runs one about every million net
allocations, so cyclic garbage is still freed and memory stays bounded.
"""

import gc

YOUNG = 10_000


def raise_for_a_large_stack() -> None:
    """Called first thing by a program that will load the stack (`lab`, a warm worker, the side
    process)."""
    gc.set_threshold(YOUNG, 10, 10)
