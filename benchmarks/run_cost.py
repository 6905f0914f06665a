"""What one cell's Dagster run costs in a warm process (issue #15's per-cell overhead): trivial new
cells (isomap on 60 points, one kNN metric; each run computes its dataset too), executed one
after another in this process after a few warm-up runs, W&B offline tracking on. Prints the
median wall seconds per run and the CPU seconds per run (this process and its children, e.g.
`git`: steadier than wall time on a shared machine). With --baseline, another checkout's code
(`git archive <commit> | tar -x -C DIR`) is measured the same way, interleaved, and the ratios
of the medians are printed.

Each process then measures Dagster's own floor for a run of the same shape, on the same instance:
a job with the same steps, asset keys, dependencies and blocking checks as the cell's run, whose
bodies do nothing (no file, no W&B, every check passed); the same assets and checks folded into
one step; and a job of the first step alone (one asset, no check). `this / floor` is what a cell
run costs over what Dagster costs for one run of its shape: while a cell is one run with these
assets and checks, our code can remove only the part above the floor.

    python benchmarks/run_cost.py [--pairs 3] [--cells 32] [--baseline DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run_all import PY, ROOT, project  # noqa: E402

WARM_UP = 4  # a process's first runs pay imports and first-use costs the others do not

# Run in a child process per measurement: the code under test is on its PYTHONPATH.
CHILD = """
import json, resource, statistics, sys, time
from lab_assets.defs.work import sweep_work
from lab_assets.dr.sweep import load_sweep
from lab_assets.runner.local import execute_run
from lab_assets.runner.sweeps import register_and_plan

def cpu():
    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime

work = sweep_work(register_and_plan(load_sweep(sys.argv[1])))
runs = [r for phase in work.phases for r in phase.runs if r.job.startswith("cells")]  # not the tables
warm_up = int(sys.argv[2])
for r in runs[:warm_up]:
    execute_run(r, {})
walls, before = [], cpu()
for r in runs[warm_up:]:
    start = time.perf_counter()
    outcome = execute_run(r, {})
    walls.append(time.perf_counter() - start)
    assert outcome.ok, outcome
out = {"wall_s": statistics.median(walls), "cpu_s": (cpu() - before) / len(walls), "runs": len(walls)}

# Dagster's floor: the cell run's shape (steps, asset keys, deps, blocking checks), empty bodies.
import dagster as dg
from lab_assets.defs.assets.datasets import dataset, raw_dataset
from lab_assets.defs.assets.experiments import model_and_embedding
from lab_assets.defs.assets.metrics import metrics
from lab_assets.runtime.instance import get_instance

floor_cell = dg.DynamicPartitionsDefinition(name="floor_cell")
keys = [f"f{i}" for i in range(len(runs))]
get_instance().add_dynamic_partitions("floor_cell", keys)

def renamed(key):
    return dg.AssetKey(["floor", *key.path])

def empty(name, assets):  # one step materializing the assets' keys (renamed), passing their checks
    specs = [dg.AssetSpec(renamed(s.key), deps=[renamed(d.asset_key) for d in s.deps]) for a in assets for s in a.specs]
    checks = [dg.AssetCheckSpec(c.name, asset=renamed(c.asset_key), blocking=c.blocking) for a in assets for c in a.check_specs]

    @dg.multi_asset(name=name, specs=specs, check_specs=checks, partitions_def=floor_cell)
    def body(context):
        for s in specs:
            mine = [dg.AssetCheckResult(asset_key=s.key, check_name=c.name, passed=True) for c in checks if c.asset_key == s.key]
            yield dg.MaterializeResult(asset_key=s.key, check_results=mine)
    return body

cell_run = (raw_dataset, dataset, model_and_embedding, metrics)
shape = [empty(f"floor_{a.op.name}", [a]) for a in cell_run]
folded = empty("floor_folded", cell_run)  # the same assets and checks in one step
floor_defs = dg.Definitions(assets=shape, jobs=[dg.define_asset_job("floor", selection=shape),
                                                dg.define_asset_job("floor_one_step", selection=shape[:1])])
folded_defs = dg.Definitions(assets=[folded], jobs=[dg.define_asset_job("floor_folded", selection=[folded])])
quiet = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
for defs, job in ((floor_defs, "floor"), (folded_defs, "floor_folded"), (floor_defs, "floor_one_step")):
    walls = []
    for i, k in enumerate(keys):
        start = time.perf_counter()
        result = defs.resolve_job_def(job).execute_in_process(instance=get_instance(), partition_key=k, run_config=quiet)
        if i >= warm_up:
            walls.append(time.perf_counter() - start)
        assert result.success
    out[f"{job}_wall_s"] = statistics.median(walls)
out["steps"] = len(shape)
print(json.dumps(out))
"""


def sweep_text(cells: int) -> str:
    seeds = cells // 4
    return (
        "name: run_cost\ndata:\n  swissroll: {n_samples: 60, noise: 0.05}\n"
        f"seeds: {list(range(seeds))}\nmethods:\n  isomap: {{n_neighbors: [5, 6, 7, 8]}}\n"
        "metrics:\n  trustworthiness: {k: [5]}\n"
    )


def measure(code: Path, cells: int) -> dict:
    """One process, from an empty project, running `cells` new cells' runs one by one."""
    with project(sweep_text(cells), "run_cost") as (folder, env, file):
        done = subprocess.run(
            [PY, "-c", CHILD, file, str(WARM_UP)],
            env={**env, "PYTHONPATH": str(code), "LAB_SERVICE": "0"},
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=1800,
        )
        if done.returncode != 0:
            raise SystemExit(f"{code}: exit {done.returncode}\n{done.stderr[-3000:]}")
        return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pairs", type=int, default=3)
    p.add_argument("--cells", type=int, default=32, help="cells per process (a multiple of 4), warm-up included")
    p.add_argument("--baseline", type=Path)
    args = p.parse_args()
    out: dict = {"load_before": os.getloadavg()[0], "this": [], "baseline": []}
    for _ in range(args.pairs):
        out["this"].append(measure(ROOT, args.cells))
        if args.baseline:
            out["baseline"].append(measure(args.baseline, args.cells))
    for side in ("this", "baseline"):
        if out[side]:
            for what in ("wall_s", "cpu_s", "floor_wall_s", "floor_folded_wall_s", "floor_one_step_wall_s"):
                out[f"{side}_{what}_median"] = statistics.median(m[what] for m in out[side])
            out[f"{side}_wall_over_floor"] = out[f"{side}_wall_s_median"] / out[f"{side}_floor_wall_s_median"]
    if args.baseline:
        for what in ("wall_s", "cpu_s"):
            out[f"ratio_{what}"] = out[f"this_{what}_median"] / out[f"baseline_{what}_median"]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
