"""Single-cell data at scale (issue 42): a synthetic sparse AnnData of 10^5 cells x 2*10^4 genes at
~2 % density (counts, 10 cell types with their own marker genes) through `lab sweep run`: the
recipe in the dataset step (normalize_total, log1p, 2,000 highly variable genes, 50 PCs), PCA and
UMAP, kNN metrics at k = 15. Wall time and peak memory of the whole process tree, and the share of
the dataset step (reading the file and the recipe). Also `lab sweep plan` before and after the
file's content hash is kept (a second plan does not read the file again).

    python benchmarks/h5ad_scale.py                  # 100,000 cells (writes the file once, ~0.5 GB)
    python benchmarks/h5ad_scale.py --cells 20000    # smaller

Prints JSON (and a Markdown table for BENCHMARKS.md).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import measure  # noqa: E402
from run_all import LAB, PY, machine, project  # noqa: E402

GENES, DENSITY, TYPES, MARKERS = 20_000, 0.02, 10, 200

SWEEP = """name: cells
data:
  h5ad: {{path: {path}, label: cell_type, normalize_total: 10000.0, log1p: true, n_top_genes: 2000, n_pcs: 50}}
seeds: [0]
methods:
  pca: {{}}
  umap: {{n_neighbors: 15}}
metrics:
  trustworthiness: {{k: [15]}}
  knn_preservation: {{k: [15]}}
"""


def write_counts(path: Path, cells: int, seed: int = 0) -> None:
    """Counts at ~DENSITY: background genes at random, plus each cell type's marker genes."""
    import anndata as ad
    import numpy as np
    import pandas as pd
    from scipy import sparse

    g = np.random.default_rng(seed)
    per_cell = int(GENES * DENSITY)
    kind = g.integers(0, TYPES, size=cells)
    background = g.integers(0, GENES, size=(cells, per_cell - 40), dtype=np.int64)
    markers = kind[:, None] * MARKERS + g.integers(0, MARKERS, size=(cells, 40))
    keys = np.unique((np.arange(cells)[:, None] * GENES + np.hstack([background, markers])).ravel())
    rows, cols = np.divmod(keys, GENES)
    values = 1 + g.poisson(np.where(cols < TYPES * MARKERS, 4.0, 0.5)).astype(np.float32)
    X = sparse.csr_matrix((values, cols.astype(np.int32), np.searchsorted(rows, np.arange(cells + 1))), (cells, GENES))
    with warnings.catch_warnings(), pd.option_context("future.infer_string", False):
        # anndata 0.12.6 writes plain object strings only (test_h5ad.py's `written`).
        warnings.simplefilter("ignore", pd.errors.Pandas4Warning)
        obs = pd.DataFrame(
            {"cell_type": pd.Categorical.from_codes(kind, [f"type {t}" for t in range(TYPES)])},
            index=[f"c{i}" for i in range(cells)],
        )
        ad.AnnData(X, obs=obs, var=pd.DataFrame(index=[f"g{j}" for j in range(GENES)])).write_h5ad(path)


def step_seconds(env: dict, folder: Path) -> dict[str, float]:
    """Each asset's summed `wall_seconds` over the run, from its materializations."""
    code = (
        "import json, dagster as dg; from lab_assets.runtime.instance import get_instance; i = get_instance(); "
        "print(json.dumps({a: sum(r.asset_materialization.metadata['wall_seconds'].value for r in "
        "i.fetch_materializations(dg.AssetKey(a), limit=100).records) "
        "for a in ['raw_dataset', 'dataset', 'embedding', 'metrics']}))"
    )
    return json.loads(measure.run([PY, "-c", code], env, folder).stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cells", type=int, default=100_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--file", default=None, help="where the synthetic .h5ad is kept between runs")
    args = parser.parse_args()
    path = Path(args.file or Path(tempfile.gettempdir()) / f"lab-bench-cells-{args.cells}.h5ad")
    out: dict = {"machine": machine(), "cells": args.cells, "genes": GENES, "file": str(path)}
    if not path.exists():
        start = time.perf_counter()
        write_counts(path, args.cells)
        out["write_file_s"] = round(time.perf_counter() - start, 1)
    out["file_gib"] = round(path.stat().st_size / 2**30, 3)
    with open("/proc/loadavg") as f:
        out["load_before"] = f.read().split()[0]
    with project(SWEEP.format(path=path), "cells") as (folder, env, sweep):
        first = measure.run([*LAB, "sweep", "plan", sweep], env, folder)
        again = measure.run([*LAB, "sweep", "plan", sweep], env, folder)
        out["plan_first_s"], out["plan_hash_kept_s"] = round(first.seconds, 2), round(again.seconds, 2)
        run = measure.run([*LAB, "sweep", "run", sweep, "--workers", str(args.workers)], env, folder, timeout=7200)
        out["run_s"], out["peak_rss_gib"] = round(run.seconds, 1), round(run.peak_rss_gib, 2)
        steps = step_seconds(env, folder)
        out["steps_s"] = {k: round(v, 1) for k, v in steps.items()}
        out["dataset_step_share"] = round((steps["raw_dataset"] + steps["dataset"]) / run.seconds, 3)
    with open("/proc/loadavg") as f:
        out["load_after"] = f.read().split()[0]
    print(json.dumps(out, indent=2))
    print(
        f"| {args.cells:,} x {GENES:,}, {DENSITY:.0%} | {out['run_s']} s | {out['peak_rss_gib']} GiB | "
        f"{out['dataset_step_share']:.0%} | plan {out['plan_first_s']} s -> {out['plan_hash_kept_s']} s |"
    )


if __name__ == "__main__":
    main()
