"""Asset files: where each partition lives, and atomic writes.

A file is written under a temporary name, fsynced, then renamed into place (and the directory
fsynced), so a run killed at any moment leaves either the old complete file or the new complete
file, never a torn one that a later run would read as valid. Temporary names start with '.',
and nothing ever reads them.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from lab_assets.settings import lab_home


class MissingAssetError(FileNotFoundError):
    """An upstream asset file that should exist does not: the upstream partition must be
    materialized (again) first."""


def asset_dir(asset: str) -> Path:
    return lab_home() / "assets" / asset


def asset_path(asset: str, partition: str | None = None, suffix: str = ".parquet") -> Path:
    """`assets/<asset>/<data>/<method>.parquet` for a cell, `assets/<asset>/<data>.parquet` for a
    data key, `assets/<asset>.parquet` when unpartitioned. Multi-partition key strings are
    `<data>|<method>` (Dagster orders dimensions by name)."""
    if partition is None:
        return asset_dir(asset).with_suffix(suffix)
    return asset_dir(asset).joinpath(*partition.split("|")).with_suffix(suffix)


def atomic_write(path: Path, write: Callable[[Path], None]) -> Path:
    """Call `write(tmp)` on a temporary file beside `path`, then move it into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        write(tmp)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    return path


def write_parquet(path: Path, df: pd.DataFrame, metadata: dict[str, Any] | None = None) -> Path:
    """Write a table with its provenance as JSON in the Parquet footer (readable by any tool)."""
    table = pa.Table.from_pandas(df, preserve_index=False)
    if metadata:
        extra = {b"lab_assets": json.dumps(metadata, sort_keys=True, default=str).encode()}
        table = table.replace_schema_metadata({**(table.schema.metadata or {}), **extra})
    return atomic_write(path, lambda tmp: pq.write_table(table, tmp))


def read_parquet(path: Path, columns: list[str] | None = None) -> pd.DataFrame:
    if not path.is_file():
        raise MissingAssetError(f"asset file {path} does not exist: materialize its partition first")
    return pd.read_parquet(path, columns=columns)


def parquet_provenance(path: Path) -> dict[str, Any]:
    """The provenance JSON written with the table (empty if none)."""
    meta = pq.read_schema(path).metadata or {}
    return json.loads(meta.get(b"lab_assets", b"{}"))


def write_json(path: Path, obj: Any) -> Path:
    text = json.dumps(obj, indent=2, sort_keys=True, default=str)
    return atomic_write(path, lambda tmp: tmp.write_text(text))


def read_json(path: Path) -> Any:
    return json.loads(path.read_text())
