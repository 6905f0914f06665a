"""The project's own dagster.yaml (what `lab` and `lab ui` use): one pooled event database that
parallel workers share, with every cell still its own run and materialization."""

import shutil

import dagster as dg
from lab_assets import execute, instance
from lab_assets.event_log import PooledSqliteEventLogStorage
from lab_assets.plan import FRESH, make_plan
from lab_assets.sweep import load_sweep
from lab_assets_tests.conftest import REPO


def test_sweep_on_the_project_instance_config(lab):
    home = lab / ".lab" / "dagster"
    shutil.copyfile(REPO / "dagster.yaml", home / "dagster.yaml")
    instance.get_instance.cache_clear()
    inst = instance.get_instance()
    assert isinstance(inst.event_log_storage, PooledSqliteEventLogStorage)

    sweep = load_sweep(lab / "sweeps" / "tiny.yaml")
    result = execute.run_sweep(sweep, workers=2)  # two spawned workers writing one database
    assert not result.failed and result.count("cells") == 4

    cells = {f"{d}|{m}" for d, m in sweep.cells}
    records = inst.fetch_materializations(dg.AssetKey("metrics"), limit=100).records
    assert sorted(r.asset_materialization.partition for r in records) == sorted(cells)
    assert len({r.run_id for r in records}) == 4  # one run per cell, as before
    assert (home / "event_log.db").is_file()
    assert not list(home.rglob("storage/*.db"))  # no per-run databases
    assert make_plan(sweep, inst, execute._defs().resolve_asset_graph()).counts[FRESH] == 4
