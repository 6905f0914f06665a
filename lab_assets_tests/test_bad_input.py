"""Issue #3's bad-input list, end to end: each case is a clear, named error or a documented fallback
that is recorded where the user looks (metadata, a null with its reason), never a wrong number."""

import dagster as dg
import numpy as np
import pandas as pd
import pytest

from lab_assets.core import keys, storage
from lab_assets.dr.metrics import METRICS, NotApplicable
from lab_assets.dr.metrics.neighbors import Neighborhoods
from lab_assets.dr.sweep import load_sweep
from lab_assets.runner.sweeps import materialize_sweep
from lab_assets.runtime.instance import get_instance


def latest(asset: str, partition: str):
    records = get_instance().fetch_materializations(dg.AssetKey(asset), limit=100).records
    return [r for r in records if r.asset_materialization.partition == partition][0].asset_materialization.metadata


def test_quirky_but_legal_data_is_recorded_not_refused(lab):
    """A constant column, duplicate rows, no labels, a 1-d embedding: the sweep completes; the
    quirks are in the dataset's metadata; undefined metrics are null with the reason."""
    g = np.random.default_rng(0)
    X = np.c_[g.normal(size=(120, 3)), np.full(120, 7.0)]  # x3 is constant
    X[60:70] = X[0:10]  # ten duplicate rows
    pd.DataFrame(X, columns=list("abcd")).to_csv(lab / "quirky.csv", index=False)
    (lab / "sweeps" / "quirky.yaml").write_text(
        "name: quirky\ndata:\n  file: {path: quirky.csv}\nseeds: [0]\n"
        "methods:\n  pca: {n_components: 1}\n"
        "metrics:\n  trustworthiness: {k: [5]}\n  lid: {k: [5]}\n  silhouette: {}\n"
        "  persistent_homology: {n_points: 50}\n"
    )
    sweep = load_sweep(lab / "sweeps" / "quirky.yaml")
    result = materialize_sweep(sweep, workers=1)
    assert not result.failed, result.failed

    (cell,) = [keys.cell_key(d, m) for d, m in sweep.cells]
    meta = latest("dataset", cell)  # a dataset is partitioned by the cell that reads it
    assert meta["constant_columns"].value == ["x3"]
    assert meta["duplicate_rows"].value == 10

    assert latest("embedding", cell)["n_components"].value == 1
    row = storage.read_parquet(storage.asset_path("metrics", cell)).iloc[0]
    assert 0 < row["trustworthiness@k=5"] <= 1  # a 1-d embedding is scored like any other
    assert np.isnan(row["lid@k=5,space=embedding"]) and np.isnan(row["silhouette@n_points=5000,space=embedding"])
    meta = latest("metrics", cell)
    # The quadratic metric ran on a seeded sample, and says so.
    assert meta["subsampled"].value == {
        "persistent_homology@dim=1,n_points=50,space=embedding,summary=total_persistence,threshold=None": {
            "points": 50,
            "of": 120,
            "seed": 0,
            "stream": "persistent_homology",
        }
    }
    reasons = meta["not_applicable"].value
    assert "duplicate points" in reasons["lid@k=5,space=embedding"]
    assert "no labels" in reasons["silhouette@n_points=5000,space=embedding"]


@pytest.mark.parametrize(
    "case, build, error",
    [
        (
            "NaN in data",
            lambda X, Z: (np.where(np.arange(50)[:, None] == 4, np.nan, X), Z, 5),
            r"X \(data\) has non-finite values .* first at row 4",
        ),
        (
            "inf in embedding",
            lambda X, Z: (X, np.where(np.arange(50)[:, None] == 2, np.inf, Z), 5),
            r"Z \(embedding\) has non-finite values",
        ),
        ("fewer points than k", lambda X, Z: (X, Z, 50), "k=50 needs at least 51 points, the dataset has 50"),
        ("a 1-d array as embedding", lambda X, Z: (X, Z[:, 0], 5), r"Z \(embedding\) must be a 2-D array"),
    ],
)
def test_named_errors(case, build, error):
    g = np.random.default_rng(1)
    X = g.normal(size=(50, 4))
    with pytest.raises(ValueError, match=error):
        Neighborhoods(*build(X, X[:, :2]))


def test_undefined_metrics_say_why():
    g = np.random.default_rng(2)
    X = g.normal(size=(40, 3))
    flat = Neighborhoods(X, np.zeros((40, 1)) + np.arange(40)[:, None] % 2, k_max=5)  # 2 distinct values
    with pytest.raises(NotApplicable, match="duplicate points"):
        METRICS["lid"](flat, k=5)
    with pytest.raises(NotApplicable, match="no labels"):
        METRICS["silhouette"](flat)
