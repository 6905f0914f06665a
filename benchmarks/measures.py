"""The issue-41 measures at scale, against the shared kNN search they sit on.

    python benchmarks/measures.py                # n = 10,000 and 100,000, k = 100
    python benchmarks/measures.py 20000 --k 50   # other sizes / k

Data: 10 Gaussian clusters in 50-d (seeded); embedding: its 2-d PCA projection (most neighbour
pairs need an exact rank: the expensive case); labels: the clusters; latent: the data's first
two coordinates (a stand-in: only the cost is measured). Per size, one fresh process: the shared
kNN search at k (the baseline, `Neighborhoods(X, Z, k_max=k)`), then each measure on it, timed
alone, with the process's peak RSS after it. `mrre` is timed first alone (it pays for the exact
cross ranks) and the second direction after it (sharing them, as in a cell with trustworthiness
and continuity). `rnx_auc` exact (`k_max: all`) runs on its own at 5,000 points, its limit.
Prints a Markdown table for BENCHMARKS.md.
"""

import json
import os
import platform
import resource
import subprocess
import sys
import time

import numpy as np


def make_data(n: int):
    from sklearn.datasets import make_blobs
    from sklearn.decomposition import PCA

    X, y = make_blobs(n_samples=n, n_features=50, centers=10, cluster_std=4.0, random_state=0)
    return X, PCA(n_components=2, random_state=0).fit_transform(X), y.astype(np.int64)


def peak_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB on Linux


def measure(n: int, k: int) -> list[dict]:
    from lab_assets.dr.latents import Latent
    from lab_assets.dr.metrics import METRICS
    from lab_assets.dr.metrics.coranking import EXACT_MAX_POINTS
    from lab_assets.dr.metrics.latent_neighborhoods import GroundTruthNeighborhoods

    X, Z, y = make_data(n)
    rows = []

    def timed(name, fn):
        start = time.perf_counter()
        value = fn()
        rows.append({"what": name, "seconds": time.perf_counter() - start, "peak_gib": peak_gib(), "value": value})

    built = {}

    def search():
        built["nb"] = GroundTruthNeighborhoods(X, Z, k_max=k, labels=y, latent=Latent(X[:, :2]))

    timed(f"shared kNN search, k={k} (baseline)", search)
    nb = built["nb"]
    if n <= EXACT_MAX_POINTS:
        timed("rnx_auc k_max=all (exact)", lambda: METRICS["rnx_auc"](nb, k_max="all"))
    for name, params in [
        ("rnx", {"k": k}),
        ("lcmc", {"k": k}),
        ("rnx_auc", {"k_max": k}),
        ("neighborhood_hit", {"k": k}),
        ("density_preservation", {"k": k}),
        ("lid_error", {"k": k}),
        ("latent_knn_preservation", {"k": k}),
        ("mrre", {"k": k, "direction": "data"}),
        ("mrre", {"k": k, "direction": "embedding"}),
        ("normalized_stress", {}),
        ("scale_normalized_stress", {}),
        ("pearson_distance_correlation", {}),
        ("participation_ratio_error", {}),
    ]:
        label = f"{name} " + ",".join(f"{p}={v}" for p, v in params.items())
        timed(label.strip(), lambda name=name, params=params: METRICS[name](nb, **params))
    return rows


def main(sizes: list[int], k: int) -> None:
    import numba
    import sklearn

    print(
        f"machine: {platform.processor() or platform.machine()}, {len(os.sched_getaffinity(0))} cores, "
        f"load average {os.getloadavg()[0]:.1f} at start; numpy {np.__version__}, scikit-learn "
        f"{sklearn.__version__}, numba {numba.__version__}"
    )
    for n in sizes:
        out = subprocess.run([sys.executable, __file__, "--child", str(n), str(k)], capture_output=True, text=True)
        if out.returncode:
            sys.exit(f"n={n} failed:\n{out.stderr}")
        rows = json.loads(out.stdout.splitlines()[-1])
        base = rows[0]["seconds"]
        print(f"\nn = {n:,} x 50 dims, k = {k}")
        print("| step | seconds | vs kNN search | peak RSS (GiB) |")
        print("|---|---:|---:|---:|")
        for r in rows:
            print(f"| {r['what']} | {r['seconds']:.2f} | {100 * r['seconds'] / base:.0f} % | {r['peak_gib']:.2f} |")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        print(json.dumps(measure(int(sys.argv[2]), int(sys.argv[3])), default=float))
    else:
        args = sys.argv[1:]
        k = int(args[args.index("--k") + 1]) if "--k" in args else 100
        sizes = [int(a) for a in args if a.isdigit() and (args.index(a) == 0 or args[args.index(a) - 1] != "--k")]
        main(sizes or [5000, 10_000, 100_000], k)
