"""The plan's kept answers (runtime/freshness/kept_answers.py): a cell with no new event is not asked about
again, and a cell with one is, so a cached plan never says less than Dagster's resolver would:
after every change below it equals the plan computed without the cache."""

import dagster as dg
import pytest

from lab_assets.core import keys
from lab_assets.core.settings import lab_home
from lab_assets.defs.freshness import plan_sweep
from lab_assets.dr.sweep import load_sweep
from lab_assets.runner.preload import definitions
from lab_assets.runtime.data_versions import DATA_VERSION_TAG, observe
from lab_assets.runtime.freshness import instance_head, stale_status
from lab_assets.runtime.instance import get_instance
from lab_assets_tests.conftest import lab_cli


@pytest.fixture
def finished(lab):
    """The tiny sweep run to the end (4 cells); its run saved the kept answers."""
    out = lab_cli("sweep", "run", "sweeps/tiny.yaml", "--workers", "1", "--quiet", cwd=lab)
    assert out.returncode == 0, out.stderr
    return load_sweep(lab / "sweeps" / "tiny.yaml")


@pytest.fixture
def asked(monkeypatch) -> set[str | None]:
    """The partitions Dagster's resolver is asked about (a status or a spec's version)."""
    found: set[str | None] = set()
    reader = stale_status.StaleStatusReader
    status, observed = reader.status, reader.observed

    def spy_status(self, asset, partition):
        found.add(partition)
        return status(self, asset, partition)

    def spy_observed(self, asset, partition=None):
        found.add(partition)
        return observed(self, asset, partition)

    monkeypatch.setattr(reader, "status", spy_status)
    monkeypatch.setattr(reader, "observed", spy_observed)
    return found


def flat(plan) -> dict:
    """{partition: (status, reason)} for the cells, the data keys and the report."""
    return {
        **{c.partition: (c.status, c.reason) for c in plan.cells},
        **{k: (s.status, s.reason) for k, s in plan.datasets.items()},
        "report": (plan.report.status, plan.report.reason),
    }


def cached(sweep) -> dict:
    return flat(plan_sweep(sweep, get_instance(), definitions().resolve_asset_graph(), cache=lab_home() / "cache"))


def uncached(sweep) -> dict:
    return flat(plan_sweep(sweep, get_instance(), definitions().resolve_asset_graph()))


def test_only_cells_with_new_events_are_asked_again_and_the_plan_equals_dagsters(finished, asked, monkeypatch):
    sweep, instance = finished, get_instance()
    cells = [keys.cell_key(d, m) for d, m in sweep.cells]
    indexed, storage = [], type(instance.event_log_storage)
    latest = storage.get_latest_storage_id_by_partition
    monkeypatch.setattr(
        storage,
        "get_latest_storage_id_by_partition",
        lambda self, key, *args: indexed.append(key.to_user_string()) or latest(self, key, *args),
    )
    asked.clear()
    plan = cached(sweep)  # from the answers the run kept
    assert asked & set(cells) == set()
    cell_assets = ["data_spec", "dataset", "embedding", "method_spec", "metrics", "model", "raw_dataset"]
    assert sorted(a for a in indexed if a in cell_assets) == cell_assets, (
        "the stamps and the file checks read the index twice"
    )
    assert plan == uncached(sweep) and {s for s, _ in plan.values()} == {"fresh"}

    # A dataset partition materialized again with other data: its cell's embedding is stale.
    instance.report_runless_asset_event(
        dg.AssetMaterialization(asset_key="dataset", partition=cells[0], tags={DATA_VERSION_TAG: "other data"})
    )
    # A spec observed with another version (edited method code): stale before any run.
    observe(instance, "method_spec", "another method version", cells[1])
    # A cell's embedding materialized again with other data: its metrics are stale.
    instance.report_runless_asset_event(
        dg.AssetMaterialization(asset_key="embedding", partition=cells[2], tags={DATA_VERSION_TAG: "other embedding"})
    )
    asked.clear()
    plan = cached(sweep)
    assert asked & set(cells) == set(cells[:3]), "asked about other cells than the changed ones"
    assert plan == uncached(sweep)
    assert [plan[c][0] for c in cells] == ["stale", "stale", "stale", "fresh"]
    asked.clear()
    assert cached(sweep) == plan
    assert asked & set(cells) == set(), "the changed cells' new answers were not kept"


@pytest.mark.slow
def test_a_deleted_run_drops_every_kept_answer(finished, asked):
    """SQLite gives the next event the id of a deleted newest one: a kept stamp could name a
    new event. Deleting any event stored before the answers were kept (here: the last run, as
    the UI's "Delete run" does) drops them all."""
    sweep, instance = finished, get_instance()
    cells = [keys.cell_key(d, m) for d, m in sweep.cells]
    cached(sweep)
    home = lab_home() / "dagster"
    mark = instance_head.deletion_mark(home)
    assert not instance_head.deleted_since(home, mark)

    last = instance.get_runs(limit=1)[0]
    instance.delete_run(last.run_id)  # its events too, the newest among them
    observe(instance, "method_spec", "another version", cells[0])  # may be stored under a deleted id
    assert instance_head.deleted_since(home, mark)
    asked.clear()
    plan = cached(sweep)
    assert set(cells) <= asked, "kept answers survived a deletion"
    assert plan == uncached(sweep)


def test_a_wiped_asset_is_asked_about_again(finished, asked):
    """A wipe (the UI's "Wipe materializations") deletes nothing: the events stay, hidden from
    Dagster's queries, and the wiped asset's stamps change with them."""
    sweep, instance = finished, get_instance()
    cells = [keys.cell_key(d, m) for d, m in sweep.cells]
    cached(sweep)
    instance.wipe_assets([dg.AssetKey("embedding")])
    asked.clear()
    plan = cached(sweep)
    assert set(cells) <= asked
    assert plan == uncached(sweep) and {plan[c][0] for c in cells} == {"missing"}
