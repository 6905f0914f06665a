"""The sweep sensors, evaluated with Dagster's own test helpers against a real instance."""

import json
import time

import dagster as dg

from lab_assets.core import keys
from lab_assets.core.cron import last_tick
from lab_assets.defs.definitions import defs
from lab_assets.defs.sensors import SWEEP_TAG, sweep_launches, sweep_registry, sweep_schedules
from lab_assets.dr.sweep import load_sweep
from lab_assets.runner.sweeps import materialize_sweep, register_and_plan
from lab_assets.runtime.backfills import requested_partitions
from lab_assets.runtime.instance import get_instance


def evaluate(sensor, cursor=None):
    """As the daemon evaluates it: `evaluate_tick` validates the requests (a backfill request
    needs the sensor's `asset_selection`), which calling the function directly skips."""
    context = dg.build_sensor_context(instance=get_instance(), cursor=cursor, repository_def=defs.get_repository_def())
    return sensor.evaluate_tick(context)


def test_registry_registers_new_and_edited_sweeps_once(lab):
    inst = get_instance()
    first = evaluate(sweep_registry)
    assert first.skip_message == "registered tiny.yaml"
    sweep = load_sweep(lab / "sweeps" / "tiny.yaml")
    assert sorted(inst.get_dynamic_partitions("cell")) == sorted(keys.cell_key(d, m) for d, m in sweep.cells)
    assert inst.get_dynamic_partitions("sweep") == ["tiny"]

    again = evaluate(sweep_registry, first.cursor)  # nothing changed: nothing to do
    assert again.skip_message == "no new or edited sweep file"

    path = lab / "sweeps" / "tiny.yaml"
    path.write_text(path.read_text().replace("n_neighbors: 12", "n_neighbors: [12, 20]"))
    evaluate(sweep_registry, first.cursor)
    assert len(inst.get_dynamic_partitions("cell")) == 6  # the new method's cells, old ones kept
    # An edit that takes cells out of the sweep takes them out of the UI (no other sweep declares them).
    path.write_text(path.read_text().replace("n_neighbors: [12, 20]", "n_neighbors: 20"))
    evaluate(sweep_registry, first.cursor)
    edited = load_sweep(path)
    assert sorted(inst.get_dynamic_partitions("cell")) == sorted(keys.cell_key(d, m) for d, m in edited.cells)

    (lab / "sweeps" / "broken.yaml").write_text("name: broken\ndata: {nope: {}}\nmethods: {pca: {}}\n")
    result = evaluate(sweep_registry, first.cursor)  # a broken file is logged, the rest still works
    assert "broken" not in inst.get_dynamic_partitions("sweep")
    assert "broken.yaml" in json.loads(result.cursor)


def _with_schedule(lab, cron="0 3 * * *"):
    path = lab / "sweeps" / "tiny.yaml"
    path.write_text(path.read_text() + f'schedule: "{cron}"\n')
    return load_sweep(path)


def _cursor_before_last_tick(cron="0 3 * * *"):
    tick = last_tick(cron, time.time())
    return json.dumps({"tiny": tick - 86400})


def test_schedule_requests_exactly_the_missing_cells_once(lab):
    sweep = _with_schedule(lab)
    first_sight = evaluate(sweep_schedules)
    assert first_sight.run_requests == []  # a new sweep waits for its next tick

    result = evaluate(sweep_schedules, _cursor_before_last_tick())
    [request] = result.run_requests
    assert request.tags[SWEEP_TAG] == "tiny"
    parts = requested_partitions(request)
    cells = [keys.cell_key(d, m) for d, m in sweep.cells]
    expected = (
        {
            (asset, cell) for asset in ("raw_dataset", "dataset", "embedding", "metrics") for cell in cells
        }  # no `model`: nothing trainable
        | {("metric_table", None), ("report", "tiny")}
    )
    assert parts == expected  # exactly: a superset (other sweeps' cells, `model` of PCA) fails

    # The same tick again: handled already, no second backfill.
    assert evaluate(sweep_schedules, result.cursor).run_requests == []


def test_schedule_requests_nothing_when_everything_is_fresh(lab):
    sweep = _with_schedule(lab)
    materialize_sweep(sweep, workers=1)
    assert evaluate(sweep_schedules, _cursor_before_last_tick()).run_requests == []


def test_schedule_requests_only_stale_cells(lab, monkeypatch):
    from lab_assets.dr.methods import METHODS

    sweep = _with_schedule(lab)
    materialize_sweep(sweep, workers=1)
    monkeypatch.setitem(METHODS["pca"].__dict__, "code_version", "edited")
    [request] = evaluate(sweep_schedules, _cursor_before_last_tick()).run_requests
    parts = requested_partitions(request)
    metrics = {keys.parse_cell_key(partition)[1] for asset, partition in parts if asset == "metrics"}
    assert metrics == {m.key for m in sweep.methods if m.method == "pca"}
    assert not any(asset == "dataset" for asset, _ in parts)


def _submit_as_the_daemon_does(request: dg.RunRequest, backfill_id: str, tags: dict | None = None):
    """The daemon's handling of a sensor's backfill request (dagster/_daemon/sensor.py,
    `_submit_backfill_request`): a REQUESTED backfill in the instance, with the request's tags."""
    from dagster._core.execution.backfill import PartitionBackfill

    backfill = PartitionBackfill.from_asset_graph_subset(
        backfill_id=backfill_id,
        backfill_timestamp=time.time(),
        tags=tags or request.tags,
        dynamic_partitions_store=get_instance(),
        asset_graph_subset=request.asset_graph_subset,
        title=None,
        description=None,
        run_config=None,
    )
    get_instance().add_backfill(backfill)
    return backfill


def test_a_tick_while_the_sweeps_backfill_runs_is_skipped_and_the_next_one_is_not(lab):
    from dagster._core.execution.backfill import BulkActionStatus

    _with_schedule(lab)
    [request] = evaluate(sweep_schedules, _cursor_before_last_tick()).run_requests
    backfill = _submit_as_the_daemon_does(request, "tickskip")

    # The next tick comes while that backfill is still running: nothing requested, tick consumed.
    skipped = evaluate(sweep_schedules, _cursor_before_last_tick())
    assert skipped.run_requests == []
    assert json.loads(skipped.cursor)["tiny"] == last_tick("0 3 * * *", time.time())

    # This sweep's finished backfill does not hold the next tick back, another sweep's running one neither.
    get_instance().update_backfill(backfill.with_status(BulkActionStatus.COMPLETED))
    _submit_as_the_daemon_does(request, "othersweep", {SWEEP_TAG: "other"})
    [again] = evaluate(sweep_schedules, _cursor_before_last_tick()).run_requests
    assert requested_partitions(again) == requested_partitions(request)


def _launch_from_the_ui(name: str) -> dg.AssetMaterialization:
    """What the UI's Materialize on `sweep[<name>]` runs."""
    result = defs.resolve_job_def("materialize_sweep").execute_in_process(instance=get_instance(), partition_key=name)
    (event,) = result.asset_materializations_for_node("sweep")
    return event


def test_launching_a_sweep_requests_exactly_its_pending_partitions_once(lab):
    tiny = load_sweep(lab / "sweeps" / "tiny.yaml")
    other_path = lab / "sweeps" / "other.yaml"
    other_path.write_text(
        (lab / "sweeps" / "tiny.yaml")
        .read_text()
        .replace("name: tiny", "name: other")
        .replace("n_neighbors: 12", "n_neighbors: 7")
    )
    other = load_sweep(other_path)
    materialize_sweep(other, workers=1)  # the other sweep shares tiny's data and pca cells
    register_and_plan(tiny)
    shared = {keys.cell_key(d, m) for d, m in set(tiny.cells) & set(other.cells)}
    pending = sorted(keys.cell_key(d, m) for d, m in tiny.cells if keys.cell_key(d, m) not in shared)
    assert len(shared) == 2 and len(pending) == 2

    event = _launch_from_the_ui("tiny")
    meta = {k: v.value for k, v in event.metadata.items()}
    rows = [line for line in meta["cells"].splitlines() if "|" in line][2:]  # the Markdown table's cells
    assert meta["cell_count"] == len(rows) == 4
    # One row per cell, its key's "|" escaped so that it stays one Markdown column, then its labels.
    assert [r.split(" | ")[0].strip("| ").replace("\\|", "|") for r in rows] == [
        keys.cell_key(d, m) for d, m in tiny.cells
    ]
    assert all(r.count(" | ") == 2 for r in rows) and "swissroll seed=0" in rows[0] and "isomap" in rows[1]

    [request] = evaluate(sweep_launches).run_requests
    assert request.tags[SWEEP_TAG] == "tiny"
    assert requested_partitions(request) == (
        {(asset, cell) for asset in ("raw_dataset", "dataset", "embedding", "metrics") for cell in pending}
        | {("metric_table", None), ("report", "tiny")}
    )  # exactly: not the shared fresh cells, nothing of `other`
    cursor = evaluate(sweep_launches).cursor
    assert evaluate(sweep_launches, cursor).run_requests == []  # a launch is answered once


def test_a_metric_added_requests_the_metrics_steps_alone(lab):
    """Scheduled or launched from the UI, a sweep whose only change is a new metric is one
    backfill of its cells' `metrics` (no embedding, model or dataset), its table and report."""
    sweep = _with_schedule(lab)
    materialize_sweep(sweep, workers=1)
    path = lab / "sweeps" / "tiny.yaml"
    path.write_text(path.read_text().replace("  lid: {k: [10]}\n", "  lid: {k: [10]}\n  continuity: {k: [5]}\n"))
    sweep = load_sweep(path)
    register_and_plan(sweep)
    cells = {keys.cell_key(d, m) for d, m in sweep.cells}
    expected = {("metrics", c) for c in cells} | {("metric_table", None), ("report", "tiny")}
    [scheduled] = evaluate(sweep_schedules, _cursor_before_last_tick()).run_requests
    assert requested_partitions(scheduled) == expected
    _launch_from_the_ui("tiny")
    [launched] = evaluate(sweep_launches).run_requests
    assert requested_partitions(launched) == expected
