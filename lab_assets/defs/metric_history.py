"""Each cell's metric values as its latest and its previous `metrics` materialization recorded
them (`metric/<column>` metadata: the row's file is overwritten, the instance keeps every
materialization's values), and as a lab home's metric files hold them now: what `lab compare`
compares."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from lab_assets.core import storage

PREFIX = "metric/"  # a column's value in a `metrics` materialization's metadata (assets/metrics.py)
PAGE = 1_000  # records a query: Dagster answers at most 10,000


def _values(m: dg.AssetMaterialization) -> dict[str, float]:
    return {
        k.removeprefix(PREFIX): float(v.value)
        for k, v in m.metadata.items()
        if k.startswith(PREFIX) and v.value is not None
    }


def latest_two(instance: dg.DagsterInstance, cells: list[str]) -> tuple[dict, dict]:
    """({cell: values} of each cell's previous materialization, {cell: values} of its latest);
    a cell with a single materialization is only in the second, one never materialized in neither."""
    found: dict[str, list[dict[str, float]]] = {}
    flt = dg.AssetRecordsFilter(asset_key=dg.AssetKey("metrics"), asset_partitions=cells)
    cursor = None
    while True:
        page = instance.fetch_materializations(flt, limit=PAGE, cursor=cursor)  # newest first
        for record in page.records:
            m = record.asset_materialization
            if m is not None and len(found.setdefault(m.partition, [])) < 2:
                found[m.partition].append(_values(m))
        if not page.has_more or all(len(found.get(c, [])) == 2 for c in cells):
            break
        cursor = page.cursor
    previous = {c: v[1] for c, v in found.items() if len(v) == 2}
    return previous, {c: v[0] for c, v in found.items()}


def stored(cells: list[str], columns: list[str], home: Path | None = None) -> dict[str, dict[str, float]]:
    """{cell: {column: value}} of the cells' metric files: this lab home's storage, or another lab
    home's folder (`home`, local). A cell without a readable file is left out."""
    out = {}
    for cell in cells:
        parts = storage.asset_parts("metrics", cell)
        path = storage.url(*parts) if home is None else str(home.joinpath(*parts))
        try:
            row = storage.read_parquet(path)
        except storage.UnreadableFileError:
            continue
        if len(row) == 1:
            out[cell] = {c: float(row[c].iloc[0]) for c in columns if c in row.columns}
    return out
