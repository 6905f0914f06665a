"""The platform's own time per cell: a sweep of a trivial method, run in this process (one
worker, so no contention), each cell's Dagster run wall time minus the compute its assets
report (`wall_seconds` metadata of embedding and metrics). Prints JSON.

    LAB_HOME=... LAB_PROJECT_DIR=... python benchmarks/overhead.py SWEEP
"""

import json
import statistics
import sys

import dagster as dg


def compute_seconds(instance, asset: str) -> dict[str, float]:
    records = instance.fetch_materializations(dg.AssetKey(asset), limit=10_000).records
    return {r.asset_materialization.partition: r.asset_materialization.metadata["wall_seconds"].value for r in records}


def main(path: str) -> dict:
    from lab_assets.defs.jobs import CELLS
    from lab_assets.dr.sweep import load_sweep
    from lab_assets.runner.run import MATERIALIZED
    from lab_assets.runner.sweeps import materialize_sweep
    from lab_assets.runtime.instance import get_instance

    result = materialize_sweep(load_sweep(path), workers=1)
    assert not result.failed, result.failed
    instance = get_instance()
    embedding, metrics = compute_seconds(instance, "embedding"), compute_seconds(instance, "metrics")
    cells = result.of(MATERIALIZED, CELLS)
    overhead = [o.seconds - embedding[o.partition] - metrics[o.partition] for o in cells]
    return {
        "cells": len(cells),
        "median_overhead_s": statistics.median(overhead),
        "median_cell_wall_s": statistics.median(o.seconds for o in cells),
        "median_compute_s": statistics.median(embedding[o.partition] + metrics[o.partition] for o in cells),
    }


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1])))
