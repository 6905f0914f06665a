"""Which runs compete for a partition (defs/inflight.py), on a real SQLite instance with runs of
the real jobs: the same partition and a common asset, whatever the job. A UI or sensor backfill
runs Dagster's implicit asset job with an asset selection; a `lab sweep run` run is a
`materialize_*` job; each must find the other."""

import time

import dagster as dg
import pytest

from lab_assets.defs import inflight
from lab_assets.defs.jobs import CELLS, DATASETS, METRIC_TABLE, REPORT, job_name
from lab_assets.runner.local import definitions
from lab_assets.runtime.instance import get_instance
from lab_assets.runtime.run_assets import run_assets

CELL = "swissroll-abc|pca-def"
OTHER_CELL = "swissroll-abc|isomap-ghi"
STARTED = dg.DagsterRunStatus.STARTED


def _keys(*names: str) -> frozenset[dg.AssetKey]:
    return frozenset(dg.AssetKey(n) for n in names)


def _backfill_run(instance, assets: tuple[str, ...], partition: str | None, status=STARTED) -> dg.DagsterRun:
    """A run as a UI or sensor backfill creates it: the implicit asset job, an asset selection."""
    tags = {} if partition is None else {"dagster/partition": partition}
    return instance.create_run_for_job(
        job_def=definitions().resolve_implicit_global_asset_job_def(),
        asset_selection=set(_keys(*assets)),
        status=status,
        tags={**tags, "dagster/backfill": "abcdefgh"},
    )


def _job_run(instance, kind: str, partition: str | None, command: str = "someone-else", status=STARTED, **extra):
    """A run of a `materialize_*` job as another `lab sweep run` creates it (the whole job)."""
    tags = {} if partition is None else {"dagster/partition": partition}
    return instance.create_run_for_job(
        job_def=definitions().resolve_job_def(job_name(kind)),
        status=status,
        tags={**tags, inflight.COMMAND_TAG: command, **extra},
    )


@pytest.fixture
def instance(lab):
    return get_instance()


def test_a_run_materializes_its_selection_or_its_whole_jobs_assets(instance):
    cells = _job_run(instance, CELLS, CELL)
    assert not cells.asset_selection  # a whole job's run selects nothing: its plan says what it does
    assert run_assets(instance, cells) == _keys("model", "embedding", "metrics")
    assert run_assets(instance, _job_run(instance, DATASETS, CELL)) == _keys("raw_dataset", "dataset")
    assert run_assets(instance, _backfill_run(instance, ("dataset", "embedding"), CELL)) == _keys(
        "dataset", "embedding"
    )


def test_a_backfill_run_of_the_cells_assets_is_found_by_a_commands_look_and_its_claim(instance):
    tags = inflight.command_tags(time.time())
    backfill = _backfill_run(instance, ("raw_dataset", "dataset", "embedding", "metrics"), CELL)
    _backfill_run(instance, ("embedding", "metrics"), OTHER_CELL)  # another partition: never

    # The runner's look before launching, for each of the command's runs of that cell.
    for kind, assets in ((DATASETS, ("raw_dataset", "dataset")), (CELLS, ("embedding", "metrics"))):
        found = inflight.other_run(instance, job_name(kind), CELL, tags, assets=assets)
        assert found is not None and found.dagster_run.run_id == backfill.run_id, kind
    # A cell nobody else computes.
    assert inflight.other_run(instance, job_name(CELLS), "blobs-x|pca-def", tags, assets=("embedding",)) is None

    # The claim of a run created later (the whole materialize_cells job) finds it too...
    later = _job_run(instance, CELLS, CELL, command=tags[inflight.COMMAND_TAG], **tags)
    found = inflight.other_run(instance, later.job_name, CELL, later.tags, later.run_id)
    assert found is not None and found.dagster_run.run_id == backfill.run_id
    # ...and the backfill's claim does not yield to that later run: the earlier run wins.
    assert inflight.other_run(instance, backfill.job_name, CELL, backfill.tags, backfill.run_id) is None


def test_a_commands_run_in_flight_is_found_by_a_later_backfill_runs_claim(instance):
    datasets = _job_run(instance, DATASETS, CELL)
    backfill = _backfill_run(instance, ("raw_dataset", "dataset", "embedding", "metrics"), CELL)
    found = inflight.other_run(instance, backfill.job_name, CELL, backfill.tags, backfill.run_id)
    assert found is not None and found.dagster_run.run_id == datasets.run_id


def test_runs_of_the_same_partition_with_no_common_asset_do_not_compete(instance):
    tags = inflight.command_tags(time.time())
    _backfill_run(instance, ("raw_dataset", "dataset"), CELL)  # the cell's dataset only
    _backfill_run(instance, ("metrics",), OTHER_CELL)  # metrics, another cell
    assert inflight.other_run(instance, job_name(CELLS), CELL, tags, assets=("embedding", "metrics")) is None
    cells = _job_run(instance, CELLS, CELL, command=tags[inflight.COMMAND_TAG], **tags)
    assert inflight.other_run(instance, cells.job_name, CELL, cells.tags, cells.run_id) is None
    # The sweep's plan and its report share the sweep partition, not an asset.
    sweep_run = _job_run(instance, "sweep", "tiny")
    assert run_assets(instance, sweep_run) == _keys("sweep")
    assert inflight.other_run(instance, job_name(REPORT), "tiny", tags, assets=("report",)) is None


def test_success_after_the_plan_counts_and_a_commands_own_runs_never_do(instance):
    tags = inflight.command_tags(time.time() - 5)
    done = _backfill_run(instance, ("embedding", "metrics"), CELL, status=dg.DagsterRunStatus.NOT_STARTED)
    # Its success as the run itself reports it (the event that sets the run's end time).
    instance.report_dagster_event(
        dg.DagsterEvent(event_type_value="PIPELINE_SUCCESS", job_name=done.job_name), run_id=done.run_id
    )
    assert instance.get_run_by_id(done.run_id).status == dg.DagsterRunStatus.SUCCESS
    found = inflight.other_run(instance, job_name(CELLS), CELL, tags, assets=("embedding", "metrics"))
    assert found is not None and found.dagster_run.run_id == done.run_id
    # Planned after it ended: computed again.
    assert (
        inflight.other_run(
            instance, job_name(CELLS), CELL, inflight.command_tags(time.time() + 5), assets=("embedding", "metrics")
        )
        is None
    )
    # The command's own run in flight is never waited for.
    _job_run(instance, CELLS, OTHER_CELL, command=tags[inflight.COMMAND_TAG])
    assert inflight.other_run(instance, job_name(CELLS), OTHER_CELL, tags, assets=("embedding",)) is None


def test_the_unpartitioned_metric_table_competes_across_jobs(instance):
    tags = inflight.command_tags(time.time())
    for cell in (CELL, OTHER_CELL):  # partitioned runs in flight around it
        _backfill_run(instance, ("embedding", "metrics"), cell)
    table = _backfill_run(instance, ("metric_table",), None)
    _backfill_run(instance, ("report",), "tiny")
    found = inflight.other_run(instance, job_name(METRIC_TABLE), None, tags, assets=("metric_table",))
    assert found is not None and found.dagster_run.run_id == table.run_id
    assert inflight.other_run(instance, job_name(REPORT), "tiny", tags, assets=("metric_table",)) is None


def test_a_caller_naming_no_assets_matches_runs_of_its_job(instance):
    """The study loop's runs (no assets named): other runs of the same job and partition."""
    tags = inflight.command_tags(time.time())
    trial = _job_run(instance, "gpt_model", "corpus-a|trial-b")
    found = inflight.other_run(instance, job_name("gpt_model"), "corpus-a|trial-b", tags)
    assert found is not None and found.dagster_run.run_id == trial.run_id
    assert inflight.other_run(instance, job_name("corpus"), "corpus-a|trial-b", tags) is None


def test_a_finished_run_that_computed_part_of_this_one_leaves_the_rest_to_do(lab, instance):
    """A backfill's run materialized a new cell's dataset only: a command's run of that cell
    (dataset and cell) is not done by it; what is left is the cell's own run, which that finished
    run does not block; and, run for real, it computes the cell."""
    from lab_assets.defs.jobs import CELLS_WITH_DATA
    from lab_assets.defs.work import Run, remaining
    from lab_assets.dr.sweep import load_sweep
    from lab_assets.runner.local import execute_run
    from lab_assets.runner.run import MATERIALIZED
    from lab_assets.runner.sweeps import register_and_plan

    register_and_plan(load_sweep(lab / "sweeps" / "tiny.yaml"))
    cell = instance.get_dynamic_partitions("cell")[0]
    tags = inflight.command_tags(time.time() - 5)
    data_only = (
        definitions()
        .resolve_job_def(job_name(DATASETS))
        .execute_in_process(instance=instance, partition_key=cell, tags={inflight.COMMAND_TAG: "someone-else"})
    )
    done = instance.get_run_by_id(data_only.run_id)
    whole = Run(CELLS_WITH_DATA, cell, assets=("raw_dataset", "dataset", "embedding", "metrics"))

    assert inflight.computed(instance, done) == {"raw_dataset", "dataset"}
    rest = remaining(whole, inflight.computed(instance, done))
    assert (rest.job, rest.assets) == (CELLS, ("embedding", "metrics"))
    assert remaining(rest, {"raw_dataset", "dataset", "embedding", "metrics", "model"}) is None
    # The finished run covers only part of the whole run: not a reason to skip it, nor the rest.
    assert inflight.other_run(instance, job_name(CELLS_WITH_DATA), cell, tags, assets=whole.assets) is None
    assert inflight.other_run(instance, job_name(CELLS), cell, tags, assets=rest.assets) is None
    outcome = execute_run(whole, tags)
    assert outcome.status == MATERIALIZED and outcome.job == CELLS_WITH_DATA, outcome
    assert instance.get_latest_materialization_event(dg.AssetKey("metrics")) is not None


def test_a_run_waited_for_that_computed_only_the_dataset_leaves_the_cell_to_the_waiter(lab, instance):
    """A backfill's run of a new cell's dataset is in flight; a command's run of that cell waits
    for it, then computes the cell only: each asset of the partition is materialized once."""
    import threading

    from lab_assets.defs.jobs import CELLS_WITH_DATA
    from lab_assets.defs.work import Run
    from lab_assets.dr.sweep import load_sweep
    from lab_assets.runner.local import execute_run
    from lab_assets.runner.run import MATERIALIZED
    from lab_assets.runner.sweeps import register_and_plan

    register_and_plan(load_sweep(lab / "sweeps" / "tiny.yaml"))
    cell = instance.get_dynamic_partitions("cell")[0]
    theirs = {inflight.COMMAND_TAG: "someone-else"}
    backfill = instance.create_run_for_job(
        job_def=definitions().resolve_implicit_global_asset_job_def(),
        asset_selection=set(_keys("raw_dataset", "dataset")),
        status=STARTED,
        tags={"dagster/partition": cell, **theirs},
    )

    def the_backfill_computes_the_dataset():
        time.sleep(1.0)  # the command is waiting by then
        definitions().resolve_job_def(job_name(DATASETS)).execute_in_process(
            instance=instance, partition_key=cell, tags=theirs
        )
        instance.report_dagster_event(
            dg.DagsterEvent(event_type_value="PIPELINE_SUCCESS", job_name=backfill.job_name), run_id=backfill.run_id
        )

    other = threading.Thread(target=the_backfill_computes_the_dataset)
    other.start()
    outcome = execute_run(
        Run(CELLS_WITH_DATA, cell, assets=("raw_dataset", "dataset", "embedding", "metrics")),
        inflight.command_tags(time.time()),
    )
    other.join()
    assert outcome.status == MATERIALIZED and outcome.job == CELLS_WITH_DATA, outcome
    for asset in ("raw_dataset", "dataset", "embedding", "metrics"):
        records = instance.fetch_materializations(dg.AssetKey(asset), limit=10).records
        assert [r.asset_materialization.partition for r in records] == [cell], asset
