"""Results in a notebook, read-only: a sweep's numbers as tidy DataFrames, its summary over seeds,
a cell's embedding and the figure of measures against method parameters.

    from lab_assets import results
    results.table("dr_benchmark")          # one row per cell and measure, every parameter a column
    results.summary("dr_benchmark")        # mean, sd, 95% interval, rank per dataset x method x measure
    results.embedding(cell)                # a cell's coordinates (z0, z1, ...) and labels
    results.figure("dr_benchmark")         # each ranked measure against each numeric method parameter

`sweep` is a registered sweep's name, a sweep file, or a `Sweep`; `at` a lab home folder or a
storage URL (`s3://bucket/lab`), default the current one (LAB_HOME / LAB_STORAGE_URL, as `lab`
uses). Everything comes from the materialized files (`metric_table`, each cell's metrics and
embedding, the key records): nothing is computed, written or asked of Dagster, so it works on a
copy of a lab home or a team's bucket without an instance.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pandas as pd

from lab_assets.core import settings, storage
from lab_assets.dr import keystore, tidy
from lab_assets.dr.sweep import Sweep, load_sweep

__all__ = ["table", "summary", "embedding", "figure"]


@contextmanager
def _at(at: str | os.PathLike[str] | None) -> Iterator[None]:
    """Read from `at` (a lab home or a storage URL) for the duration, then as before."""
    if at is None:
        yield
        return
    place = os.fspath(at)
    remote = "://" in place
    chosen = {settings.STORAGE_URL_VAR: place if remote else ""}
    if not remote:
        chosen[settings.HOME_VAR] = str(Path(place).expanduser().resolve())
    before = {name: os.environ.get(name) for name in chosen}
    os.environ.update(chosen)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _sweep(sweep: str | os.PathLike[str] | Sweep) -> Sweep:
    if isinstance(sweep, Sweep):
        return sweep
    name = os.fspath(sweep)
    if name.endswith((".yaml", ".yml")):
        return load_sweep(name)
    return keystore.sweep(name)


def _cells(sweep: Sweep) -> pd.DataFrame:
    return tidy.sweep_table(sweep, storage.read_parquet(storage.asset_path("metric_table")))


def table(sweep: str | os.PathLike[str] | Sweep, at: str | os.PathLike[str] | None = None) -> pd.DataFrame:
    """One row per (cell, measure) of the sweep's materialized cells: `cell` (its partition key),
    `dataset`, `method`, every parameter (`data.<param>`, `method.<param>`), `seed`, `measure`
    (the metric column, `trustworthiness@k=15`), `value`, `git_sha` and `code_version` (of the
    metric that computed the value)."""
    with _at(at):
        s = _sweep(sweep)
        cells = _cells(s)
        return tidy.tidy(s, cells, tidy.code_versions(list(cells["partition"])))


def summary(sweep: str | os.PathLike[str] | Sweep, at: str | os.PathLike[str] | None = None) -> pd.DataFrame:
    """Per dataset config x method config x measure: n, mean, sd, 95% t-interval, rank and best
    (`lab report`'s summary, `dr/summary.py`)."""
    from lab_assets.dr import summary as seeds

    with _at(at):
        s = _sweep(sweep)
        return seeds.summarize(s, _cells(s))


def embedding(cell: str, at: str | os.PathLike[str] | None = None) -> pd.DataFrame:
    """A cell's embedding (`<data key>|<method key>`, the `cell` column of `table`): one row per
    point, the coordinates `z0`, `z1`, ... and its `label`."""
    with _at(at):
        frame = storage.read_parquet(storage.asset_path("embedding", cell))
    return frame[[*tidy.coordinates(frame).columns, "label"]]


def figure(sweep: str | os.PathLike[str] | Sweep, at: str | os.PathLike[str] | None = None):
    """A matplotlib Figure: each ranked measure against each numeric method parameter, one line
    per dataset (mean over seeds, error bars one sd); the report.html figure."""
    from lab_assets.dr import figures

    with _at(at):
        s = _sweep(sweep)
        return figures.parameters_figure(tidy.parameter_curves(s, _cells(s)))
