"""A cell declared by two sweeps (same dataset config, seed and method config) is computed once,
and each sweep's report holds its own cells, the shared one with the same numbers."""

import dagster as dg

from lab_assets.core import keys, storage
from lab_assets.defs.assets.reports import report_dir
from lab_assets.defs.freshness import FRESH, MISSING
from lab_assets.dr.sweep import parse_sweep
from lab_assets.runner.sweeps import materialize_sweep, register_and_plan
from lab_assets.runtime.instance import get_instance

METRICS = "metrics:\n  trustworthiness: {k: [5, 10]}\n"
FIRST = (
    "name: first\ndata:\n  swissroll: {n_samples: 120, noise: 0.05}\nseeds: [0, 1]\nmethods:\n  pca: {}\n  isomap: {n_neighbors: 12}\n"
    + METRICS
)
SECOND = (
    "name: second\ndata:\n  swissroll: {n_samples: 120, noise: 0.05}\nseeds: [0]\nmethods:\n  pca: {}\n  isomap: {n_neighbors: 20}\n"
    + METRICS
)


def _report(name: str):
    return storage.read_parquet(f"{report_dir(name)}/metrics.parquet").set_index("partition")


def _materialization_count(asset: str, partition: str) -> int:
    key = dg.MultiPartitionKey(dict(zip(("data", "method"), keys.parse_cell_key(partition))))
    records = (
        get_instance()
        .fetch_materializations(dg.AssetRecordsFilter(dg.AssetKey(asset), asset_partitions=[str(key)]), limit=10)
        .records
    )
    return len(records)


def test_a_cell_shared_by_two_sweeps_is_computed_once_and_reported_by_both(lab, single_threaded):
    first, second = parse_sweep(FIRST, "sweeps/first.yaml"), parse_sweep(SECOND, "sweeps/second.yaml")
    first_cells = {keys.cell_key(d, m) for d, m in first.cells}
    second_cells = {keys.cell_key(d, m) for d, m in second.cells}
    [shared] = first_cells & second_cells  # seed 0 x pca
    assert materialize_sweep(first, workers=1).ok

    plan = register_and_plan(second)
    status = {c.partition: c.status for c in plan.cells}
    assert status == {shared: FRESH, next(iter(second_cells - {shared})): MISSING}
    assert materialize_sweep(second, workers=1).ok
    assert _materialization_count("embedding", shared) == 1  # not computed again for the second sweep

    a, b = _report("first"), _report("second")
    assert set(a.index) == first_cells and set(b.index) == second_cells  # each its own cells, no other
    metric_columns = ["trustworthiness@k=5", "trustworthiness@k=10"]
    assert a.loc[shared, metric_columns].tolist() == b.loc[shared, metric_columns].tolist()

    table = storage.read_parquet(storage.asset_path("metric_table"))
    assert sorted(table["partition"]) == sorted(first_cells | second_cells)  # once each
    # Neither sweep made the other's cells stale: both fully fresh.
    assert all(c.status == FRESH for s in (first, second) for c in register_and_plan(s).cells)
