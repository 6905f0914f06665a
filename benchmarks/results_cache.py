"""The results cache (issue #34): a cell recorded from the cache against the same cell computed.

REPEATS times, interleaved, each from an empty project, `lab sweep run --workers 1` of the same
sweep (t-SNE and Isomap on a few hundred points, two metrics):
- off: `LAB_RESULTS_CACHE=off` (computing, as before the cache);
- write: the default cache (computing, and keeping every embedding and metrics row);
- hit: another lab home and instance whose cache is that one (`LAB_RESULTS_CACHE=<its folder>`):
  every embedding and metrics row recorded from it, nothing computed.

    python benchmarks/results_cache.py
Prints one JSON line: medians per cell and ratios within this run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import measure  # noqa: E402
from run_all import LAB, project  # noqa: E402

SWEEP = """name: cachebench
data:
  swissroll: {n_samples: 400, noise: 0.05}
seeds: [0, 1, 2]
methods:
  tsne: {}
  isomap: {n_neighbors: 12}
metrics:
  trustworthiness: {k: [10]}
  lid: {k: [10]}
"""
CELLS = 6


def run(cache: str | None, keep: Path | None = None) -> float:
    """`lab sweep run` from an empty project (seconds); `keep`: where its cache is copied after."""
    with project(SWEEP, "cachebench") as (folder, env, file):
        env = {**env, "LAB_SERVICE": "0", **({"LAB_RESULTS_CACHE": cache} if cache else {})}
        measured = measure.run([*LAB, "sweep", "run", file, "--quiet", "--workers", "1"], env, folder, timeout=3600)
        if keep is not None:
            shutil.rmtree(keep, ignore_errors=True)
            shutil.copytree(folder / ".lab" / "results_cache", keep)
        return measured.seconds


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    folder = tempfile.mkdtemp(prefix="lab-cache-bench-")
    keep = Path(folder) / "results_cache"
    times: dict[str, list[float]] = {"off": [], "write": [], "hit": []}
    out: dict = {"cells": CELLS, "load_before": os.getloadavg()[0]}
    try:
        for _ in range(args.repeats):
            times["off"].append(run("off"))
            times["write"].append(run(None, keep))
            times["hit"].append(run(str(keep)))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    for name, xs in times.items():
        out[f"{name}_per_cell_s"] = statistics.median(xs) / CELLS
        out[f"{name}_runs_s"] = [round(x, 2) for x in xs]
    out["write_vs_off"] = out["write_per_cell_s"] / out["off_per_cell_s"]
    out["hit_vs_off"] = out["hit_per_cell_s"] / out["off_per_cell_s"]
    out["saved_per_cell_s"] = out["off_per_cell_s"] - out["hit_per_cell_s"]
    out["load_after"] = os.getloadavg()[0]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
