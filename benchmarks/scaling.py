"""Fixed costs against sweep size (issue #15): trivial cells (isomap on 60 points, one kNN
metric), where only the platform costs. For each size, from an empty project:

- plan: `lab sweep plan --json` before anything ran (registry, keys, one status per cell); with
  --baseline also REPEATS times each, interleaved with another checkout's, each in a new project;
- run: `lab sweep run` (2 workers), wall per cell end to end, and peak memory of the command's
  own process and of its tree (sizes up to --run-up-to only: 10,000 real runs take too long on
  2 cores);
- no-op: `lab sweep run` again with nothing to do, as a whole process: the first re-run (the
  answer the run saved), the full path (the saved answer removed first), the saved answer
  (runner/noop_answer.py), and, with --baseline, the full path and then the saved answer of another checkout's code
  (e.g. `git archive <commit> | tar -x -C DIR`), interleaved, REPEATS times each; with
  --baseline the run too (the other code's, from its own empty project, just before).

    python benchmarks/scaling.py --cells 100,1000,10000 --run-up-to 1000 --baseline /tmp/base
(`--no-baseline-run`: the baseline's no-op only, from this code's lab home.)
Prints one JSON line per size; medians and ratios are within this run.
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
from run_all import LAB, ROOT, project  # noqa: E402

# cells = data keys (seeds) x method keys (isomap's n_neighbors x n_components grid; n_neighbors
# stays below the 60 points).
SHAPES = {12: (4, 3, 1), 100: (10, 10, 1), 1000: (100, 10, 1), 2000: (100, 10, 2), 10000: (100, 10, 10)}


def sweep_text(cells: int) -> str:
    seeds, neighbors, components = SHAPES[cells]
    return (
        f"name: scaling\ndata:\n  swissroll: {{n_samples: 60, noise: 0.05}}\nseeds: {list(range(seeds))}\n"
        f"methods:\n  isomap: {{n_neighbors: {list(range(5, 5 + neighbors))}, "
        f"n_components: {list(range(1, components + 1))}}}\n"
        "metrics:\n  trustworthiness: {k: [5]}\n"
    )


def with_code(env: dict, root: Path) -> dict:
    return {**env, "PYTHONPATH": str(root)}


def baseline_run(cells: int, baseline: Path) -> float:
    """The same sweep run by another checkout's code, from an empty project (seconds)."""
    with project(sweep_text(cells), "scaling") as (folder, env, file):
        return measure.run(
            [*LAB, "sweep", "run", file, "--quiet"], with_code(env, baseline), folder, timeout=7200
        ).seconds


def plan_seconds(cells: int, code: Path) -> float:
    """`lab sweep plan --json` by a checkout's code, in an empty project of its own (seconds)."""
    with project(sweep_text(cells), "scaling") as (folder, env, file):
        return measure.run([*LAB, "sweep", "plan", file, "--json"], with_code(env, code), folder).seconds


def measure_size(cells: int, run: bool, repeats: int, baseline: Path | None, run_baseline: bool = True) -> dict:
    out: dict = {"cells": cells, "load_before": os.getloadavg()[0]}
    if baseline is not None:  # the first plan, each code's in a new project, interleaved
        plan_seconds(cells, baseline), plan_seconds(cells, ROOT)  # untimed: bytecode compiled, files cached
        pairs = [(plan_seconds(cells, baseline), plan_seconds(cells, ROOT)) for _ in range(repeats)]
        out["plan_baseline_s"], out["plan_each_s"] = [b for b, _ in pairs], [t for _, t in pairs]
        out["ratio_plan_over_baseline"] = statistics.median(out["plan_each_s"]) / statistics.median(
            out["plan_baseline_s"]
        )
    if run and baseline is not None and run_baseline:  # before this code's run: the two runs see similar loads
        out["run_baseline_s"] = baseline_run(cells, baseline)
        out["run_baseline_per_cell_s"] = out["run_baseline_s"] / cells
    with project(sweep_text(cells), "scaling") as (folder, env, file):
        env = with_code(env, ROOT)
        plan = measure.run([*LAB, "sweep", "plan", file, "--json"], env, folder)
        assert len(json.loads(plan.stdout)["cells"]) == cells
        out["plan_s"], out["plan_peak_root_gib"] = plan.seconds, plan.peak_root_gib
        if not run:
            return out
        r = measure.run([*LAB, "sweep", "run", file, "--quiet"], env, folder, timeout=7200)
        out["run_s"], out["run_per_cell_s"] = r.seconds, r.seconds / cells
        out["run_peak_root_gib"], out["run_peak_tree_gib"] = r.peak_root_gib, r.peak_rss_gib
        if "run_baseline_s" in out:
            out["ratio_run_over_baseline"] = r.seconds / out["run_baseline_s"]
        cache = folder / ".lab" / "cache"
        noop = [*LAB, "sweep", "run", file, "--quiet"]
        out["noop_first_s"] = measure.run(noop, env, folder).seconds  # answered from what the run saved
        full, saved, base, base_saved = [], [], [], []
        for _ in range(repeats):
            for entry in cache.glob("noop-*.json"):
                entry.unlink()
            full.append(measure.run(noop, env, folder))
            saved.append(measure.run(noop, env, folder))
            if baseline is not None:
                base.append(measure.run(noop, with_code(env, baseline), folder))
                base_saved.append(measure.run(noop, with_code(env, baseline), folder))  # its own saved answer
        out["noop_full_s"] = [m.seconds for m in full]
        out["noop_full_peak_root_gib"] = max(m.peak_root_gib for m in full)
        out["noop_saved_s"] = [m.seconds for m in saved]
        if base:
            out["noop_baseline_s"] = [m.seconds for m in base]
            out["ratio_full_over_baseline"] = statistics.median(out["noop_full_s"]) / statistics.median(
                out["noop_baseline_s"]
            )
            out["ratio_saved_over_baseline"] = statistics.median(out["noop_saved_s"]) / statistics.median(
                out["noop_baseline_s"]
            )
            out["noop_baseline_saved_s"] = [m.seconds for m in base_saved]
            out["ratio_saved_over_baseline_saved"] = statistics.median(out["noop_saved_s"]) / statistics.median(
                out["noop_baseline_saved_s"]
            )
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cells", default="100,1000,10000", help=f"comma-separated, of {sorted(SHAPES)}")
    p.add_argument("--run-up-to", type=int, default=1000, help="run (and re-run) only sweeps up to this size")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--baseline", type=Path, help="a checkout's root whose `lab` is the no-op baseline")
    p.add_argument(
        "--no-baseline-run", action="store_true", help="the baseline's no-op only (its run of the sweep: not timed)"
    )
    args = p.parse_args()
    for cells in map(int, args.cells.split(",")):
        start = time.perf_counter()
        out = measure_size(cells, cells <= args.run_up_to, args.repeats, args.baseline, not args.no_baseline_run)
        out["part_s"] = round(time.perf_counter() - start, 1)
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
