"""Issue 44's baselines: what a practised user writes instead of a platform, for a grid of
(manifold, seed, method) cells scored by trustworthiness. One task per cell, its dataset made in
the task, the library calls (and parameters) the platform's dataset, method and metric entries
make; no lab_assets import, no storage, no tracking.

    python benchmarks/joblib_loop.py joblib|serial CELLS_JSON

`joblib`: two loky processes (`Parallel(n_jobs=2)`), as on a 2-core laptop; `serial`: the same
tasks one after another in this process, with the libraries' default threads. CELLS_JSON: a list
of [dataset, {params}, seed, method, {params}, k]. Prints JSON: `values`, {cell: trustworthiness}
keyed "dataset|seed|method", for the caller to compare with the platform's, and `seconds`, each
cell's process, start and split (data with the imports a first cell pays, method import, fit, metric).

Run as a script: `cell` is then in `__main__` and loky sends it by value (cloudpickle), so the
workers import only what the task imports.
"""

from __future__ import annotations

import json
import sys


def cell(dataset: str, data_params: dict, seed: int, method: str, method_params: dict, k: int) -> tuple[float, dict]:
    """The cell's trustworthiness, and where its seconds went (a process's first cell pays the imports)."""
    import os
    import time

    started, t = time.time(), [time.perf_counter()]
    import numpy as np
    from sklearn import datasets
    from sklearn.manifold import trustworthiness

    # The platform's generator stream 0 of the seed, handed to sklearn as a RandomState
    # (`defs/assets/datasets.rng`, `dr/datasets/raw.sklearn_random_state`): the same points.
    state = np.random.RandomState(np.random.default_rng([seed, 0]).integers(2**32 - 1, dtype=np.uint64))
    make = {"swissroll": datasets.make_swiss_roll, "s_curve": datasets.make_s_curve}[dataset]
    X = np.asarray(make(data_params["n_samples"], noise=data_params.get("noise", 0.0), random_state=state)[0])
    t.append(time.perf_counter())
    if method == "pca":
        from sklearn.decomposition import PCA

        estimator = PCA(n_components=2, svd_solver="full", random_state=seed, **method_params)
    elif method == "isomap":
        from sklearn.manifold import Isomap

        estimator = Isomap(n_components=2, eigen_solver="dense", **{"n_neighbors": 10, **method_params})
    elif method == "umap":
        import umap

        estimator = umap.UMAP(n_components=2, random_state=seed, n_jobs=1, **{"n_neighbors": 15, **method_params})
    else:
        raise ValueError(f"no baseline for method {method!r}")
    t.append(time.perf_counter())
    Z = np.asarray(estimator.fit_transform(X), dtype=np.float64)
    t.append(time.perf_counter())
    value = float(trustworthiness(X, Z, n_neighbors=k))
    t.append(time.perf_counter())
    seconds = dict(zip(("data", "import method", "fit", "metric"), (b - a for a, b in zip(t, t[1:]))))
    return value, {"pid": os.getpid(), "start": started, **seconds}


def main(mode: str, cells: list) -> dict[str, dict]:
    if mode == "joblib":
        from joblib import Parallel, delayed
        from joblib.externals.loky import get_reusable_executor

        done = Parallel(n_jobs=2, backend="loky")(delayed(cell)(*c) for c in cells)
        # Ended and waited for here, not at exit: their CPU time then counts in this process's.
        get_reusable_executor().shutdown(wait=True)
    elif mode == "serial":
        done = [cell(*c) for c in cells]
    else:
        raise SystemExit(f"mode: joblib or serial, not {mode!r}")
    names = [f"{c[0]}|{c[2]}|{c[3]}" for c in cells]
    return {"values": {n: v for n, (v, _) in zip(names, done)}, "seconds": {n: s for n, (_, s) in zip(names, done)}}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], json.loads(sys.argv[2]))))
