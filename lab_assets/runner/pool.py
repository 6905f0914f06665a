"""The worker processes of a local sweep, started before anything else.

A worker is a spawned Python that imports Dagster and the definitions, then pays what the first
cell run of a process pays (`preload.warm`: scikit-learn's neighbours, numba's cached kernels,
W&B's service): ~3 s of CPU each on the reference machine. `lab sweep run` starts them first,
so that this overlaps its own imports, registration and plan instead of following them
(BENCHMARKS.md, "Fixed costs"). This module (and what it imports) loads only the standard
library: the workers start within ~0.1 s of the command. The mechanism (start, warm-up,
single-threaded workers, fork or spawn) is `core/warm_workers.py`, shared with the UI's launcher.
"""

from __future__ import annotations

from lab_assets.core.warm_workers import WarmWorkers
from lab_assets.runner import preload


class WorkerPool(WarmWorkers):
    """`workers` single-threaded processes, each started now and warmed by `preload.warm`:
    spawned, or, with `fork`, forked from this process, which must then hold no thread,
    connection or instance yet (a command run by the warm service, runner/service.py: the workers
    start loaded). A sweep's workers load its code once: no retirement during a command."""

    def __init__(self, workers: int, fork: bool = False):
        super().__init__(workers, warm=preload.warm, fork=fork)
