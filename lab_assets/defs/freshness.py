"""Freshness: which partitions of a sweep are fresh, stale, damaged or missing, and which of a
cell's assets to recompute, read from Dagster's own records. `plan_sweep` is the one entry point
for "is this fresh?" (`lab sweep plan|run`, `lab report`, the sensors; the saved no-op answer of
`runner/noop_answer.py` is a plan's answer kept); the machinery it asks is `runtime/freshness/`.

The answer comes from Dagster's stale-status resolver (the one behind the UI's "stale" badges),
plus two checks the resolver cannot make: a spec whose current version differs from the last
observed one (edited method code, a changed user file) marks its cells stale before it has been
observed, and a fresh partition whose file is missing or no longer what was written
(defs/integrity.py: sizes, or hashes with `verify`) is "damaged", so the next run recomputes it.
Why a cell is stale is `dr/staleness.reasons`, the rules `lab impact` names its reasons with: the
versions the lab home recorded (the spec observations, the files' lineages, the stored row's
column versions) against the tree's.
The resolver's answers and the files' recorded fingerprints are kept between plans in the
lab home (`runtime/freshness/kept_answers.py`): a cell with no new event since is not asked again. Nothing
else is written.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path

import dagster as dg

from lab_assets.core import keys, storage
from lab_assets.core.registry import package_version
from lab_assets.defs import integrity, step_versions
from lab_assets.defs.assets import specs
from lab_assets.defs.assets.metrics import stored_versions
from lab_assets.dr import keystore, staleness
from lab_assets.dr.datasets import DATASETS
from lab_assets.dr.metrics import METRICS
from lab_assets.dr.staleness import CellVersions, Column, EntryVersions
from lab_assets.dr.sweep import MetricConfig, Sweep
from lab_assets.runtime.freshness.kept_answers import KeptAnswers
from lab_assets.runtime.freshness.stale_status import FRESH, MISSING, STALE, Status

CELL_ASSETS = (staleness.EMBEDDING, staleness.METRICS)  # what a cell's plan recomputes (`CellPlan.assets`)
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


# Dagster's words for a step whose declared code version differs from the one its partition was
# materialized with, and the assets of each step (`staleness.STEP_MODULES`).
_NEW_CODE = "has a new code version"
_STEP_ASSETS = {
    "datasets.py": ("raw_dataset", "dataset"),
    "experiments.py": ("model", "embedding"),
    "metrics.py": ("metrics",),
}


def _recorded(asset: str, partition: str, packages: tuple[str, ...]) -> tuple[str | None, dict | None]:
    """(code digest, {library: version} of `packages`) its file's lineage records (None: not known)."""
    try:
        prov = storage.parquet_provenance(storage.asset_path(asset, partition))
    except storage.UnreadableFileError:
        return None, None
    recorded = prov.get("packages")
    return prov.get("code_digest") or None, None if recorded is None else {p: recorded.get(p) for p in packages}


@cache  # as an entry's code version: the libraries of this process
def _installed(packages: tuple[str, ...]) -> dict[str, str]:
    return {p: package_version(p) for p in packages}


class _Why:
    """A cell's reasons: `staleness.reasons` of the versions the lab home recorded against the
    tree's. Each level of the plan (dataset, embedding, metrics) asks about its own versions
    alone (the others are the tree's), as the rules' order stops at the first that differs."""

    def __init__(self, r: KeptAnswers, sweep: Sweep, data_versions: dict, method_versions: dict):
        self.r, self.data_versions, self.method_versions = r, data_versions, method_versions
        self.data, self.methods = {d.key: d for d in sweep.data}, {m.key: m for m in sweep.methods}
        self.steps = {m: step_versions.declared(f"lab_assets.defs.assets.{m[:-3]}") for m in staleness.STEP_MODULES}
        self._recorded: dict[tuple, tuple] = {}  # per config and observed version

    def _lineage(self, asset: str, partition: str, config: str, observed: str | None, packages: tuple) -> tuple:
        # Cells that observed the same version of a config were computed by the same code.
        if (asset, config, observed) not in self._recorded:
            self._recorded[asset, config, observed] = _recorded(asset, partition, packages)
        return self._recorded[asset, config, observed]

    def _new(self, d: str, m: str, columns: dict[str, Column] | None = None) -> CellVersions:
        dc, mc = self.data[d], self.methods[m]
        entry = DATASETS[dc.dataset]
        return CellVersions(
            EntryVersions(dc.dataset, self.data_versions[d], entry.code_digest, _installed(entry.packages)),
            EntryVersions(mc.method, self.method_versions[m], mc.entry.code_digest, _installed(mc.entry.packages)),
            trainable=mc.entry.trainable,
            steps=self.steps,
            columns=columns or {},
        )

    def _steps(self, step: str, status: Status) -> dict[str, str | None]:
        changed = status.status == STALE and any(f"{a} {_NEW_CODE}" in status.reason for a in _STEP_ASSETS[step])
        return {**self.steps, step: None} if changed else self.steps

    def _cell(self, old: CellVersions, new: CellVersions) -> dict[str, str]:
        """The reasons of the plan's cell assets (a model is one step with its embedding)."""
        return {a: w for a, w in staleness.reasons(old, new).items() if a in CELL_ASSETS}

    def dataset(self, d: str, m: str, status: Status) -> dict[str, str]:
        """Why the cell's dataset is stale, per cell asset ({}: not for a difference of versions)."""
        key, new = keys.cell_key(d, m), self._new(d, m)
        observed = self.r.observed("data_spec", key)
        code, packages = new.data.code, new.data.packages
        if observed != new.data.version:
            code, packages = self._lineage("raw_dataset", d, d, observed, DATASETS[new.data.name].packages)
        data = EntryVersions(new.data.name, observed, code, packages)
        return self._cell(dataclasses.replace(new, data=data, steps=self._steps("datasets.py", status)), new)

    def embedding(self, d: str, m: str, status: Status) -> dict[str, str]:
        key, new = keys.cell_key(d, m), self._new(d, m)
        observed = self.r.observed("method_spec", key)
        code, packages = new.method.code, new.method.packages
        if observed != new.method.version:
            code, packages = self._lineage("embedding", key, m, observed, self.methods[m].entry.packages)
        method = EntryVersions(new.method.name, observed, code, packages)
        return self._cell(dataclasses.replace(new, method=method, steps=self._steps("experiments.py", status)), new)

    def metrics(self, d: str, m: str, owed: list[MetricConfig], recorded: dict | None, status: Status) -> str | None:
        """`owed`: the columns the row should hold; `recorded`: the observed suite's record.
        None: the stored row records no column versions."""
        key, shared = keys.cell_key(d, m), specs.shared_metric_code()
        stored = stored_versions(key)
        if not stored:
            return None
        now = {
            c.column: Column(c.metric, specs.column_version(c.metric), METRICS[c.metric].code_version, shared)
            for c in owed
        }
        had = {}
        for column, version in stored.items():
            rec = (recorded or {}).get(column, {})
            metric = rec.get("metric") or (now[column].metric if column in now else column.split("@", 1)[0])
            # The record names the code only of the very column it describes.
            same = rec.get("version") == version
            had[column] = Column(
                metric, version, rec.get("code") if same else None, rec.get("shared") if same else None
            )
        current = {c.metric: specs.column_version(c.metric) if c.metric in METRICS else None for c in had.values()}
        new = dataclasses.replace(self._new(d, m, now), metric_versions=current)
        old = dataclasses.replace(new, columns=had, steps=self._steps("metrics.py", status))
        return staleness.reasons(old, new).get(staleness.METRICS, "")


def _metrics_status(r: KeptAnswers, why: _Why, cell: tuple[str, str], suite: list, damage: dict) -> Status:
    """A cell's `metrics` once its embedding is fresh: stale when its suite moved on from the
    observed one (seen before `register` observes it) or Dagster says so."""
    key = keys.cell_key(*cell)
    status = r.status("metrics", key)
    observed = r.observed("metric_spec", key)
    moved = status.status != MISSING and (
        specs.metric_version(suite, observed) != observed or "metric_spec" in status.reason
    )
    if moved or status.status == STALE:
        said = why.metrics(*cell, specs.owed_suite(suite, observed), specs.observed_suite(observed), status)
        if not moved:
            said = said or status.reason
        elif said is None:
            said = "metric suite changed (the stored row records no column versions)"
        status = Status(STALE, said or "metric suite changed")
    return _intact(status, damage, ("metrics", key))


def _report(r: KeptAnswers, sweep: Sweep, pending: bool, damage: dict) -> Status:
    """A registered sweep's report: `staleness.report_reason` where versions differ (Dagster's
    resolver asked only when no cell is pending and the sweep is as observed), else the resolver's."""
    observed, version = r.observed("sweep_spec", sweep.name), specs.sweep_version(sweep)
    step = step_versions.declared(f"lab_assets.defs.assets.{staleness.REPORT_MODULE[:-3]}")
    status = Status(FRESH)
    if not pending and observed == version:
        status = _intact(r.status("report", sweep.name), damage, ("report", sweep.name))
    was = None if status.status == STALE and f"report {_NEW_CODE}" in status.reason else step
    said = staleness.report_reason(pending, (observed, version), (was, step))
    return Status(STALE, said) if said else status


def plan_sweep(
    sweep: Sweep, instance: dg.DagsterInstance, asset_graph, verify: bool = False, cache: Path | None = None
) -> SweepPlan:
    """`asset_graph`: `defs.resolve_asset_graph()`, or a sensor's `context.repository_def.asset_graph`.
    Datasets are partitioned by cell (defs/partitions.py): a data key's status is the worst of its
    cells' dataset partitions, and a cell is pending when its own dataset partition is.
    `verify`: compare the files' content hashes too, not only their sizes. `cache`: the folder
    of the resolver's kept answers (None: ask it about every cell)."""
    planned_at = time.time()
    r = KeptAnswers(instance, asset_graph, cache)
    damage = {(d.asset, d.partition): d for d in integrity.sweep_damage(instance, sweep, verify, r.files, r.latest)}
    known = set(instance.get_dynamic_partitions("cell"))

    # A cell's metric suite is the union over the registered sweeps containing it, this one as planned.
    suites = specs.cell_suites([*(s for s in keystore.sweeps() if s.name != sweep.name), sweep])
    data_versions = {d.key: specs.data_version(d) for d in sweep.data}
    method_versions = {m.key: specs.method_version(m) for m in sweep.methods}
    why = _Why(r, sweep, data_versions, method_versions)

    data_status: dict[tuple[str, str], Status] = {}  # the dataset partition of each cell
    cells = []
    for d, m in sweep.cells:
        key = keys.cell_key(d, m)
        if key not in known:
            data_status[d, m] = status = Status(MISSING, "new partition key")
            cells.append(CellPlan(d, m, status.status, status.reason, _embedding_first(status.reason)))
            continue
        # `said`: why, where the versions the lab home recorded differ from the tree's; every
        # asset below then says so, as `lab impact` does.
        if r.observed("data_spec", key) != data_versions[d]:
            said = why.dataset(d, m, Status(FRESH))
            data_status[d, m] = Status(STALE, said[staleness.EMBEDDING])
        else:
            ds = _intact(
                _worst(r.status("raw_dataset", key), r.status("dataset", key)),
                damage,
                *((a, key) for a in integrity.DATA_ASSETS),
            )
            said = why.dataset(d, m, ds) if ds.status == STALE else {}
            data_status[d, m] = Status(STALE, said[staleness.EMBEDDING]) if said else ds
        ds = data_status[d, m]
        if ds.status != FRESH:
            status = Status(ds.status, f"dataset {ds.status}")
            cells.append(CellPlan(d, m, status.status, status.reason, said or _embedding_first(status.reason)))
            continue
        if r.observed("method_spec", key) != method_versions[m]:
            said = why.embedding(d, m, Status(FRESH))
            embedding = Status(STALE, said[staleness.EMBEDDING])
        else:
            embedding = _intact(r.status("embedding", key), damage, ("model", key), ("embedding", key))
            said = why.embedding(d, m, embedding) if embedding.status == STALE else {}
            embedding = Status(STALE, said[staleness.EMBEDDING]) if said else embedding
        if embedding.status != FRESH:
            reason = embedding.reason or embedding.status
            cells.append(CellPlan(d, m, embedding.status, f"embedding: {reason}", said or _embedding_first(reason)))
            continue
        metrics = _metrics_status(r, why, (d, m), suites[key], damage)
        reason = f"metrics: {metrics.reason}" if metrics.status != FRESH else ""
        cells.append(CellPlan(d, m, metrics.status, reason, {"metrics": metrics.reason} if reason else {}))

    by_data: dict[str, list[Status]] = {}
    for (dk, _), s in data_status.items():
        by_data.setdefault(dk, []).append(s)
    datasets = {d.key: _worst(*by_data[d.key]) for d in sweep.data}
    if sweep.name not in set(instance.get_dynamic_partitions("sweep")):
        report = Status(MISSING, "new sweep")
    else:
        report = _report(r, sweep, any(c.status != FRESH for c in cells), damage)
    table = _intact(r.status("metric_table", None), damage, ("metric_table", None))
    report = _worst(report, table)
    r.save()
    pending = {k: s for k, s in data_status.items() if s.status != FRESH}
    return SweepPlan(sweep, datasets, cells, report, table, pending, planned_at)
