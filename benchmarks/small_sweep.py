"""A small sweep, cold (issue #15): the plain loop against `lab sweep run` from an empty project,
interleaved REPEATS times, and where `lab sweep run`'s wall time goes, from its own run records:
before the first run starts (imports, instance, register, plan, worker start), the datasets
phase, the cells phase, and after the last cell (metric table, report, shutdown).

    python benchmarks/small_sweep.py [--repeats 3] [--baseline DIR]
`--baseline DIR`: also `lab sweep run` with another checkout's package (`git archive <commit>
lab_assets | tar -x -C DIR`). Prints JSON; ratios are within this run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import measure  # noqa: E402
from run_all import LAB, PY, ROOT, project  # noqa: E402

# 2 datasets x 2 seeds x 3 methods = 12 cells of a few seconds each at most.
SWEEP = """name: small
data:
  swissroll: {n_samples: 1500, noise: 0.05}
  s_curve: {n_samples: 1500}
seeds: [0, 1]
methods:
  pca: {}
  isomap: {n_neighbors: 10}
  tsne: {perplexity: 30, max_iter: 500}
metrics:
  trustworthiness: {k: [10, 30]}
  continuity: {k: [10, 30]}
  knn_preservation: {k: [10, 30]}
"""


def timeline(home: Path, started: float, seconds: float) -> dict:
    """Phases of the command's wall time, from its Dagster run records: before the first run,
    the runs of datasets apart from their cells (`materialize_datasets`, absent when each new
    cell computes its dataset in its own run), the cells, and after the last cell."""
    import dagster as dg

    with dg.DagsterInstance.from_config(str(home)) as instance:
        runs = [(r.dagster_run.job_name, r.start_time, r.end_time) for r in instance.get_run_records()]
    cells = [(s, e) for j, s, e in runs if j.startswith("materialize_cells")]
    datasets = [(s, e) for j, s, e in runs if j == "materialize_datasets"]
    first_cell, last_cell = min(s for s, _ in cells), max(e for _, e in cells)
    return {
        "before_first_run_s": min(s for _, s, _ in runs) - started,
        "datasets_s": max(e for _, e in datasets) - min(s for s, _ in datasets) if datasets else 0.0,
        "cells_s": last_cell - first_cell,
        "after_last_cell_s": started + seconds - last_cell,
    }


def lab_run(code_root: Path) -> dict:
    with project(SWEEP, "small") as (folder, env, file):
        env = {**env, "PYTHONPATH": str(code_root)}
        started = time.time()
        m = measure.run([*LAB, "sweep", "run", file, "--quiet"], env, folder, timeout=1800)
        return {"wall_s": m.seconds, **timeline(folder / ".lab" / "dagster", started, m.seconds)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--baseline", type=Path)
    args = p.parse_args()
    out: dict = {"load_before": os.getloadavg()[0], "plain_s": [], "lab": [], "baseline": []}
    with project(SWEEP, "small") as (folder, env, file):
        for _ in range(args.repeats):
            plain = measure.run([PY, str(ROOT / "benchmarks" / "plain_loop.py"), file], {**env, "PYTHONPATH": str(ROOT)}, folder)
            out["plain_s"].append(plain.seconds)
            out["lab"].append(lab_run(ROOT))
            if args.baseline:
                out["baseline"].append(lab_run(args.baseline))
            print(json.dumps(out), file=sys.stderr, flush=True)
    plain = statistics.median(out["plain_s"])
    out["ratio_lab_over_plain"] = statistics.median(r["wall_s"] for r in out["lab"]) / plain
    if out["baseline"]:
        out["ratio_baseline_over_plain"] = statistics.median(r["wall_s"] for r in out["baseline"]) / plain
    out["load_after"] = os.getloadavg()[0]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
