"""What to compute, as observable source assets.

Dagster's code versions are per asset, not per partition. To make an edited method stale only
its own cells, each cell's method identity (its module's source, its library versions and its
parameters) is the *data version* of that cell's `method_spec` partition; the same holds for
its dataset (`data_spec`, plus the content hash of a user's file) and for the metric suite.
Both specs are partitioned by `cell` like everything they feed (defs/partitions.py). Observing these
sources (`lab sweep run` does, as does "Observe sources" in the UI) records the new versions,
and Dagster's own staleness then marks exactly the downstream cells that depend on them.
"""

import dagster as dg

from lab_assets.dr import keystore
from lab_assets.dr.datasets import DATASETS
from lab_assets.dr.methods import METHODS
from lab_assets.core.lineage import module_version
from lab_assets.dr.metrics import METRICS
from lab_assets.core import keys
from lab_assets.defs.partitions import CELL
from lab_assets.core.registry import digest, source_file
from lab_assets.dr.sweep import DataConfig, MethodConfig, Sweep
from lab_assets.runtime.data_versions import last_data_versions, observe, observe_if_changed

GROUP = "specs"


def data_version(c: DataConfig) -> str:
    return f"{DATASETS[c.dataset].version(c.params)}~s{c.seed}"


def method_version(c: MethodConfig) -> str:
    return METHODS[c.method].version(c.params)


def metric_suite_version(sweeps: list[Sweep]) -> str:
    # One version for the suite of every registered sweep: conservative (a sweep that adds a
    # metric makes every cell's metrics stale, which is cheap to recompute), never misses one.
    suite = sorted({m.column: m.metric for s in sweeps for m in s.metrics}.items())
    code = {name: METRICS[name].code_version for _, name in suite}
    # Shared by every kNN metric: the searches and ranks, and the ranks' numba kernels.
    code["neighbors"] = module_version(*map(source_file, ["lab_assets.dr.metrics.neighbors", "lab_assets.dr.rank_kernels"]))
    return digest({"suite": suite, "code": code}, length=16)


def registered_cells() -> list[tuple[str, str, str]]:
    """(cell key, data key, method key) of every cell a registered sweep declares."""
    pairs = dict.fromkeys(c for s in keystore.sweeps() for c in s.cells)
    return [(keys.cell_key(d, m), d, m) for d, m in pairs]


@dg.observable_source_asset(partitions_def=CELL, group_name=GROUP)
def data_spec() -> dg.DataVersionsByPartition:
    """Identity of each cell's dataset config: generator code, library versions, parameters, seed."""
    return dg.DataVersionsByPartition({c: data_version(keystore.data_config(d)) for c, d, _ in registered_cells()})


@dg.observable_source_asset(partitions_def=CELL, group_name=GROUP)
def method_spec() -> dg.DataVersionsByPartition:
    """Identity of each cell's method config: method code, library versions, parameters."""
    return dg.DataVersionsByPartition({c: method_version(keystore.method_config(m)) for c, _, m in registered_cells()})


@dg.observable_source_asset(group_name=GROUP)
def metric_spec() -> dg.DataVersion:
    """Identity of the metric suite: metric code and the metrics every sweep asks for."""
    return dg.DataVersion(metric_suite_version(keystore.sweeps()))


SPECS = [data_spec, method_spec, metric_spec]


def current_versions() -> dict[tuple[str, str | None], str]:
    """(spec asset, partition) -> current version, for every registered cell."""
    sweeps = keystore.sweeps()
    versions: dict[tuple[str, str | None], str] = {("metric_spec", None): metric_suite_version(sweeps)}
    data = {d.key: data_version(d) for s in sweeps for d in s.data}
    methods = {m.key: method_version(m) for s in sweeps for m in s.methods}
    for s in sweeps:
        for d, m in s.cells:
            cell = keys.cell_key(d, m)
            versions[("data_spec", cell)], versions[("method_spec", cell)] = data[d], methods[m]
    return versions


def record_observations(instance: dg.DagsterInstance) -> int:
    """Record the current version of every spec whose last observation differs, without a run:
    the same AssetObservation (data version tag) the UI's "Observe" writes, at a fraction of
    the cost of three observation runs. Returns how many were recorded."""
    versions = current_versions()
    # The partitioned specs' last versions in bulk: one query per partition was ~1 ms a cell.
    observed = {asset: last_data_versions(instance, asset) for asset in {a for a, p in versions if p is not None}}
    recorded = 0
    for (asset, partition), version in versions.items():
        if partition is None:
            recorded += observe_if_changed(instance, asset, version)
        elif observed[asset].get(partition) != version:
            observe(instance, asset, version, partition)
            recorded += 1
    return recorded
