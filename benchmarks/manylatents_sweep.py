"""manylatents' Hydra multirun against the same sweep through `lab sweep run` (issue 44, item 4):
PCA, UMAP, PHATE and t-SNE x seeds 0-3 on a 1,000-point swiss roll, trustworthiness at k=5,
16 runs each, cold (a new working folder for manylatents, a new project and lab home here), no
warm service. Interleaved, the order alternating, medians; prints JSON with the ratio lab /
manylatents.

    python benchmarks/manylatents_sweep.py --manylatents PATH [--repeats 3] [--json OUT]

PATH: the `manylatents` command of a virtual environment of its own (it pins scipy<1.15 and
brings Hydra, Lightning, gudhi, igraph: never in this project's constraints). On the reference VM:
`python3 -m venv V; echo $PWD/.venv/lib/python3.11/site-packages > V/lib/python3.11/site-packages/lab.pth;
V/bin/pip install --prefer-binary manylatents==0.1.8 scipy==1.14.1` (torch and the other shared
libraries come from this project's environment, so no second torch is downloaded).

The same methods with manylatents' settings (its configs `algorithms/latent/*.yaml`): UMAP
n_neighbors 15, min_dist 0.5, 500 epochs (umap-learn's default at this size); PHATE knn 5, t 5,
decay 40; t-SNE perplexity 30 (here n_neighbors 90 = 3 x perplexity), 1,000 iterations (openTSNE
there, scikit-learn here); PCA 2 components. The data differ in kind: manylatents' swiss roll is 10
Gaussian blobs of 100 points on the roll, rotated into 100 dimensions; ours is scikit-learn's roll
in 3 (noise 0.2 both). W&B: manylatents' default logger is none; ours logs each cell offline by
default, and the `LAB_WANDB=off` row shows the sweep without it. UMAP's numba code: manylatents
compiles it in its one process; `lab` loads what an earlier sweep cached (dr/jit_cache.py), `lab,
first UMAP on the machine` deletes that cache first.
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
from cold_sweep import forget_umap_machine_code, lab_env  # noqa: E402
from run_all import LAB, project  # noqa: E402

SEEDS = [0, 1, 2, 3]
SWEEP = f"""name: manylatents_sweep
data:
  swissroll: {{n_samples: 1000, noise: 0.2}}
seeds: {SEEDS}
methods:
  pca: {{n_components: 2}}
  umap: {{n_neighbors: 15, min_dist: 0.5}}
  phate: {{n_neighbors: 5, t: 5, decay: 40}}
  tsne: {{n_neighbors: 90, max_iter: 1000}}
metrics:
  trustworthiness: {{k: [5]}}
"""
MULTIRUN = [
    "--multirun",
    "algorithms/latent=pca,umap,phate,tsne",
    "data=swissroll",
    "metrics=trustworthiness",
    f"seed={','.join(map(str, SEEDS))}",
]
RUNS = 16


def manylatents(command: str) -> float:
    folder = Path(tempfile.mkdtemp(prefix="manylatents-bench-"))
    try:
        env = {**os.environ, "WANDB_MODE": "disabled"}
        m = measure.run([command, *MULTIRUN], env, folder)
        # Its sweep folders: outputs/<date>/<time>/<job number> (manylatents' configs/hydra/default.yaml).
        jobs = [d for d in (folder / "outputs").glob("*/*/*") if d.is_dir() and d.name.isdigit()]
        if len(jobs) != RUNS:
            raise SystemExit(f"manylatents ran {len(jobs)} jobs, not {RUNS}:\n{m.stdout[-2000:]}")
        return m.seconds
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def lab(extra: dict) -> float:
    with project(SWEEP, "manylatents_sweep") as (folder, env, file):
        env = {**lab_env(env), **extra}
        m = measure.run([*LAB, "sweep", "run", file, "--quiet"], env, folder)
        cells = list((folder / ".lab" / "assets" / "metrics").glob("*/*.parquet"))
        if len(cells) != RUNS:
            raise SystemExit(f"lab sweep run left {len(cells)} metric rows, not {RUNS}")
        return m.seconds


def lab_first() -> float:
    """The first sweep that runs UMAP on a machine: its numba code not yet cached (dr/jit_cache.py)."""
    forget_umap_machine_code()
    return lab({})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--manylatents", required=True, help="the manylatents command of its own environment")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    sides = {
        "manylatents": lambda: manylatents(args.manylatents),
        "lab": lambda: lab({}),
        "lab, first UMAP on the machine": lab_first,
        "lab, LAB_WANDB=off": lambda: lab({"LAB_WANDB": "off"}),
    }
    walls: dict[str, list[float]] = {name: [] for name in sides}
    for i in range(args.repeats):
        order = list(sides) if i % 2 == 0 else list(reversed(sides))
        for name in order:
            walls[name].append(sides[name]())
            print(f"{name}: {walls[name][-1]:.1f} s (load {os.getloadavg()[0]:.2f})", file=sys.stderr, flush=True)
    medians = {name: statistics.median(w) for name, w in walls.items()}
    out = {
        "runs": walls,
        "median_s": medians,
        "lab_over_manylatents": medians["lab"] / medians["manylatents"],
        "lab_first_over_manylatents": medians["lab, first UMAP on the machine"] / medians["manylatents"],
        "lab_wandb_off_over_manylatents": medians["lab, LAB_WANDB=off"] / medians["manylatents"],
    }
    print(json.dumps(out, indent=2))
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
