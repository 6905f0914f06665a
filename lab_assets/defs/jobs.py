"""The jobs, one per kind of run, and their names: the only place a `materialize_*` name is made.

A run materializes one partition of one job. Job names differ from asset names (Dagster refuses
"conflicting definitions"), hence the `materialize_` prefix; a job selects assets of one
partitions definition only, hence one job per partition shape.
"""

import dagster as dg

from lab_assets.defs import partitions
from lab_assets.defs.assets.datasets import dataset, raw_dataset
from lab_assets.defs.assets.experiments import model_and_embedding
from lab_assets.defs.assets.metrics import metrics
from lab_assets.defs.assets.reports import metric_table, report
from lab_assets.defs.assets.sweeps import sweep
from lab_assets.defs.assets.training import corpus, gpt_model

# The kinds of run: what outcomes, progress bars and `--json` summaries count by.
DATASETS, CELLS, METRIC_TABLE, REPORT, CORPUS, TRIAL = (
    "datasets",
    "cells",
    "metric_table",
    "report",
    "corpus",
    "gpt_model",
)
# A cell's run that materializes its dataset partition first (a new cell): one run where two
# would pay the run overhead twice and wait at a phase barrier. Its outcome counts as both kinds.
CELLS_WITH_DATA = "cells_with_data"
PARTS = {CELLS_WITH_DATA: (DATASETS, CELLS)}
DATA_STEPS = frozenset({"raw_dataset", "dataset"})  # the steps of a CELLS_WITH_DATA run that are its dataset's
# What one run of a kind materializes, in words ("its dataset failed").
WHAT = {
    DATASETS: "dataset",
    CELLS: "cell",
    METRIC_TABLE: "metric table",
    REPORT: "report",
    CORPUS: "corpus",
    TRIAL: "trial",
}
PARTITIONS: dict[str, dg.PartitionsDefinition | None] = {
    DATASETS: partitions.CELL,
    CELLS: partitions.CELL,
    CELLS_WITH_DATA: partitions.CELL,
    METRIC_TABLE: None,
    REPORT: partitions.SWEEP,
    CORPUS: partitions.CORPUS,
    TRIAL: partitions.TRIAL_CELL,
}


def job_name(kind: str) -> str:
    return f"materialize_{kind}"


# What `lab sweep run` launches, one partition per run; the UI can launch them too.
SWEEP_JOBS = [
    dg.define_asset_job(job_name(DATASETS), selection=[raw_dataset, dataset]),
    dg.define_asset_job(job_name(CELLS), selection=[model_and_embedding, metrics]),
    dg.define_asset_job(job_name(CELLS_WITH_DATA), selection=[raw_dataset, dataset, model_and_embedding, metrics]),
    dg.define_asset_job(job_name(METRIC_TABLE), selection=[metric_table]),
    dg.define_asset_job(job_name(REPORT), selection=[report]),
    # The sweep's plan, whose materialization the `sweep_launches` sensor answers with a backfill.
    dg.define_asset_job(job_name("sweep"), selection=[sweep]),
]
STUDY_JOBS = [  # what the study_loop sensor may request
    dg.define_asset_job(job_name(CORPUS), selection=[corpus]),
    dg.define_asset_job(job_name(TRIAL), selection=[gpt_model]),
]


def partition_tags(kind: str, partition: str | dg.MultiPartitionKey | None) -> dict[str, str]:
    """The `dagster/partition*` tags that make a run launched by job name a run of that partition."""
    partitions_def = PARTITIONS[kind]
    return (
        {}
        if partition is None or partitions_def is None
        else dict(partitions_def.get_tags_for_partition_key(partition))
    )
