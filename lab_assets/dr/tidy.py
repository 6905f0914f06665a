"""A sweep's results as tables a person filters and plots: the per-cell table in the sweep's order,
every parameter flat (`data.<param>`, `method.<param>`: what W&B groups runs by and what the
notebook API returns), the tidy long form (one row per cell and measure, with its lineage), and the
curves of a measure against a numeric method parameter (mean and sd over seeds).

Pure pandas (no Dagster): the report asset, `lab_assets.results` and the W&B tracking use it.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any

import pandas as pd

from lab_assets.core import keys, storage
from lab_assets.dr.metrics import METRICS
from lab_assets.dr.summary import config_key
from lab_assets.dr.sweep import DataConfig, MethodConfig, Sweep

CELL_COLUMNS = ["partition", "dataset_label", "method_label", "data", "method", "seed", "n", "git_sha"]
TIDY_COLUMNS = ["cell", "dataset", "method", "seed", "measure", "value", "git_sha", "code_version"]


def _flat(prefix: str, params: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in params.items():
        if isinstance(value, dict):
            out.update(_flat(f"{prefix}.{name}", value))
        else:
            out[f"{prefix}.{name}"] = value
    return out


def flat_params(data: DataConfig, method: MethodConfig) -> dict[str, Any]:
    """`{"data": "swissroll", "data.noise": 0.05, "seed": 0, "method": "umap", "method.n_neighbors": 15}`:
    a nested parameter is dotted further (`method.kwargs.alpha`)."""
    return {
        "data": data.dataset,
        **_flat("data", data.params),
        "seed": data.seed,
        "method": method.method,
        **_flat("method", method.params),
    }


def sweep_table(sweep: Sweep, table: pd.DataFrame) -> pd.DataFrame:
    """The sweep's rows of the metric table (one per cell, in the sweep's order), labelled by the
    parameters that vary within the sweep (`Sweep.labels`), with its requested metric columns."""
    cells = {keys.cell_key(d, m): i for i, (d, m) in enumerate(sweep.cells)}
    rows = table[table["partition"].isin(cells)].copy()
    wanted = [m.column for m in sweep.metrics if m.column in rows.columns]
    labels = sweep.labels
    rows["dataset_label"] = rows["data"].map(lambda k: labels[config_key(k)])
    rows["method_label"] = rows["method"].map(labels)
    order = {d.config_key: i for i, d in enumerate(sweep.data)}
    methods = {m.key: i for i, m in enumerate(sweep.methods)}
    rows = rows.assign(_d=rows["data"].map(lambda k: order[config_key(k)]), _m=rows["method"].map(methods))
    return rows.sort_values(["_d", "_m", "seed"])[[*CELL_COLUMNS, *wanted]]


def tidy(sweep: Sweep, cells: pd.DataFrame, versions: dict[str, dict[str, str]]) -> pd.DataFrame:
    """One row per (cell, measure) of `sweep_table`'s rows: the cell key, the dataset and method
    names, every parameter (`flat_params`), seed, measure, value, git SHA and the code version that
    computed that value (`versions[cell][measure]`, "" where unknown)."""
    data = {d.key: d for d in sweep.data}
    methods = {m.key: m for m in sweep.methods}
    measures = [m.column for m in sweep.metrics if m.column in cells.columns]
    rows = []
    for cell in cells.to_dict("records"):
        params = flat_params(data[cell["data"]], methods[cell["method"]])
        for measure in measures:
            rows.append(
                {
                    **params,
                    "cell": cell["partition"],
                    "dataset": params["data"],
                    "method": params["method"],
                    "measure": measure,
                    "value": cell[measure],
                    "git_sha": cell["git_sha"],
                    "code_version": versions.get(cell["partition"], {}).get(measure, ""),
                }
            )
    frame = pd.DataFrame(rows)
    if frame.empty:
        return pd.DataFrame(columns=TIDY_COLUMNS)
    params = [c for c in frame.columns if c.startswith("data.")] + [c for c in frame.columns if c.startswith("method.")]
    return frame[[*TIDY_COLUMNS[:3], *params, *TIDY_COLUMNS[3:]]]


def code_versions(cells: list[str]) -> dict[str, dict[str, str]]:
    """{cell: {metric column: the code version that computed it}}, from each cell's metrics file
    footer ({} for a cell whose file cannot be read)."""
    out = {}
    for cell in cells:
        try:
            recorded = storage.parquet_provenance(storage.asset_path("metrics", cell)).get("columns", {})
        except storage.UnreadableFileError:
            recorded = {}
        out[cell] = {c: r.get("version", "") for c, r in recorded.items()}
    return out


def first_seed_embeddings(
    sweep: Sweep, read: Callable[[str, str], pd.DataFrame] = lambda path, data_key: storage.read_parquet(path)
) -> dict[tuple[str, str], pd.DataFrame]:
    """{(data label, method label): embedding table} of the sweep's lowest seed, in the sweep's
    order, for the cells whose embedding exists; `read(path, data key)` reads a file (the report
    asset's names the command that repairs a damaged one and adds the classes' names)."""
    lowest = min(d.seed for d in sweep.data)
    first_seed = {d.key for d in sweep.data if d.seed == lowest}
    labels, panels = sweep.labels, {}
    for d, m in sweep.cells:
        path = storage.asset_path("embedding", keys.cell_key(d, m))
        if d in first_seed and storage.exists(path):
            panels[(labels[config_key(d)], labels[m])] = read(path, d)
    return panels


def coordinates(embedding: pd.DataFrame) -> pd.DataFrame:
    return embedding[[c for c in embedding.columns if c.startswith("z")]]


def numeric_parameters(sweep: Sweep) -> list[tuple[str, str]]:
    """(method name, parameter) pairs whose values are numbers and take two or more values among
    the sweep's configs of that method: what a measure can be drawn against."""
    values: dict[tuple[str, str], set] = {}
    for m in sweep.methods:
        for p, v in m.params.items():
            numeric = isinstance(v, numbers.Number) and not isinstance(v, bool)
            values.setdefault((m.method, p), set()).add(v if numeric else None)
    return [k for k, vs in values.items() if None not in vs and len(vs) > 1]


def ranked_measures(sweep: Sweep) -> list[str]:
    """The sweep's metric columns that have a direction (descriptive ones are not ranked)."""
    return [m.column for m in sweep.metrics if METRICS[m.metric].better is not None]


def parameter_curves(sweep: Sweep, cells: pd.DataFrame) -> pd.DataFrame:
    """Per ranked measure and numeric method parameter (`numeric_parameters`): mean, sd and n over
    seeds at each of the parameter's values, one line per dataset config (and per combination of
    the method's other parameters, where they vary too)."""
    by_key = {m.key: m for m in sweep.methods}
    labels = sweep.labels
    rows = []
    for method, param in numeric_parameters(sweep):
        configs = [m for m in sweep.methods if m.method == method]
        others = {p for m in configs for p in m.params if p != param}
        varying = sorted(p for p in others if len({repr(m.params.get(p)) for m in configs}) > 1)
        sub = cells[cells["method"].map(lambda k: by_key[k].method == method)]
        for measure in ranked_measures(sweep):
            if measure not in sub.columns:
                continue
            for cell in sub.to_dict("records"):
                config = by_key[cell["method"]]
                rest = " ".join(f"{p}={config.params.get(p)}" for p in varying)
                line = f"{labels[config_key(cell['data'])]} {rest}".strip()
                rows.append(
                    {
                        "measure": measure,
                        "measure_label": labels[measure],
                        "method": method,
                        "parameter": param,
                        "line": line,
                        "x": config.params[param],
                        "value": cell[measure],
                    }
                )
    columns = ["measure", "measure_label", "method", "parameter", "line", "x", "mean", "sd", "n"]
    if not rows:
        return pd.DataFrame(columns=columns)
    frame = pd.DataFrame(rows).dropna(subset=["value"])
    group = ["measure", "measure_label", "method", "parameter", "line", "x"]
    out = frame.groupby(group, sort=False)["value"].agg(mean="mean", sd="std", n="count").reset_index()
    return out[columns]
