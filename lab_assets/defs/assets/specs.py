"""What to compute, as observable source assets.

Dagster's code versions are per asset, not per partition. To make an edited method stale only
its own cells, each cell's method identity (its code by meaning, its library versions and its
parameters) is the *data version* of that cell's `method_spec` partition; the same holds for
its dataset (`data_spec`, plus the content hash of a user's file) and for its metric suite
(`metric_spec`: the columns the cell's sweeps ask for, each with its metric's code version).
The three specs are partitioned by `cell` like everything they feed (defs/partitions.py), and
`sweep_spec` by sweep (what a report shows: its cells, labels and columns). Observing these
sources (`lab sweep run` does, as does "Observe sources" in the UI) records the new versions,
and Dagster's own staleness then marks exactly the downstream partitions that depend on them.
"""

from __future__ import annotations

from functools import cache, lru_cache

import dagster as dg

from lab_assets.core import canonical, key_records, keys, version_lock
from lab_assets.core.registry import SCIENCE, digest
from lab_assets.defs import step_versions
from lab_assets.defs.code_links import module_references
from lab_assets.defs.partitions import CELL, SWEEP
from lab_assets.dr import keystore
from lab_assets.dr.datasets import DATASETS
from lab_assets.dr.metrics import METRICS
from lab_assets.dr.sweep import DataConfig, MethodConfig, MetricConfig, Sweep
from lab_assets.runtime.data_versions import last_data_versions, observe

GROUP = "specs"
CODE_REFERENCES = module_references(__file__)  # the UI's link to this module (observable assets have no other)
SUITE_RECORDS = "metric_suite"  # key records of observed metric suites, by version (content-addressed)
# The shared kNN code every metric receives (and what it imports: the ranks' numba kernels), read
# by meaning without importing it: part of every column's version, not of each metric's.
SHARED_METRIC_CODE = METRICS.receives
METRICS_STEP = "lab_assets.defs.assets.metrics"


def data_version(c: DataConfig) -> str:
    return f"{DATASETS[c.dataset].version(c.params)}~s{c.seed}"


def method_version(c: MethodConfig) -> str:
    return c.entry.version(c.params)


@lru_cache(maxsize=1)
def shared_metric_code() -> dict[str, str]:
    """{file: digest by meaning} of the shared metric code (`lab impact` names the changed one)."""
    found = canonical.closure(SHARED_METRIC_CODE, (SCIENCE,))
    return {_file_name(f): d for f, d in found.values()}


def _file_name(path: str) -> str:
    parts = path.replace("\\", "/").split("/")
    return "/".join(parts[-2:]) if parts[-1] == "__init__.py" else parts[-1]


@lru_cache(maxsize=1)
def shared_meaning() -> str:
    """What every column shares, by meaning: the shared kNN code and the metrics step's version."""
    return digest({"code": shared_metric_code(), "step": step_versions.declared(METRICS_STEP)}, length=16)


def column_digest(metric: str) -> str:
    """What a metric's columns are computed with, by meaning: its entry (modules, `sources=`,
    packages) and what every column shares: the lineage's `code_digest`."""
    return digest({"metric": METRICS[metric].code_digest, "shared": shared_meaning()}, length=12)


@cache  # registry code versions are fixed for a process: one digest per metric
def column_version(metric: str) -> str:
    """The version a metric's columns carry: a column is recomputed when this changes, and only
    then (or when the embedding or dataset it reads changed). `column_digest`, except that while
    the shared code means what it meant before versions by meaning, that release's byte digest
    stands for it (`core/version_lock.py`)."""
    return digest({"metric": METRICS[metric].code_version, "shared": version_lock.shared(shared_meaning())}, length=12)


def column_versions(suite: list[MetricConfig]) -> dict[str, str]:
    """{column: code version} of a cell's metric suite."""
    return {m.column: column_version(m.metric) for m in suite}


def suite_version(columns: dict[str, str]) -> str:
    return digest(columns, length=16)


def suite_record(suite: list[MetricConfig]) -> dict[str, dict]:
    """What a `metric_spec` version stands for: {column: {metric, params, version, code, shared}}.
    `code` (the metric's own code version) and `shared` (`shared_metric_code`) let a later plan
    say which of the two changed a column (`dr/staleness.py`), as `lab impact` does."""
    shared = shared_metric_code()
    return {
        m.column: {
            "metric": m.metric,
            "params": m.params,
            "version": column_version(m.metric),
            "code": METRICS[m.metric].code_version,
            "shared": shared,
        }
        for m in suite
    }


def observed_suite(version: str | None) -> dict[str, dict] | None:
    """The suite record of an observed `metric_spec` version (None: none, or no record of it).
    A record never changes (its name is its content's digest), so a found one is kept per process;
    a missing one is looked for again (it may be written later, or in another lab home)."""
    if version is None:
        return None
    if version not in _SUITES:
        try:
            _SUITES[version] = key_records.read(SUITE_RECORDS, version, "`lab sweep run <file>`")
        except key_records.UnknownKeyError:
            return None
    return _SUITES[version]


_SUITES: dict[str, dict[str, dict]] = {}


def _current(metric: str) -> str | None:
    return column_version(metric) if metric in METRICS else None  # None: a metric no longer registered


def metric_version(suite: list[MetricConfig], observed: str | None) -> str:
    """The `metric_spec` version a cell owes. The observed one while its suite covers the cell's
    current suite at the current code, and holds no column of code since changed: a metric taken
    out of the cell's sweeps then stales nothing (its column stays in the row, current, and the
    report leaves it out). Otherwise the current suite's own version."""
    current, recorded = column_versions(suite), observed_suite(observed)
    if (
        recorded is not None
        and all(recorded.get(c, {}).get("version") == v for c, v in current.items())
        and all(_current(r["metric"]) == r["version"] for c, r in recorded.items() if c not in current)
    ):
        return observed
    return suite_version(current)


def owed_suite(suite: list[MetricConfig], observed: str | None) -> list[MetricConfig]:
    """The columns a cell's metrics row holds: its suite, plus the columns of the observed suite
    that still cover it (`metric_version`)."""
    recorded = observed_suite(observed)
    if recorded is None or metric_version(suite, observed) != observed:
        return suite
    have = {m.column for m in suite}
    extra = [MetricConfig(r["metric"], r["params"]) for c, r in recorded.items() if c not in have]
    return sorted([*suite, *extra], key=lambda m: m.column)


def sweep_version(s: Sweep) -> str:
    """What a sweep's report shows besides the metric table: its cells in order, their labels and
    its metric columns."""
    return digest({"cells": s.cells, "labels": s.labels, "metrics": [m.column for m in s.metrics]}, length=16)


def registered_cells() -> list[tuple[str, str, str]]:
    """(cell key, data key, method key) of every cell a registered sweep declares."""
    pairs = dict.fromkeys(c for s in keystore.sweeps() for c in s.cells)
    return [(keys.cell_key(d, m), d, m) for d, m in pairs]


def cell_suites(sweeps: list[Sweep]) -> dict[str, list[MetricConfig]]:
    """{cell key: its metric suite}: the union over the sweeps containing it, by column."""
    suites: dict[str, dict[str, MetricConfig]] = {}
    for s in sweeps:
        for d, m in s.cells:
            suites.setdefault(keys.cell_key(d, m), {}).update({c.column: c for c in s.metrics})
    return {cell: [c[k] for k in sorted(c)] for cell, c in suites.items()}


@dg.observable_source_asset(partitions_def=CELL, group_name=GROUP, metadata=CODE_REFERENCES)
def data_spec() -> dg.DataVersionsByPartition:
    """Identity of each cell's dataset config: generator code, library versions, parameters, seed."""
    return dg.DataVersionsByPartition({c: data_version(keystore.data_config(d)) for c, d, _ in registered_cells()})


@dg.observable_source_asset(partitions_def=CELL, group_name=GROUP, metadata=CODE_REFERENCES)
def method_spec() -> dg.DataVersionsByPartition:
    """Identity of each cell's method config: method code, library versions, parameters."""
    return dg.DataVersionsByPartition({c: method_version(keystore.method_config(m)) for c, _, m in registered_cells()})


@dg.observable_source_asset(partitions_def=CELL, group_name=GROUP, metadata=CODE_REFERENCES)
def metric_spec(context) -> dg.DataVersionsByPartition:
    """Identity of each cell's metric suite: the columns its sweeps ask for, each with the code
    version of its metric (its module plus the shared kNN code)."""
    observed = last_data_versions(context.instance, "metric_spec")
    versions = {}
    for cell, suite in cell_suites(keystore.sweeps()).items():
        versions[cell] = metric_version(suite, observed.get(cell))
        if versions[cell] != observed.get(cell):  # as `record_observations`: the record before the version
            key_records.write(SUITE_RECORDS, versions[cell], suite_record(suite))
    return dg.DataVersionsByPartition(versions)


@dg.observable_source_asset(partitions_def=SWEEP, group_name=GROUP, metadata=CODE_REFERENCES)
def sweep_spec() -> dg.DataVersionsByPartition:
    """Identity of each sweep's report: its cells in order, their labels and its metric columns."""
    return dg.DataVersionsByPartition({s.name: sweep_version(s) for s in keystore.sweeps()})


SPECS = [data_spec, method_spec, metric_spec, sweep_spec]


def current_versions(sweeps: list[Sweep], observed_suites: dict[str, str]) -> dict[tuple[str, str], str]:
    """(spec asset, partition) -> current version, for every cell and sweep of `sweeps`.
    `observed_suites`: {cell: last observed `metric_spec` version} (`metric_version`)."""
    versions: dict[tuple[str, str], str] = {("sweep_spec", s.name): sweep_version(s) for s in sweeps}
    data = {d.key: data_version(d) for s in sweeps for d in s.data}
    methods = {m.key: method_version(m) for s in sweeps for m in s.methods}
    for s in sweeps:
        for d, m in s.cells:
            cell = keys.cell_key(d, m)
            versions[("data_spec", cell)], versions[("method_spec", cell)] = data[d], methods[m]
    for cell, suite in cell_suites(sweeps).items():
        versions[("metric_spec", cell)] = metric_version(suite, observed_suites.get(cell))
    return versions


def _columns_metadata(record: dict[str, dict]):
    return lambda: {"columns": dg.MetadataValue.json({c: r["version"] for c, r in record.items()})}


def record_observations(instance: dg.DagsterInstance) -> int:
    """Record the current version of every spec whose last observation differs, without a run:
    the same AssetObservation (data version tag) the UI's "Observe" writes, at a fraction of
    the cost of observation runs. Returns how many were recorded."""
    # Every partition's last version in bulk: one query per partition was ~1 ms a cell.
    observed = {a: last_data_versions(instance, a) for a in ("data_spec", "method_spec", "metric_spec", "sweep_spec")}
    sweeps = keystore.sweeps()
    suites = cell_suites(sweeps)
    recorded = 0
    for (asset, partition), version in current_versions(sweeps, observed["metric_spec"]).items():
        if observed[asset].get(partition) == version:
            continue
        metadata = None
        if asset == "metric_spec":
            record = suite_record(suites[partition])
            # The record first: whoever reads this version finds what it stands for.
            key_records.write(SUITE_RECORDS, version, record)
            metadata = _columns_metadata(record)
        observe(instance, asset, version, partition, metadata)
        recorded += 1
    return recorded
