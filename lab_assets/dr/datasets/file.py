"""A user's own table: CSV, Parquet or NPY, with an optional label column."""

from __future__ import annotations

import hashlib
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd

from lab_assets.core import storage
from lab_assets.core.registry import Shape
from lab_assets.core.settings import resolve_path
from lab_assets.dr.datasets import DATASETS, Raw

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
    return pd.read_csv(p) if suffix == ".csv" else storage.parquet_frame(p)


def _problems(table: pd.DataFrame, path: str, label_column: str | None) -> dict[str, str]:
    """{parameter: why} for a table that cannot be this dataset (shared by the plan-time check and
    the dataset itself)."""
    if label_column is not None and label_column not in table.columns:
        columns = ", ".join(map(str, table.columns))
        return {"label_column": f"file dataset {path!r}: no label column {label_column!r}; columns: {columns}"}
    features = table.drop(columns=[label_column]) if label_column is not None else table
    bad = [str(c) for c in features.columns if not pd.api.types.is_numeric_dtype(features[c])]
    if bad:
        return {"path": f"file dataset {path!r}: non-numeric feature columns: {', '.join(bad)}"}
    if features.shape[1] == 0:
        return {"path": f"file dataset {path!r}: no feature columns"}
    return {}


@lru_cache(maxsize=16)
def _inspect(path: str, label_column: str | None, stamp: tuple) -> tuple[Shape, dict[str, str]]:
    try:
        table = _read_table(path)
    except Exception as e:  # unreadable, wrong format, a 1-d .npy, ...: the dataset would fail alike
        return Shape(), {"path": str(e)}
    problems = _problems(table, path, label_column)
    return Shape(len(table), table.shape[1] - (label_column is not None)), problems


def _stamp(path: str) -> tuple:
    try:
        st = resolve_path(path).stat()
    except OSError:
        return ()
    return (st.st_mtime_ns, st.st_size)


def _file_shape(params: dict[str, Any]) -> Shape:
    """Known as soon as the file is: read when the sweep is planned (cached per file state)."""
    return _inspect(params["path"], params.get("label_column"), _stamp(params["path"]))[0]


def _file_limits(params: dict[str, Any], shape: Shape) -> dict[str, str]:
    return _inspect(params["path"], params.get("label_column"), _stamp(params["path"]))[1]


@DATASETS("file", packages=["pandas", "pyarrow"], fingerprint=_content_hash, shape=_file_shape, limits=_file_limits)
def file(rng: np.random.Generator, *, path: str, label_column: str | None = None) -> Raw:
    """Rows of a .csv/.parquet/.npy file (relative paths are under the project folder). Every
    column but `label_column` must be numeric; for .npy, columns are named "0", "1", ..."""
    table = _read_table(path)
    problems = _problems(table, path, label_column)
    if problems:
        raise ValueError(next(iter(problems.values())))
    labels = None
    if label_column is not None:
        labels = table.pop(label_column).to_numpy()
        if not np.issubdtype(labels.dtype, np.number):
            labels = pd.factorize(labels, sort=True)[0]  # class names -> class ids
    return Raw(table.to_numpy(dtype=np.float64), labels)
