"""The slow target (`python3 run.py test-slow`): the bundled sweeps at full size (dr_benchmark with one
seed of three), end to end, with every cell's kNN metrics checked against an independent
computation from the stored files, and a 1,000-cell run of a trivial method (plan, run, no-op re-run)."""

import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pandas as pd
import pytest
from sklearn.manifold import trustworthiness as sk_trustworthiness
from sklearn.neighbors import NearestNeighbors

from benchmarks.run_all import SCALING_SWEEP  # the performance suite's 1,000 cells
from lab_assets.core import keys, storage
from lab_assets.defs.freshness import DAMAGED, FRESH, MISSING, STALE, plan_sweep
from lab_assets.dr.sweep import load_sweep
from lab_assets.runner.local import definitions
from lab_assets.runner.sweeps import materialize_sweep
from lab_assets.runtime.instance import get_instance
from lab_assets_tests.conftest import REPO

pytestmark = pytest.mark.slow


def plan(sweep):
    return plan_sweep(sweep, get_instance(), definitions().resolve_asset_graph())


def knn_sets(A: np.ndarray, k: int) -> np.ndarray:
    idx = NearestNeighbors(n_neighbors=k + 1).fit(A).kneighbors(A, return_distance=False)
    return idx[:, 1:]


def reference_preservation(X, Z, k) -> float:
    a, b = knn_sets(X, k), knn_sets(Z, k)
    return float(np.mean([len(set(r) & set(s)) / k for r, s in zip(a, b)]))


def reference_values(dataset: str, embedding: str, ks: list[int]) -> dict[str, float]:
    """{column: value} from the stored dataset and embedding files, by scikit-learn and
    `reference_preservation`."""
    from threadpoolctl import threadpool_limits

    X = pd.read_parquet(dataset).filter(regex=r"^x\d+$").to_numpy()
    Z = pd.read_parquet(embedding).filter(regex=r"^z\d+$").to_numpy()
    assert np.isfinite(Z).all(), embedding
    with threadpool_limits(1):  # one process per core (check_table)
        return {
            column: value
            for k in ks
            for column, value in (
                (f"trustworthiness@k={k}", sk_trustworthiness(X, Z, n_neighbors=k)),
                (f"continuity@k={k}", sk_trustworthiness(Z, X, n_neighbors=k)),
                (f"knn_preservation@k={k}", reference_preservation(X, Z, k)),
            )
        }


def check_table(sweep, ks: list[int]):
    """Every cell's trustworthiness, continuity and kNN preservation against scikit-learn,
    recomputed from the stored dataset and embedding files (not from the code under test), the
    cells spread over two processes (the check was a fifth of the 60-cell sweep's test)."""
    table = pd.read_parquet(storage.asset_path("metric_table"))
    cells = {keys.cell_key(d, m) for d, m in sweep.cells}
    table = table[table["partition"].isin(cells)]
    assert set(table["partition"]) == cells and len(table) == len(cells)
    rows = [row for _, row in table.iterrows()]
    paths = [(storage.asset_path("dataset", r["data"]), storage.asset_path("embedding", r["partition"])) for r in rows]
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        references = list(pool.map(reference_values, *zip(*paths), [ks] * len(rows)))
    checked = 0
    for row, reference in zip(rows, references):
        for column, value in reference.items():
            assert row[column] == pytest.approx(value, abs=1e-9), (row["partition"], column)
            checked += 1
    return table, checked


# dr_benchmark with the first of its three seeds: its 2,000 points, methods and k as shipped (20 of its
# 60 cells; the other seeds' cells take the same code paths and cost 2.5 min of CI's 2 cores).
ONE_SEED = ("seeds: [0, 1, 2]", "seeds: [0]")


@pytest.mark.parametrize(
    "name,ks,seeds", [("demo", [10, 30], None), ("dr_benchmark", [15, 50, 100], ONE_SEED)], ids=["demo", "dr_benchmark"]
)
def test_bundled_sweep_full_size(lab, name, ks, seeds):
    text = (REPO / "sweeps" / f"{name}.yaml").read_text()
    if seeds:
        assert seeds[0] in text, f"sweeps/{name}.yaml: its seeds are not {seeds[0]!r} any more"
        text = text.replace(*seeds)
    (lab / "sweeps" / f"{name}.yaml").write_text(text)
    sweep = load_sweep(lab / "sweeps" / f"{name}.yaml")
    n = len(sweep.cells)
    assert plan(sweep).counts == {MISSING: n, STALE: 0, DAMAGED: 0, FRESH: 0}
    result = materialize_sweep(sweep, workers=2)
    assert not result.failed and not result.skipped, [(o.partition, o.why) for o in result.failed + result.skipped]
    assert result.count("cells") == n and result.count("datasets") == len(sweep.data)  # counted by data key
    table, checked = check_table(sweep, ks)
    assert checked == 3 * len(ks) * n
    # The report of the sweep exists, and a re-run has nothing to do.
    assert (lab / ".lab" / "reports" / name / "metrics.parquet").stat().st_size > 0
    assert plan(sweep).counts == {MISSING: 0, STALE: 0, DAMAGED: 0, FRESH: n}
    if name == "demo":
        # reconstruction_error: a value for the invertible methods, null (with its reason) elsewhere.
        [column] = [c for c in table.columns if c.startswith("reconstruction_error")]
        recon = table.set_index("partition")[column]
        invertible = {p for p in recon.index if "|pca-" in p or "|autoencoder-" in p}
        assert invertible and recon[list(invertible)].notna().all() and (recon[list(invertible)] >= 0).all()
        assert recon.drop(list(invertible)).isna().all()


def test_one_thousand_cells(lab):
    (lab / "sweeps" / "scaling.yaml").write_text(SCALING_SWEEP)
    sweep = load_sweep(lab / "sweeps" / "scaling.yaml")
    assert len(sweep.cells) == 1000
    assert plan(sweep).counts == {MISSING: 1000, STALE: 0, DAMAGED: 0, FRESH: 0}
    result = materialize_sweep(sweep, workers=2)
    assert not result.failed and not result.skipped
    assert result.count("cells") == 1000 and result.count("datasets") == len(sweep.data)  # counted by data key
    # Every cell fresh afterwards (the late asset-row update once left ~5 in 1,000 stale).
    assert plan(sweep).counts == {MISSING: 0, STALE: 0, DAMAGED: 0, FRESH: 1000}
    table = pd.read_parquet(storage.asset_path("metric_table"))
    assert len(table) == 1000 and table["trustworthiness@k=5"].between(0, 1).all()
    # Spot-check values against scikit-learn from the stored files.
    for _, row in table.sample(20, random_state=0).iterrows():
        X = pd.read_parquet(storage.asset_path("dataset", row["data"])).filter(regex=r"^x\d+$").to_numpy()
        Z = pd.read_parquet(storage.asset_path("embedding", row["partition"])).filter(regex=r"^z\d+$").to_numpy()
        assert row["trustworthiness@k=5"] == pytest.approx(sk_trustworthiness(X, Z, n_neighbors=5), abs=1e-9)
    start = time.perf_counter()
    again = materialize_sweep(sweep, workers=2)
    assert {o.status for o in again.outcomes} == {FRESH} and again.count("cells", FRESH) == 1000
    assert time.perf_counter() - start < 120
