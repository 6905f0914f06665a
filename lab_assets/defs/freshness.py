"""Freshness: which partitions of a sweep are fresh, stale, damaged or missing, and which of a
cell's assets to recompute, read from Dagster's own records. `make_plan` is the one entry point
for "is this fresh?" (`lab sweep plan|run`, `lab report`, the sensors; the saved no-op answer of
`runner/noop_cache.py` is a plan's answer kept); the machinery it asks is `runtime/freshness/`.

The answer comes from Dagster's stale-status resolver (the one behind the UI's "stale" badges),
plus two checks the resolver cannot make: a spec whose current version differs from the last
observed one (edited method code, a changed user file) marks its cells stale before it has been
observed, and a fresh partition whose file is missing or no longer what was written
(defs/integrity.py: sizes, or hashes with `verify`) is "damaged", so the next run recomputes it.
The resolver's answers and the files' recorded fingerprints are kept between plans in the
lab home (`runtime/freshness/kept_answers.py`): a cell with no new event since is not asked again. Nothing
else is written.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import dagster as dg

from lab_assets.core import keys
from lab_assets.defs import integrity
from lab_assets.defs.assets import specs
from lab_assets.defs.assets.metrics import stored_versions
from lab_assets.dr import keystore
from lab_assets.dr.sweep import Sweep
from lab_assets.runtime.freshness.kept_answers import CachedStatusReader
from lab_assets.runtime.freshness.stale_status import FRESH, MISSING, STALE, Status

DAMAGED = "damaged"  # fresh by Dagster's records, but a file is missing or not what was written
_RANK = {FRESH: 0, STALE: 1, DAMAGED: 2, MISSING: 3}


@dataclass
class CellPlan:
    data: str
    method: str
    status: str
    reason: str = ""
    # The cell's assets to recompute, with why: {"metrics": "new column lid@k=10"} alone when its
    # embedding is fresh, so its run is the metrics step alone (defs/work.py).
    assets: dict[str, str] = field(default_factory=dict)

    @property
    def partition(self) -> str:
        return keys.cell_key(self.data, self.method)


@dataclass
class SweepPlan:
    sweep: Sweep
    datasets: dict[str, Status]
    cells: list[CellPlan]
    report: Status
    # The consolidated table alone: a report whose sweep changed only what it shows (a metric
    # taken out) is drawn again from the table as it is.
    metric_table: Status
    # The cells whose own dataset partition is missing or stale (a dataset is partitioned by cell).
    pending_datasets: dict[tuple[str, str], Status] = field(default_factory=dict)
    planned_at: float = 0.0  # when the plan started looking (epoch seconds): runs that end later are news to it
    counts: dict[str, int] = field(init=False)

    def __post_init__(self) -> None:
        self.counts = {s: sum(c.status == s for c in self.cells) for s in (MISSING, STALE, DAMAGED, FRESH)}

    def pending_cells(self) -> list[CellPlan]:
        return [c for c in self.cells if c.status != FRESH]

    def to_json(self) -> dict:
        return {
            "sweep": self.sweep.name,
            "source": self.sweep.source,
            "counts": self.counts,
            "datasets": {k: asdict(s) for k, s in self.datasets.items()},
            "methods": {m.key: {"method": m.method, "params": m.params} for m in self.sweep.methods},
            "data": {d.key: {"dataset": d.dataset, "params": d.params, "seed": d.seed} for d in self.sweep.data},
            "metrics": [m.column for m in self.sweep.metrics],
            "cells": [asdict(c) | {"partition": c.partition} for c in self.cells],
            "report": asdict(self.report),
        }


def _worst(*statuses: Status) -> Status:
    return max(statuses, key=lambda s: _RANK[s.status])


def _intact(status: Status, damage: dict, *partitions) -> Status:
    """A fresh status, unless a file of one of these (asset, partition)s is damaged."""
    found = [damage[p] for p in partitions if p in damage]
    return Status(DAMAGED, str(found[0])) if status.status == FRESH and found else status


def _embedding_first(why: str) -> dict[str, str]:
    return {"embedding": why, "metrics": "reads the embedding"}


def _metrics_status(r: CachedStatusReader, cell: str, suite: list, damage: dict) -> Status:
    """A cell's `metrics` once its embedding is fresh: stale when its suite moved on from the
    observed one (seen before `register` observes it) or Dagster says so. For a suite change the
    reason names the columns, against what the cell's stored row was computed with."""
    status = r.status("metrics", cell)
    observed = r.observed("metric_spec", cell)
    moved = specs.metric_version(suite, observed) != observed
    if status.status != MISSING and (moved or "metric_spec" in status.reason):
        owed = specs.column_versions(specs.owed_suite(suite, observed))
        status = Status(STALE, specs.suite_changes(owed, stored_versions(cell)))
    return _intact(status, damage, ("metrics", cell))


def make_plan(
    sweep: Sweep, instance: dg.DagsterInstance, asset_graph, verify: bool = False, cache: Path | None = None
) -> SweepPlan:
    """`asset_graph`: `defs.resolve_asset_graph()`, or a sensor's `context.repository_def.asset_graph`.
    Datasets are partitioned by cell (defs/partitions.py): a data key's status is the worst of its
    cells' dataset partitions, and a cell is pending when its own dataset partition is.
    `verify`: compare the files' content hashes too, not only their sizes. `cache`: the folder
    of the resolver's kept answers (None: ask it about every cell)."""
    planned_at = time.time()
    r = CachedStatusReader(instance, asset_graph, cache)
    damage = {(d.asset, d.partition): d for d in integrity.sweep_damage(instance, sweep, verify, r.files, r.latest)}
    known = set(instance.get_dynamic_partitions("cell"))

    # A cell's metric suite is the union over the registered sweeps containing it, this one as planned.
    suites = specs.cell_suites([*(s for s in keystore.sweeps() if s.name != sweep.name), sweep])
    data_versions = {d.key: specs.data_version(d) for d in sweep.data}
    method_versions = {m.key: specs.method_version(m) for m in sweep.methods}

    data_status: dict[tuple[str, str], Status] = {}  # the dataset partition of each cell
    cells = []
    for d, m in sweep.cells:
        key = keys.cell_key(d, m)
        if key not in known:
            data_status[d, m] = status = Status(MISSING, "new partition key")
            cells.append(CellPlan(d, m, status.status, status.reason, _embedding_first(status.reason)))
            continue
        if r.observed("data_spec", key) != data_versions[d]:
            data_status[d, m] = Status(STALE, "dataset code, libraries or input file changed")
        else:
            data_status[d, m] = _intact(
                _worst(r.status("raw_dataset", key), r.status("dataset", key)),
                damage,
                *((a, key) for a in integrity.DATA_ASSETS),
            )
        ds = data_status[d, m]
        if ds.status != FRESH:
            status = Status(ds.status, f"dataset {ds.status}")
            cells.append(CellPlan(d, m, status.status, status.reason, _embedding_first(status.reason)))
            continue
        if r.observed("method_spec", key) != method_versions[m]:
            embedding = Status(STALE, "method code, libraries or parameters changed")
        else:
            embedding = _intact(r.status("embedding", key), damage, ("model", key), ("embedding", key))
        if embedding.status != FRESH:
            why = f"embedding: {embedding.reason or embedding.status}"
            cells.append(CellPlan(d, m, embedding.status, why, _embedding_first(embedding.reason or embedding.status)))
            continue
        metrics = _metrics_status(r, key, suites[key], damage)
        why = f"metrics: {metrics.reason}" if metrics.status != FRESH else ""
        cells.append(CellPlan(d, m, metrics.status, why, {"metrics": metrics.reason} if why else {}))

    by_data: dict[str, list[Status]] = {}
    for (dk, _), s in data_status.items():
        by_data.setdefault(dk, []).append(s)
    datasets = {d.key: _worst(*by_data[d.key]) for d in sweep.data}
    if sweep.name not in set(instance.get_dynamic_partitions("sweep")):
        report = Status(MISSING, "new sweep")
    elif any(c.status != FRESH for c in cells):
        report = Status(STALE, "cells pending")
    elif r.observed("sweep_spec", sweep.name) != specs.sweep_version(sweep):
        report = Status(STALE, "the sweep's cells, labels or metric columns changed")
    else:
        report = _intact(r.status("report", sweep.name), damage, ("report", sweep.name))
    table = _intact(r.status("metric_table", None), damage, ("metric_table", None))
    report = _worst(report, table)
    r.save()
    pending = {k: s for k, s in data_status.items() if s.status != FRESH}
    return SweepPlan(sweep, datasets, cells, report, table, pending, planned_at)
