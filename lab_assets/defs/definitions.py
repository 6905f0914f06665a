"""Everything Dagster loads: assets, jobs, sensors. `dagster dev`, `lab` and the tests all start here."""

import dagster as dg

from lab_assets.core import settings
from lab_assets.defs.assets.datasets import dataset, raw_dataset
from lab_assets.defs.assets.experiments import model_and_embedding
from lab_assets.defs.assets.metrics import metrics
from lab_assets.defs.assets.reports import metric_table, report
from lab_assets.defs.assets.specs import SPECS
from lab_assets.defs.assets.sweeps import sweep
from lab_assets.defs.assets.training import TRAINING_ASSETS
from lab_assets.defs.code_links import with_code_references
from lab_assets.defs.jobs import STUDY_JOBS, SWEEP_JOBS
from lab_assets.defs.sensors import SENSORS
from lab_assets.defs.study_sensor import study_loop


def executor() -> dg.ExecutorDefinition:
    """Chosen by configuration, never by editing code: LAB_EXECUTOR=k8s on a cluster (every step
    its own pod, dagster-k8s), in-process otherwise (a cell's two steps share one process, which
    is what keeps small cells cheap)."""
    choice = settings.executor()
    if choice == "k8s":
        from dagster_k8s import k8s_job_executor

        return k8s_job_executor
    if choice == "in_process":
        return dg.in_process_executor
    raise ValueError(f"LAB_EXECUTOR={choice!r}: allowed values are 'in_process' and 'k8s'")


defs = dg.Definitions(
    assets=with_code_references(
        [*SPECS, raw_dataset, dataset, model_and_embedding, metrics, metric_table, report, sweep, *TRAINING_ASSETS]
    ),
    jobs=[*SWEEP_JOBS, *STUDY_JOBS],
    sensors=[*SENSORS, study_loop],
    executor=executor(),
)
