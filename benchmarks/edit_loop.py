"""The edit loop on a compute-heavy sweep (issue #29): the first run, then the edits researchers
make, each followed by `lab sweep run`, timed against the first run measured in the same run.

The package is copied into a temporary git repository (the project folder), so code edits are
real edits of real files. Edits, in order: add a metric to the sweep; edit that metric's module;
remove it again; edit a method's parameter; edit a method's code; edit the shared kNN code. For
each: wall seconds, the ratio to the first run, the cells whose embedding step ran, the metric
columns computed and carried (from the `metrics` materializations' metadata), and how many cells
of an unrelated sweep the edit made stale (goal: 0). The no-op and `lab report` are timed too,
the yardstick for removing a metric.

    python benchmarks/edit_loop.py [--repeats 1] [--samples 2500] [--service]

`--service`: with the warm service (`LAB_SERVICE=1`), as `lab` runs in a researcher's terminal;
without it, as in scripts and CI (each command loads Dagster and starts its workers).

Prints JSON (and one table line per step on stderr).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable

HEAVY = """name: heavy
data:
  swissroll: {{n_samples: {n}, noise: 0.05}}
  s_curve: {{n_samples: {n}}}
seeds: [0, 1]
methods:
  tsne: {{perplexity: 30}}
  umap: {{n_neighbors: 15}}
metrics:
  trustworthiness: {{k: [10, 30]}}
  continuity: {{k: [10]}}
"""
OTHER = """name: other
data:
  gaussian_blobs: {n_samples: 300, n_features: 5, centers: 3}
seeds: [0]
methods:
  pca: {}
metrics:
  trustworthiness: {k: [10]}
"""
LID = "  lid: {k: [10]}\n"


def sh(folder: Path, *args: str) -> str:
    return subprocess.run(list(args), cwd=folder, capture_output=True, text=True, check=True).stdout


def lab(folder: Path, env: dict, *args: str) -> tuple[float, str]:
    start = time.perf_counter()
    out = subprocess.run([PY, "-m", "lab_assets.cli.main", *args], cwd=folder, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if out.returncode != 0:
        raise SystemExit(f"lab {' '.join(args)} failed:\n{out.stderr[-3000:]}")
    return seconds, out.stdout


def metrics_columns(folder: Path, env: dict, after: float) -> dict[str, int]:
    """Counts of metric columns computed / carried, and cells whose embedding step ran, by the
    materializations stored after `after` (epoch seconds)."""
    code = """
import json, sys
import dagster as dg
from lab_assets.runtime.instance import get_instance
after = float(sys.argv[1]); out = {"computed": 0, "carried": 0, "embeddings": 0, "metrics_steps": 0}
inst = get_instance()
for asset in ("embedding", "metrics"):
    for r in inst.fetch_materializations(dg.AssetKey(asset), limit=1000).records:
        if r.timestamp <= after:
            continue
        if asset == "embedding":
            out["embeddings"] += 1
            continue
        out["metrics_steps"] += 1
        for c in r.asset_materialization.metadata["columns"].value.values():
            out[c["status"]] += 1
print(json.dumps(out))
"""
    out = subprocess.run([PY, "-c", code, str(after)], cwd=folder, env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def stale_cells(folder: Path, env: dict, sweep: str) -> int:
    plan = json.loads(lab(folder, env, "sweep", "plan", f"sweeps/{sweep}.yaml", "--json")[1])
    return sum(c["status"] != "fresh" for c in plan["cells"])


def edit_file(path: Path) -> None:
    path.write_text(path.read_text() + "\n# an edit\n")


def one_pass(samples: int, service: bool) -> dict:
    folder = Path(tempfile.mkdtemp(prefix="lab-edit-loop-"))
    env = {
        **os.environ,
        "PYTHONPATH": str(folder),
        "LAB_PROJECT_DIR": str(folder),
        "LAB_HOME": str(folder / ".lab"),
        "LAB_SERVICE": "1" if service else "0",
    }
    for var in ("DAGSTER_HOME", "LAB_STORAGE_URL", "LAB_STORAGE_OPTIONS", "LAB_EXECUTOR"):
        env.pop(var, None)
    try:
        shutil.copytree(ROOT / "lab_assets", folder / "lab_assets", ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copyfile(ROOT / "dagster.yaml", folder / "dagster.yaml")
        (folder / "sweeps").mkdir()
        heavy = folder / "sweeps" / "heavy.yaml"
        heavy.write_text(HEAVY.format(n=samples))
        (folder / "sweeps" / "other.yaml").write_text(OTHER)
        (folder / ".gitignore").write_text(".lab/\n__pycache__/\n")
        git = ["git", "-c", "user.name=b", "-c", "user.email=b@example.org"]
        sh(folder, *git, "init", "-q", "-b", "main")
        sh(folder, *git, "add", ".")
        sh(folder, *git, "commit", "-q", "-m", "bench")
        run = ["sweep", "run", "sweeps/heavy.yaml", "--quiet"]

        steps: dict[str, dict] = {}
        lab(folder, env, "sweep", "run", "sweeps/other.yaml", "--quiet")

        def timed(name: str, edit=None) -> None:
            if edit is not None:
                edit()
            mark = time.time()
            seconds, _ = lab(folder, env, *run)
            steps[name] = {
                "seconds": round(seconds, 2),
                **metrics_columns(folder, env, mark),
                "other_sweep_stale_cells": stale_cells(folder, env, "other"),
            }

        timed("first run")
        steps["no-op"] = {"seconds": round(lab(folder, env, *run)[0], 2)}
        steps["lab report"] = {"seconds": round(lab(folder, env, "report", "sweeps/heavy.yaml")[0], 2)}
        text = heavy.read_text()
        timed("add a metric (lid)", lambda: heavy.write_text(text + LID))
        timed("edit its code (metrics/lid.py)", lambda: edit_file(folder / "lab_assets" / "dr" / "metrics" / "lid.py"))
        timed("remove it", lambda: heavy.write_text(text))
        timed(
            "edit a method's parameter (umap n_neighbors)",
            lambda: heavy.write_text(text.replace("n_neighbors: 15", "n_neighbors: 20")),
        )
        timed(
            "edit a method's code (methods/tsne.py)",
            lambda: edit_file(folder / "lab_assets" / "dr" / "methods" / "tsne.py"),
        )
        timed(
            "edit the shared kNN code (metrics/neighbors.py)",
            lambda: edit_file(folder / "lab_assets" / "dr" / "metrics" / "neighbors.py"),
        )
        return steps
    finally:
        if service:
            subprocess.run(
                [PY, "-m", "lab_assets.cli.main", "service", "stop"], cwd=folder, env=env, capture_output=True
            )
        shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--samples", type=int, default=2500, help="points per dataset")
    parser.add_argument("--service", action="store_true", help="with the warm service, as in a terminal")
    args = parser.parse_args()
    passes = [one_pass(args.samples, args.service) for _ in range(args.repeats)]
    out: dict[str, dict] = {}
    for name in passes[0]:
        seconds = statistics.median(p[name]["seconds"] for p in passes)
        first = statistics.median(p["first run"]["seconds"] for p in passes)
        out[name] = {**passes[0][name], "seconds": seconds, "ratio_to_first_run": round(seconds / first, 3)}
        row = out[name]
        print(
            f"{name:<50} {seconds:7.2f} s  {row['ratio_to_first_run']:.3f}x  embeddings {row.get('embeddings', '-')}  "
            f"columns computed {row.get('computed', '-')} carried {row.get('carried', '-')}  "
            f"other sweep stale {row.get('other_sweep_stale_cells', '-')}",
            file=sys.stderr,
        )
    print(
        json.dumps(
            {
                "samples": args.samples,
                "repeats": args.repeats,
                "service": args.service,
                "cpus": os.cpu_count(),
                "steps": out,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
