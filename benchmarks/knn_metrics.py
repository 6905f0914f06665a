"""kNN metrics at scale: trustworthiness, continuity, kNN preservation and LID at k in {15, 50, 100}.

    python benchmarks/knn_metrics.py            # n = 10,000 and 100,000 (about 5 minutes)
    python benchmarks/knn_metrics.py 20000      # other sizes

Data: 10 Gaussian clusters in 50-d (seeded); embedding: its 2-d PCA projection, which keeps
clusters apart but scrambles neighbourhoods inside them, so most neighbour pairs need an exact
rank (the expensive case). Each measurement runs in a fresh process, so its peak RSS is its own;
the baseline, `sklearn.manifold.trustworthiness` once per k, is measured in the same run.
Prints a Markdown table for BENCHMARKS.md.
"""

import json
import platform
import resource
import statistics
import subprocess
import sys
import time

import numpy as np

KS = (15, 50, 100)
METRICS = ("trustworthiness", "continuity", "knn_preservation", "lid")


def make_data(n: int):
    from sklearn.datasets import make_blobs
    from sklearn.decomposition import PCA

    X, _ = make_blobs(n_samples=n, n_features=50, centers=10, cluster_std=4.0, random_state=0)
    return X, PCA(n_components=2, random_state=0).fit_transform(X)


def measure(what: str, n: int) -> dict:
    """Run in a child process: seconds for `what` on n points, and the child's peak RSS."""
    X, Z = make_data(n)
    start = time.perf_counter()
    if what == "sklearn":
        from sklearn.manifold import trustworthiness

        values = [trustworthiness(X, Z, n_neighbors=k) for k in KS]
    else:
        from lab_assets.dr.metrics import METRICS as REGISTRY
        from lab_assets.dr.metrics.neighbors import Neighborhoods

        nb = Neighborhoods(X, Z, k_max=max(KS))
        names = METRICS if what == "all" else ("trustworthiness",)
        values = [REGISTRY[m](nb, k=k) for m in names for k in KS]
    seconds = time.perf_counter() - start
    peak_gib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB on Linux
    return {"seconds": seconds, "peak_gib": peak_gib, "values": values}


def child(what: str, n: int) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", what, str(n)], capture_output=True, text=True)
    if out.returncode:
        sys.exit(f"{what} at n={n} failed:\n{out.stderr}")
    return json.loads(out.stdout.splitlines()[-1])


def median_of(what: str, n: int, repeats: int) -> dict:
    runs = [child(what, n) for _ in range(repeats)]
    best = runs[0]
    for a, b in zip(best["values"], runs[-1]["values"]):
        assert a == b, "the metrics are deterministic"
    return {
        "seconds": statistics.median(r["seconds"] for r in runs),
        "peak_gib": max(r["peak_gib"] for r in runs),
        "values": best["values"],
    }


def main(sizes: list[int]) -> None:
    import numba
    import sklearn

    print(
        f"machine: {platform.processor() or platform.machine()}, {len(__import__('os').sched_getaffinity(0))} cores; "
        f"numpy {np.__version__}, scikit-learn {sklearn.__version__}, numba {numba.__version__}"
    )
    print("| n | what | seconds (median) | peak RSS GiB | ratio vs sklearn (same run) |")
    print("|---|---|---|---|---|")
    for n in sizes:
        repeats = 3 if n <= 20_000 else 1
        ours = median_of("all", n, repeats)
        print(
            f"| {n:,} | all 4 kNN metrics x k={list(KS)} | {ours['seconds']:.1f} | {ours['peak_gib']:.2f} | |",
            flush=True,
        )
        if n <= 20_000:  # sklearn's trustworthiness builds n x n matrices: minutes and GiBs beyond
            trust = median_of("trustworthiness", n, repeats)
            base = median_of("sklearn", n, repeats)
            diff = max(abs(a - b) for a, b in zip(trust["values"], base["values"]))
            print(
                f"| {n:,} | trustworthiness x 3 k (ours) | {trust['seconds']:.1f} | {trust['peak_gib']:.2f} | "
                f"{base['seconds'] / trust['seconds']:.1f}x faster (max |diff| {diff:.1e}) |"
            )
            print(
                f"| {n:,} | sklearn.manifold.trustworthiness x 3 k | {base['seconds']:.1f} | {base['peak_gib']:.2f} | 1.0 |",
                flush=True,
            )


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        print(json.dumps(measure(sys.argv[2], int(sys.argv[3]))))
    else:
        main([int(a) for a in sys.argv[1:]] or [10_000, 100_000])
