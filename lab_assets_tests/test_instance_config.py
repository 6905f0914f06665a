"""The instance `lab` and `lab ui` use (the project's dagster.yaml plus what instance.py adds: the
one-database event log, pooled run storage, file-only compute logs): one event database that
parallel workers share, with every cell still its own run and materialization."""

import shutil
import sys

import dagster as dg
import pytest

from lab_assets.core import keys
from lab_assets.defs.freshness import plan_sweep
from lab_assets.dr.sweep import load_sweep
from lab_assets.runner.local import definitions
from lab_assets.runner.sweeps import materialize_sweep
from lab_assets.runtime import instance
from lab_assets.runtime.compute_logs import FileOnlyComputeLogManager
from lab_assets.runtime.sqlite_storage import OneEngineSqliteEventLogStorage, OneEngineSqliteRunStorage
from lab_assets_tests.conftest import REPO


@pytest.mark.slow
def test_sweep_on_the_project_instance_config(lab, monkeypatch):
    # As `lab` runs for a user: no DAGSTER_HOME, the project's dagster.yaml copied into the lab home.
    shutil.copyfile(REPO / "dagster.yaml", lab / "dagster.yaml")
    monkeypatch.delenv("DAGSTER_HOME")
    home = lab / ".lab" / "dagster"
    (home / "dagster.yaml").unlink()
    inst = instance.get_instance()
    assert isinstance(inst.event_log_storage, OneEngineSqliteEventLogStorage)
    assert isinstance(inst.run_storage, OneEngineSqliteRunStorage)
    assert isinstance(inst.compute_log_manager, FileOnlyComputeLogManager)

    sweep = load_sweep(lab / "sweeps" / "tiny.yaml")
    result = materialize_sweep(sweep, workers=2)  # two spawned workers writing one database
    assert not result.failed and result.count("cells") == 4

    cells = {keys.cell_key(d, m) for d, m in sweep.cells}
    records = inst.fetch_materializations(dg.AssetKey("metrics"), limit=100).records
    assert sorted(r.asset_materialization.partition for r in records) == sorted(cells)
    assert len({r.run_id for r in records}) == 4  # one run per cell, as before
    assert (home / "event_log.db").is_file()
    assert (home / "history" / "runs.db").is_file()  # where Dagster's default keeps run history
    assert not list(home.rglob("storage/*.db"))  # no per-run databases
    # Right after a 2-worker sweep nothing is stale (the asset row's newest-materialization race).
    plan = plan_sweep(sweep, inst, definitions().resolve_asset_graph())
    assert plan.counts == {"missing": 0, "stale": 0, "damaged": 0, "fresh": 4}


def test_project_storage_setting_wins(tmp_path):
    # A project that configures its own storage (Postgres on a cluster) gets none of ours.
    own = "storage:\n  postgres:\n    postgres_url: {env: PG_URL}\n"
    added = instance.instance_yaml(own, tmp_path)
    assert "event_log_storage:" not in added and "run_storage:" not in added
    assert "FileOnlyComputeLogManager" in added
    assert (
        instance.instance_yaml("telemetry:\n  enabled: false\n", tmp_path).count("lab_assets.runtime.sqlite_storage")
        == 2
    )


def test_step_output_reaches_the_ui_log_files(tmp_path, capfd):
    manager = FileOnlyComputeLogManager(base_dir=str(tmp_path))
    key = ["run", "compute_logs", "step"]
    with manager.capture_logs(key):
        print("hello from a step", flush=True)
        print("to stderr", file=sys.stderr, flush=True)
    logs = manager.get_log_data(key)
    assert logs.stdout.decode() == "hello from a step\n" and logs.stderr.decode() == "to stderr\n"
    assert manager.is_capture_complete(key)
    out, err = capfd.readouterr()
    assert "hello from a step" not in out and "to stderr" not in err  # not mirrored to the terminal


def test_asset_row_keeps_the_newest_materialization_when_updates_arrive_out_of_order(lab):
    # Two workers: event ids are given in one order, the asset's row may be updated in the other.
    # Before the fix, ~5 cells in 1,000 planned stale right after a 2-worker sweep.
    inst = instance.get_instance()
    key = dg.AssetKey("embedding_like")
    for partition in ("a", "b"):  # NaN metadata (a metric that could not be computed) is not JSON
        inst.report_runless_asset_event(dg.AssetMaterialization(key, partition=partition, metadata={"m": float("nan")}))
    older, newer = sorted(inst.fetch_materializations(key, limit=10).records, key=lambda r: r.storage_id)
    inst.event_log_storage.store_asset_event(older.event_log_entry, older.storage_id)  # the late update
    record = inst.get_asset_records([key])[0]
    assert record.asset_entry.last_materialization_record.storage_id == newer.storage_id
    # A genuinely newer materialization still moves the row forward.
    inst.report_runless_asset_event(dg.AssetMaterialization(key, partition="a"))
    latest = max(r.storage_id for r in inst.fetch_materializations(key, limit=10).records)
    assert inst.get_asset_records([key])[0].asset_entry.last_materialization_record.storage_id == latest
