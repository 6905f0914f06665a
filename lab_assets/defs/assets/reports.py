"""metric_table -> report: results consolidated across cells, and per-sweep reports.

`metric_table` holds every materialized cell's metric row (the lab's results table, queryable
with pandas or DuckDB). `report` is partitioned by sweep: it selects that sweep's cells and
writes the table as Parquet/CSV/Markdown plus the figures, under `<lab home>/reports/<sweep>/`.
"""

import base64
from datetime import timedelta

import dagster as dg
import pandas as pd

from lab_assets.core import lineage, side_process, storage
from lab_assets.core.integrity import of_bytes
from lab_assets.defs import inflight, integrity, step_versions
from lab_assets.defs.assets.datasets import content_version, with_names
from lab_assets.defs.assets.metrics import metrics
from lab_assets.defs.assets.specs import sweep_spec
from lab_assets.defs.metadata import materialization_metadata
from lab_assets.defs.partitions import SWEEP
from lab_assets.dr import keystore, report_drawing, summary, tables, tidy
from lab_assets.dr.sweep import Sweep

GROUP = "reports"
CODE_VERSION = step_versions.declared(__name__)  # declared, with the figures, summary and tables: defs/step_versions.py
ID_COLUMNS = ["partition", "data", "method", "dataset", "method_name", "seed", "n", "git_sha", "git_dirty"]


def read_metric_rows() -> pd.DataFrame:
    files = storage.glob(storage.url("assets", "metrics", "*", "*.parquet"))
    if not files:
        return pd.DataFrame(columns=ID_COLUMNS)
    table = integrity.read_parquets(files)
    metric_cols = sorted(c for c in table.columns if c not in ID_COLUMNS)
    return table[ID_COLUMNS + metric_cols]


# Asset-level freshness (Dagster's is per asset, not per partition): with nightly sweep
# schedules the consolidated tables are rebuilt at least daily; older than that, the UI warns,
# then fails. Per-cell freshness is staleness instead: `lab sweep plan` / the stale badges.
TABLE_FRESHNESS = dg.FreshnessPolicy.time_window(fail_window=timedelta(hours=48), warn_window=timedelta(hours=26))


@dg.asset(
    deps=[metrics],
    group_name=GROUP,
    code_version=CODE_VERSION,
    kinds={"parquet"},
    freshness_policy=TABLE_FRESHNESS,
)
def metric_table(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
    """Every materialized cell's metrics in one table; each row names its partition and git SHA."""
    inflight.claim(context)
    with lineage.timed() as t:
        table = read_metric_rows()
    prov = lineage.provenance({"cells": len(table)}, None, CODE_VERSION)
    path = storage.write_parquet(storage.asset_path("metric_table"), table, prov)
    return dg.MaterializeResult(
        metadata=materialization_metadata(prov, t, len(table), path), data_version=content_version(table)
    )


def report_dir(sweep_name: str) -> str:
    return storage.url("reports", sweep_name)


def report_files(sweep: Sweep) -> dict[str, bytes]:
    """The report of one sweep, from the current metric table and embeddings, as {file name:
    bytes}: everything is read and drawn before anything is written."""
    table = tidy.sweep_table(sweep, integrity.read_parquet(storage.asset_path("metric_table")))
    markdown = table.drop(columns=["git_sha", "data", "method"]).to_markdown(index=False, floatfmt=".4f")
    stats = summary.summarize(sweep, table)
    comparisons = summary.compare(sweep, table, stats)
    summary_md = tables.summary_markdown(sweep.name, stats, comparisons)
    # The class names (cell types) ride along for the gallery's legends.
    panels = tidy.first_seed_embeddings(sweep, lambda path, d: with_names(integrity.read_parquet(path), d))
    return {
        "metrics.parquet": storage.parquet_bytes(table),
        "metrics.csv": table.to_csv(index=False).encode(),
        "metrics.md": (markdown + "\n").encode(),
        "summary.parquet": storage.parquet_bytes(stats),
        "summary.csv": stats.to_csv(index=False).encode(),
        "summary.md": (summary_md + "\n").encode(),
        "comparisons.parquet": storage.parquet_bytes(comparisons),
        "comparisons.csv": comparisons.to_csv(index=False).encode(),
        **report_drawing.drawn(sweep, table, stats, comparisons, panels),
    }


# The report's `<key>_path` metadata entries (the UI's links to its files), by file name.
PATH_NAMES = {
    "parquet": "metrics.parquet",
    "csv": "metrics.csv",
    "markdown": "metrics.md",
    "summary_parquet": "summary.parquet",
    "summary_csv": "summary.csv",
    "summary_markdown": "summary.md",
    "comparisons_parquet": "comparisons.parquet",
    "comparisons_csv": "comparisons.csv",
    "embeddings": "embeddings.png",
    "metric_curves": "metrics_vs_k.png",
    "report_html": "report.html",
}


def _inline_png(title: str, png: bytes) -> dg.MetadataValue:
    encoded = base64.b64encode(png).decode()
    return dg.MetadataValue.md(f"**{title}**\n\n![{title}](data:image/png;base64,{encoded})")


@dg.asset(
    partitions_def=SWEEP,
    # sweep_spec: what the report shows besides the table (its cells, labels and columns), so a
    # metric taken out of the sweep re-renders the report without recomputing any cell.
    deps=[metric_table, sweep_spec, dg.AssetDep("embedding", partition_mapping=dg.AllPartitionMapping())],
    group_name=GROUP,
    code_version=CODE_VERSION,
    kinds={"parquet", "csv", "markdown", "png", "html"},
    freshness_policy=TABLE_FRESHNESS,
)
def report(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
    """A sweep's summary over seeds (mean ± sd, 95% interval, rank, best vs runner-up), its
    per-cell metric table (Parquet, CSV, Markdown) and figures."""
    inflight.claim(context)
    sweep = keystore.sweep(context.partition_key)
    with lineage.timed() as t:
        files = report_files(sweep)
        # Replaced as a whole or not at all: figures and tables never of two versions.
        paths = storage.replace_folder(report_dir(sweep.name), files)
    table = storage.parquet_frame(files["metrics.parquet"])
    wandb = side_process.track_sweep(sweep.name, storage.parquet_frame(files["summary.parquet"]))
    if "wandb_error" in wandb:
        context.log.warning(f"W&B tracking failed (the report is fine): {wandb['wandb_error']}")
    prov = lineage.provenance({"sweep": sweep.name, "source": sweep.source}, None, CODE_VERSION)
    fingerprints = {paths[name]: of_bytes(data) for name, data in files.items()}
    return dg.MaterializeResult(
        metadata={
            **materialization_metadata(prov, t, len(table), report_dir(sweep.name), fingerprints),
            "cells": f"{len(table)} of {len(sweep.cells)}",
            # Seed-aggregated first: what a person reads; the per-cell table below it.
            "summary": dg.MetadataValue.md(files["summary.md"].decode()),
            "table": dg.MetadataValue.md(files["metrics.md"].decode()),
            # Inline, so the figures show in the UI's materialization view without file access.
            "embeddings": _inline_png("Embeddings (first seed), coloured by label", files["embeddings.png"]),
            "metrics_vs_k": _inline_png("Metrics vs k (mean, min-max over seeds)", files["metrics_vs_k.png"]),
            **{f"{key}_path": dg.MetadataValue.path(paths[name]) for key, name in PATH_NAMES.items()},
            **wandb,
        },
        data_version=content_version(table),
    )
