"""Blocking asset checks: what each downstream step may assume about its input.

They run inside the asset that produces the file (no extra step, no second read), are declared
as `check_specs` so the UI lists them per partition, and are blocking: in the same run a failed
check stops the steps downstream of it (a dataset's run fails, so `lab sweep run` skips its
cells; a bad embedding never reaches `metrics`).
"""

import dagster as dg
import numpy as np
import pandas as pd

from lab_assets.dr.metrics import METRICS
from lab_assets.dr.sweep import MetricConfig

DATASET_CHECKS = {
    "schema": "columns are row (int64), split, label, [label_name], then x0..x{d-1} (float64) or the sparse "
    "form x_indices, x_values (float64), x_width",
    "finite_features": "no NaN or inf in any feature",
    "splits_non_empty": "the split column holds 'train' and 'test' rows, nothing else",
    "row_count": "every raw row is present once, in order",
}
EMBEDDING_CHECKS = {"finite_and_shaped": "one finite row of n_components per dataset row"}
METRIC_CHECKS = {"values_in_range": "every metric value is finite and inside its mathematical range"}


def specs(asset: str, checks: dict[str, str]) -> list[dg.AssetCheckSpec]:
    return [dg.AssetCheckSpec(name, asset=asset, blocking=True, description=text) for name, text in checks.items()]


def _result(name: str, passed: bool, **metadata) -> dg.AssetCheckResult:
    return dg.AssetCheckResult(check_name=name, passed=bool(passed), metadata=metadata)


def check_dataset(df: pd.DataFrame, raw_rows: int) -> list[dg.AssetCheckResult]:
    names = ["label_name"] if "label_name" in df.columns else []
    if "x_indices" in df.columns:  # the sparse form (defs/assets/datasets.py)
        features = ["x_indices", "x_values", "x_width"]
        values = [np.asarray(v) for v in df["x_values"]]
        typed = all(v.dtype == np.float64 for v in values) and df["x_width"].dtype == np.int32
        bad = sum(not np.isfinite(v).all() for v in values)
    else:
        features = [c for c in df.columns if c.startswith("x")]
        typed = all(df[c].dtype == np.float64 for c in features)
        bad = int((~np.isfinite(df[features].to_numpy())).any(axis=1).sum())
        features = [f"x{j}" for j in range(len(features))]
    schema = list(df.columns) == ["row", "split", "label", *names, *features] and df["row"].dtype == np.int64 and typed
    counts = df["split"].value_counts()
    splits = set(counts.index) == {"train", "test"}
    rows = len(df) == raw_rows and bool((df["row"].to_numpy() == np.arange(len(df))).all())
    return [
        _result("schema", schema, columns=", ".join(df.columns[:8]) + (" ..." if len(df.columns) > 8 else "")),
        _result("finite_features", bad == 0, rows_with_non_finite=bad),
        _result("splits_non_empty", splits, **{f"{k}_rows": int(v) for k, v in counts.items()}),
        _result("row_count", rows, rows=len(df), raw_rows=raw_rows),
    ]


def check_embedding(Z: np.ndarray, rows: int, n_components: int | None) -> list[dg.AssetCheckResult]:
    shaped = Z.ndim == 2 and Z.shape[0] == rows and (n_components is None or Z.shape[1] == n_components)
    finite = bool(np.isfinite(Z).all())
    return [_result("finite_and_shaped", shaped and finite, shape=str(Z.shape), expected_rows=rows, finite=finite)]


def check_metrics(
    suite: list[MetricConfig], values: dict[str, float], not_applicable: dict[str, str]
) -> list[dg.AssetCheckResult]:
    """Every value is in range, except the ones recorded as not applicable (null, with a reason)."""
    outside = {
        m.column: values[m.column]
        for m in suite
        if m.column not in not_applicable and not METRICS[m.metric].in_range(values[m.column])
    }
    return [
        _result("values_in_range", not outside, outside=dg.MetadataValue.json({k: str(v) for k, v in outside.items()}))
    ]
