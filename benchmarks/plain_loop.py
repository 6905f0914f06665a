"""Baseline: a sweep's computations in a bare single-process Python loop, without Dagster.

Same library functions as the assets (dataset generators, methods, metrics, split); no storage,
no orchestration. `python benchmarks/plain_loop.py sweeps/demo.yaml` prints per-phase seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict

from lab_assets.core.threads import THREAD_POOL_VARIABLES


def run(path: str) -> dict:
    import numpy as np

    from lab_assets.defs.assets.datasets import GENERATE_STREAM, raw_frame, rng
    from lab_assets.dr.datasets import DATASETS
    from lab_assets.dr.metrics import METRICS, NotApplicable
    from lab_assets.dr.metrics.neighbors import Neighborhoods
    from lab_assets.dr.sweep import load_sweep

    sweep = load_sweep(path)
    seconds: dict[str, float] = defaultdict(float)
    start = time.perf_counter()
    for d in sweep.data:
        t = time.perf_counter()
        X = raw_frame(DATASETS[d.dataset](rng(d.seed, GENERATE_STREAM), **d.params), d.key)
        X = X[[c for c in X.columns if c.startswith("x")]].to_numpy()
        seconds["datasets"] += time.perf_counter() - t
        for m in sweep.methods:
            t = time.perf_counter()
            Z = np.asarray(m.entry(d.seed, **m.params).fit_transform(X), dtype=np.float64)
            seconds[f"method:{m.method}"] += time.perf_counter() - t
            t = time.perf_counter()
            k_max = max((mc.params.get("k", 0) for mc in sweep.metrics), default=0)
            nb = Neighborhoods(X, Z, k_max)
            for mc in sweep.metrics:
                try:
                    METRICS[mc.metric](nb, **mc.params)
                except NotApplicable:  # as the metrics asset: recorded as null, not a failure
                    pass
            seconds["metrics"] += time.perf_counter() - t
    seconds["total"] = time.perf_counter() - start
    return {"sweep": sweep.name, "cells": len(sweep.cells), "seconds": {k: round(v, 2) for k, v in seconds.items()}}


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("sweep")
    p.add_argument("--threads", type=int, default=1, help="BLAS/OpenMP threads (default 1, like a sweep worker)")
    args = p.parse_args()
    # Before NumPy, sklearn or numba load (run() imports them): native thread pools read these
    # once, when loaded; threadpoolctl can limit only libraries already loaded. The sweep
    # workers get the same variables.
    os.environ.update({var: str(args.threads) for var in THREAD_POOL_VARIABLES})
    json.dump(run(args.sweep), sys.stdout, indent=2)
    print()
