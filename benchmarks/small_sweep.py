"""A small sweep, cold (issue #15): the plain loop against `lab sweep run` from an empty project,
interleaved REPEATS times, and where `lab sweep run`'s wall time goes, from its own run records:
before the first run starts (imports, instance, register, plan, worker start), the datasets
phase, the cells phase, and after the last cell (metric table, report, shutdown). Then warm:
one method parameter edited and the sweep run again; its fixed cost is the wall time minus the
new cells' own compute (their steps' `wall_seconds`) divided by the workers.

    python benchmarks/small_sweep.py [--repeats 3] [--baseline DIR] [--service-only]
`--baseline DIR`: also `lab sweep run` with another checkout's package (`git archive <commit>
lab_assets | tar -x -C DIR`). `--service-only`: only the plain loop and the variant with the
warm service already up (the edit-rerun loop's), for this code and the baseline alike. Prints
JSON; ratios are within this run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
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


# The warm loop's edit: one method parameter changed, so that method's 4 cells are new.
EDIT = ("isomap: {n_neighbors: 10}", "isomap: {n_neighbors: 12}")


def cell_compute(home: Path, since: float) -> float:
    """Seconds of the cells' own steps (materialization metadata `wall_seconds`: what the
    method and metrics took, not the run around them) of the cells materialized after `since`."""
    import dagster as dg

    total = 0.0
    with dg.DagsterInstance.from_config(str(home)) as instance:
        for asset in ("embedding", "metrics"):
            records = instance.fetch_materializations(dg.AssetKey(asset), limit=10_000).records
            total += sum(
                float(r.asset_materialization.metadata["wall_seconds"].value) for r in records if r.timestamp > since
            )
    return total


def lab_run(code_root: Path, workers: int, service: str | None = None) -> dict:
    """Cold, then warm: the same sweep with one method parameter edited (issue #15: the fixed
    cost beyond the new cells' own compute, spread over the workers, should be <= 2 s).
    `service`: None, without the warm service (runner/warm_service.py); "start": the cold command starts
    it; "running": it was started before the cold command (not timed). Stopped after."""
    with project(SWEEP, "small") as (folder, env, file), tempfile.TemporaryDirectory(dir="/tmp") as runtime:
        env = {**env, "PYTHONPATH": str(code_root), "LAB_SERVICE": "1" if service else "0", "XDG_RUNTIME_DIR": runtime}
        home = folder / ".lab" / "dagster"
        if service == "running":
            measure.run([*LAB, "service", "start"], env, folder)
        try:
            return _cold_then_warm(folder, env, file, home, workers)
        finally:
            if service:
                measure.run([*LAB, "service", "stop"], env, folder)


def _cold_then_warm(folder: Path, env: dict, file: str, home: Path, workers: int) -> dict:
    started = time.time()
    m = measure.run([*LAB, "sweep", "run", file, "--quiet"], env, folder, timeout=1800)
    out = {"wall_s": m.seconds, **timeline(home, started, m.seconds)}
    path = folder / file
    path.write_text(path.read_text().replace(*EDIT))
    started = time.time()
    warm = measure.run([*LAB, "sweep", "run", file, "--quiet"], env, folder, timeout=1800)
    compute = cell_compute(home, started)
    out.update(
        warm_wall_s=warm.seconds,
        warm_new_cells_compute_s=compute,
        warm_fixed_s=warm.seconds - compute / workers,
        warm_report_s=report_seconds(home, started),
    )
    return out


def report_seconds(home: Path, since: float) -> float:
    """How long the report's run took, of the runs started after `since`."""
    import dagster as dg

    with dg.DagsterInstance.from_config(str(home)) as instance:
        return sum(
            r.end_time - r.start_time
            for r in instance.get_run_records()
            if r.start_time > since and r.dagster_run.job_name == "materialize_report"
        )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--baseline", type=Path)
    p.add_argument("--service-only", action="store_true")
    args = p.parse_args()
    workers = len(os.sched_getaffinity(0))  # what `lab sweep run` uses by default
    out: dict = {
        "load_before": os.getloadavg()[0],
        "plain_s": [],
        "lab": [],
        "service_start": [],
        "service_running": [],
        "baseline": [],
    }
    with project(SWEEP, "small") as (folder, env, file):
        for _ in range(args.repeats):
            plain = measure.run(
                [PY, str(ROOT / "benchmarks" / "plain_loop.py"), file], {**env, "PYTHONPATH": str(ROOT)}, folder
            )
            out["plain_s"].append(plain.seconds)
            if not args.service_only:
                out["lab"].append(lab_run(ROOT, workers))
                out["service_start"].append(lab_run(ROOT, workers, "start"))
            out["service_running"].append(lab_run(ROOT, workers, "running"))
            if args.baseline:
                out["baseline"].append(lab_run(args.baseline, workers, "running" if args.service_only else None))
            print(json.dumps(out), file=sys.stderr, flush=True)
    plain = statistics.median(out["plain_s"])
    for kind in ("lab", "service_start", "service_running", "baseline"):
        if out[kind]:
            out[f"ratio_{kind}_over_plain"] = statistics.median(r["wall_s"] for r in out[kind]) / plain
            out[f"{kind}_warm_fixed_s"] = statistics.median(r["warm_fixed_s"] for r in out[kind])
            out[f"{kind}_warm_report_s"] = statistics.median(r["warm_report_s"] for r in out[kind])
    out["load_after"] = os.getloadavg()[0]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
