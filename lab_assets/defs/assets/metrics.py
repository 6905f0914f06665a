"""metrics: one row per cell, every column its sweeps ask for, reusing the columns that nothing
they depend on has changed since.

A column depends on its metric's code version (`specs.column_version`: its module, plus this
step and the shared kNN code) and on the embedding and dataset it is computed from. Each row's
file records, per column, that code version and a digest of the two inputs' contents; the next
materialization of the cell carries a column over from that file when both are the same, and
computes only the rest (a new column, an edited metric, a changed embedding). A value computed
by other code or from other inputs is never carried.
"""

import dagster as dg
import pandas as pd

from lab_assets.core import lineage, results_cache, storage
from lab_assets.core.registry import digest
from lab_assets.defs import (
    asset_checks,
    cached,
    inflight,
    integrity,
    latent_table,
    metric_history,
    step_versions,
    tracked,
)
from lab_assets.defs.assets.datasets import (
    GENERATE_STREAM,
    content_version,
    dataset,
    features,
    generated_by,
    label_kind,
    rng,
)
from lab_assets.defs.assets.experiments import GROUP, RECONSTRUCTION_COLUMN, cell_label, cell_of, embedding_coordinates
from lab_assets.defs.assets.specs import column_digest, column_versions, metric_spec, owed_suite
from lab_assets.defs.metadata import materialization_metadata
from lab_assets.defs.partitions import CELL
from lab_assets.dr import keystore
from lab_assets.dr.metrics import METRICS, NotApplicable
from lab_assets.dr.sweep import MetricConfig
from lab_assets.runtime.data_versions import last_data_version
from lab_assets.runtime.run_assets import run_assets

CODE_VERSION = step_versions.declared(__name__)  # declared: defs/step_versions.py
COMPUTED, CARRIED, CACHED = "computed", "carried", "cached"
METRICS_FILE = "metrics.parquet"  # its name in a results cache entry


def previous_columns(cell: str) -> dict[str, dict]:
    """{column: {value, version, inputs, ...}} of the cell's stored row ({} if there is none, or
    it cannot be read: then every column is computed)."""
    try:
        row, prov = storage.read_parquet_with_provenance(storage.asset_path("metrics", cell))
    except storage.UnreadableFileError:
        return {}
    if len(row) != 1:
        return {}
    return {c: {**r, "value": float(row[c].iloc[0])} for c, r in prov.get("columns", {}).items() if c in row.columns}


def stored_versions(cell: str) -> dict[str, str]:
    """{column: code version} the cell's stored row was computed with (what `lab sweep plan`
    compares a changed suite with), from the file's footer alone ({} if it cannot be read)."""
    try:
        recorded = storage.parquet_provenance(storage.asset_path("metrics", cell)).get("columns", {})
    except storage.UnreadableFileError:
        return {}
    return {c: r.get("version", "") for c, r in recorded.items()}


def compute_columns(
    suite: list[MetricConfig], table: pd.DataFrame, emb: pd.DataFrame, seed: int, latent=None
) -> dict[str, dict]:
    """{column: {value, not_applicable?, sampled?}} of `suite`, from one shared kNN search of the
    data and one of the embedding at the largest k asked for (`latent`: the dataset's ground
    truth, None if it has none)."""
    from lab_assets.dr.metrics.latent_neighborhoods import GroundTruthNeighborhoods  # sklearn + numba: only where used

    labels = None if label_kind(table["label"]) == "none" else table["label"].to_numpy()
    recon = emb[RECONSTRUCTION_COLUMN].to_numpy() if RECONSTRUCTION_COLUMN in emb else None
    k_max = max((m.neighbours for m in suite), default=0)
    neighborhoods = GroundTruthNeighborhoods(
        features(table),
        embedding_coordinates(emb),
        k_max,
        labels=labels,
        seed=seed,
        split=table["split"].to_numpy(),
        reconstruction=recon,
        latent=latent,
    )
    out: dict[str, dict] = {}
    for m in suite:
        neighborhoods.sampled = None
        try:
            out[m.column] = {"value": float(METRICS[m.metric](neighborhoods, **m.params))}
        except NotApplicable as reason:  # recorded as null, with why: not a failure
            out[m.column] = {"value": float("nan"), "not_applicable": str(reason)}
        if neighborhoods.sampled:  # a quadratic metric computed on a seeded sample: of what
            out[m.column]["sampled"] = neighborhoods.sampled
    return out


@dg.asset(
    partitions_def=CELL,
    deps=["embedding", dataset, metric_spec],
    group_name=GROUP,
    code_version=CODE_VERSION,
    kinds={"parquet"},
    check_specs=asset_checks.specs("metrics", asset_checks.METRIC_CHECKS),
)
def metrics(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
    """One row per cell: every metric the cell's sweeps ask for, at every k. Columns whose code
    and inputs are unchanged are carried over from the cell's previous row; the rest come from
    one shared kNN search of the data and one of the embedding."""
    if dg.AssetKey("embedding") not in run_assets(context.instance, context.run):
        inflight.claim(context)  # the run's first step: a metrics-only run (defs/work.py)
    data_key, method_key, cell = cell_of(context)
    data, method = keystore.data_config(data_key), keystore.method_config(method_key)
    cell_sweeps = keystore.sweeps_containing(data_key, method_key)
    # The cell's suite, plus any column a sweep stopped asking for that its observed suite still
    # holds (`specs.metric_version`): the row holds what `metric_spec`'s version stands for.
    suite = owed_suite(keystore.metric_suite(cell_sweeps), last_data_version(context.instance, "metric_spec", cell))
    versions = column_versions(suite)
    table = integrity.read_parquet(storage.asset_path("dataset", data_key))
    emb = integrity.read_parquet(storage.asset_path("embedding", cell))
    inputs = digest({"dataset": content_version(table).value, "embedding": content_version(emb).value}, length=16)
    previous = previous_columns(cell)
    carried = {
        m.column: previous[m.column]
        for m in suite
        if m.column in previous
        and previous[m.column].get("version") == versions[m.column]
        and previous[m.column].get("inputs") == inputs
    }
    todo = [m for m in suite if m.column not in carried]
    # Nothing to compute when every column is carried; otherwise the row may have been computed
    # elsewhere from the same inputs by the same code (the results cache).
    identity = metrics_identity(cell, data.seed, versions, inputs) if todo else None
    with lineage.timed() as t:
        hit = identity and results_cache.lookup(identity)
    if hit:
        path, df, prov = cached.restore(hit, METRICS_FILE, storage.asset_path("metrics", cell))
        return _result(df, prov, t, path, suite, cell_sweeps, data, method, {}, {}, hit)
    with lineage.timed() as t:
        latent = latent_table.latent(data, rng(data.seed, GENERATE_STREAM), generated_by(data)) if todo else None
        computed = compute_columns(todo, table, emb, data.seed, latent) if todo else {}
    columns = {
        m.column: {**(carried.get(m.column) or computed[m.column]), "version": versions[m.column], "inputs": inputs}
        for m in suite
    }
    values = {c: r["value"] for c, r in columns.items()}
    sha, dirty = lineage.git_state()
    row = {
        "partition": cell,
        "data": data_key,
        "method": method_key,
        "dataset": data.dataset,
        "method_name": method.method,
        "seed": data.seed,
        "n": len(table),
        "git_sha": sha,
        "git_dirty": dirty,
        **values,
    }
    df = pd.DataFrame([row])
    code = digest({m.column: column_digest(m.metric) for m in suite}, length=12)
    prov = lineage.provenance({"metrics": list(values)}, data.seed, CODE_VERSION, code_digest=code)
    # What the next materialization compares (`previous_columns`): the value itself is in the row.
    recorded = {c: {k: v for k, v in r.items() if k != "value"} for c, r in columns.items()}
    prov = {**prov, "columns": recorded}
    path = cached.write_and_keep(
        storage.asset_path("metrics", cell),
        storage.parquet_bytes(df, prov),
        identity,
        METRICS_FILE,
        cached.origin(context, prov),
    )
    wandb = tracked.track(cell, data, method, cell_sweeps, values, emb, sha)
    if "wandb_error" in wandb:
        context.log.warning(f"W&B tracking failed (the cell is fine): {wandb['wandb_error']}")
    return _result(df, prov, t, path, suite, cell_sweeps, data, method, carried, wandb, None)


def metrics_identity(cell: str, seed: int, versions: dict[str, str], inputs: str) -> dict:
    """What a cell's metrics row is computed from (its results cache key): this step's code, each
    column's code version, the seed (sampled metrics), the embedding's and dataset's contents, and
    the cell (the row names it)."""
    return {
        "asset": "metrics",
        "code_version": CODE_VERSION,
        "cell": cell,
        "seed": seed,
        "columns": versions,
        "inputs": inputs,
    }


def _result(df, prov, t, path, suite, cell_sweeps, data, method, carried, wandb, hit) -> dg.MaterializeResult:
    """The materialization of a row, computed (`hit` None) or from the results cache: its file's
    provenance (`columns`: each column's version, inputs, not-applicable reason, sample) says what
    the metadata shows."""
    columns = prov["columns"]
    values = {c: float(df[c].iloc[0]) for c in columns}
    not_applicable = {c: r["not_applicable"] for c, r in columns.items() if "not_applicable" in r}
    sampled = {c: r["sampled"] for c, r in columns.items() if "sampled" in r}
    status = CACHED if hit else COMPUTED
    how = {c: {"status": CARRIED if c in carried else status, "code_version": r["version"]} for c, r in columns.items()}
    return dg.MaterializeResult(
        metadata=materialization_metadata(
            prov,
            t,
            1,
            path,
            label=cell_label(data, method, cell_sweeps),
            **{f"{metric_history.PREFIX}{c}": v for c, v in values.items()},
            not_applicable=dg.MetadataValue.json(not_applicable),
            subsampled=dg.MetadataValue.json(sampled),
            columns=dg.MetadataValue.json(how),
            computed_columns=0 if hit else len(columns) - len(carried),
            carried_columns=len(carried),
            **wandb,
            **cached.metadata(hit),
        ),
        data_version=content_version(df.drop(columns=["git_sha", "git_dirty"])),
        check_results=asset_checks.check_metrics(suite, values, not_applicable),
    )
