"""The same sweep on the embedded default and on the one-machine cluster (`lab cluster up`):
wall time, per-cell platform overhead and how many runs overlap. Prints a Markdown table.

    .venv/bin/python benchmarks/cluster.py [SWEEP]        # default: the test suite's tiny sweep

Per cell run, from the instance's own records: overhead = run wall (start -> end) minus the time
its steps report; on the cluster also the launch time, from the Job's creation (the daemon
handing the run to the launcher) to the run's start in its own process (interpreter, dagster and
definitions imports: what a pod adds besides image pull and scheduling).
"""

from __future__ import annotations

import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def lab(*args: str, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    out = subprocess.run(
        [sys.executable, "-m", "lab_assets.cli.main", *args], cwd=cwd, env=env, capture_output=True, text=True
    )
    if out.returncode:
        raise SystemExit(f"lab {' '.join(args)} failed:\n{out.stdout}\n{out.stderr}")
    return out


def cell_runs(dagster_home: str, env: dict) -> list[dict]:
    """Start, end and step seconds of every cell's run (materialize_cells, materialize_cells_with_data) of an instance."""
    code = f"""
import json, dagster as dg
inst = dg.DagsterInstance.from_config({dagster_home!r})
out = []
for run in [r for r in inst.get_runs() if r.job_name.startswith("materialize_cells")]:
    stats = inst.get_run_stats(run.run_id)
    steps = sum((s.end_time or 0) - (s.start_time or 0) for s in inst.get_run_step_stats(run.run_id))
    out.append({{"run_id": run.run_id, "start": stats.start_time, "end": stats.end_time, "steps": steps}})
print(json.dumps(out))
"""
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def max_overlap(runs: list[dict]) -> int:
    edges = sorted([(r["start"], 1) for r in runs] + [(r["end"], -1) for r in runs])
    now = best = 0
    for _, step in edges:
        now += step
        best = max(best, now)
    return best


def summary(runs: list[dict]) -> dict:
    overhead = [(r["end"] - r["start"]) - r["steps"] for r in runs]
    return {"cells": len(runs), "overhead": statistics.median(overhead), "overlap": max_overlap(runs)}


def main() -> None:
    from lab_assets_tests.conftest import TINY_SWEEP

    sweep = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else None
    base = Path(tempfile.mkdtemp(prefix="lab-bench-cluster-"))
    (base / "sweeps").mkdir()
    target = base / "sweeps" / (sweep.name if sweep else "tiny.yaml")
    target.write_text(sweep.read_text() if sweep else TINY_SWEEP)
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("LAB_", "DAGSTER_", "AWS_"))}
    clean.update(LAB_PROJECT_DIR=str(base), PYTHONPATH=str(REPO))
    load = os.getloadavg()

    embedded_env = {**clean, "LAB_HOME": str(base / "embedded")}
    t = time.perf_counter()
    lab("sweep", "run", str(target), "--quiet", cwd=base, env=embedded_env)
    embedded_wall = time.perf_counter() - t
    embedded = summary(cell_runs(str(base / "embedded" / "dagster"), embedded_env))

    folder = base / "cluster"
    t = time.perf_counter()
    up = lab("cluster", "up", "--dir", str(folder), cwd=base, env=clean)
    up_seconds = time.perf_counter() - t
    url = up.stdout.split("Dagster UI on ")[1].split()[0]
    cluster_env = dict(clean, LAB_HOME=str(base / "client"))
    for line in (folder / "env.sh").read_text().splitlines():
        key, _, value = line.removeprefix("export ").partition("=")
        cluster_env[key] = shlex.split(value)[0]
    try:
        t = time.perf_counter()
        lab("sweep", "run", str(target), "--quiet", "--submit", url, cwd=base, env=cluster_env)
        cluster_wall = time.perf_counter() - t
        runs = cell_runs(cluster_env["DAGSTER_HOME"], cluster_env)
        on_cluster = summary(runs)
        launch = []
        for r in runs:
            job = folder / "runs" / f"dagster-run-{r['run_id']}" / "job.json"
            launch.append(r["start"] - job.stat().st_mtime)
        on_cluster["launch"] = statistics.median(launch)
    finally:
        lab("cluster", "down", "--dir", str(folder), cwd=base, env=clean)

    print(
        f"sweep `{target.name}`, {embedded['cells']} cells; load at start {load[0]:.1f}, {load[1]:.1f}, {load[2]:.1f}; "
        f"`lab cluster up` {up_seconds:.1f} s\n"
    )
    print("| path | wall (s) | per-cell overhead, median (s) | + launch, median (s) | cell runs at once (max) |")
    print("|---|---:|---:|---:|---:|")
    print(
        f"| embedded default (`lab sweep run`, 2 workers) | {embedded_wall:.1f} | {embedded['overhead']:.2f} | - | {embedded['overlap']} |"
    )
    print(
        f"| one-machine cluster (`--submit`, a process per run) | {cluster_wall:.1f} | {on_cluster['overhead']:.2f} | "
        f"{on_cluster['launch']:.2f} | {on_cluster['overlap']} |"
    )


if __name__ == "__main__":
    main()
