"""A user's own table: CSV, Parquet or NPY, with an optional label column."""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
import pandas as pd

from lab_assets.dr.datasets import DATASETS, Raw
from lab_assets.core.settings import resolve_path

FORMATS = (".csv", ".parquet", ".npy")


def _content_hash(params: dict[str, Any]) -> str:
    # The parameters name the file; its bytes are what the results depend on, so an edited
    # file makes its cells stale even though its path is unchanged.
    h = hashlib.sha256()
    with open(_checked_path(params["path"]), "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _checked_path(path: str):
    p = resolve_path(path)
    if p.suffix.lower() not in FORMATS:
        raise ValueError(f"file dataset {path!r}: unsupported format {p.suffix!r}; allowed: {', '.join(FORMATS)}")
    if not p.is_file():
        raise FileNotFoundError(f"file dataset {path!r}: no such file ({p})")
    return p


def _read_table(path: str) -> pd.DataFrame:
    p = _checked_path(path)
    suffix = p.suffix.lower()
    if suffix == ".npy":
        array = np.load(p, allow_pickle=False)  # never unpickle a user's file
        if array.ndim != 2:
            raise ValueError(f"file dataset {path!r}: expected a 2-d array, got shape {array.shape}")
        return pd.DataFrame(array, columns=[str(i) for i in range(array.shape[1])])
    return pd.read_csv(p) if suffix == ".csv" else pd.read_parquet(p)


@DATASETS("file", packages=["pandas", "pyarrow"], fingerprint=_content_hash)
def file(
    rng: np.random.Generator, *, path: str, label_column: str | None = None
) -> Raw:
    """Rows of a .csv/.parquet/.npy file (relative paths are under the project folder). Every
    column but `label_column` must be numeric; for .npy, columns are named "0", "1", ..."""
    table = _read_table(path)
    labels = None
    if label_column is not None:
        if label_column not in table.columns:
            raise ValueError(
                f"file dataset {path!r}: no label column {label_column!r}; columns: {', '.join(map(str, table.columns))}"
            )
        labels = table.pop(label_column).to_numpy()
        if not np.issubdtype(labels.dtype, np.number):
            labels = pd.factorize(labels, sort=True)[0]  # class names -> class ids
    bad = [str(c) for c in table.columns if not pd.api.types.is_numeric_dtype(table[c])]
    if bad:
        raise ValueError(f"file dataset {path!r}: non-numeric feature columns: {', '.join(bad)}")
    if table.shape[1] == 0:
        raise ValueError(f"file dataset {path!r}: no feature columns")
    return Raw(table.to_numpy(dtype=np.float64), labels)
