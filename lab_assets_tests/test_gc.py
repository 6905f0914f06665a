"""`lab gc` and `lab sweep remove`: what no registered sweep uses is listed with its size and
deleted (files, partitions, runs); what a registered sweep's cell reads, and what runs in
flight, is left alone; a second `lab gc` finds nothing."""

import json
import os
import time

import dagster as dg
import pytest
from dagster._core.execution.backfill import BulkActionStatus, PartitionBackfill

from lab_assets.core import keys, storage
from lab_assets.defs.assets.specs import cell_suites
from lab_assets.defs.definitions import defs
from lab_assets.defs.freshness import FRESH
from lab_assets.defs.jobs import DATASETS, job_name
from lab_assets.dr import keystore
from lab_assets.dr.sweep import load_sweep
from lab_assets.runner.sweeps import materialize_sweep, register_and_plan
from lab_assets.runtime import backfills
from lab_assets.runtime.instance import get_instance
from lab_assets_tests.conftest import lab_cli

OTHER = """
name: other
data:
  gaussian_blobs: {n_samples: 90, n_features: 4, centers: 2}
  swissroll: {n_samples: 90}
seeds: [0]
methods:
  pca: {}
metrics:
  trustworthiness: {k: [5]}
  continuity: {k: [5]}
  latent_knn_preservation: {k: [5]}
"""


def _files(lab, *parts) -> set[str]:
    top = lab / ".lab" / "assets" / os.path.join(*parts)
    return {str(p.relative_to(lab / ".lab")) for p in top.rglob("*") if p.is_file()} if top.exists() else set()


def _cell_files(lab, asset: str, cell) -> set[str]:
    d, m = keys.parse_cell_key(cell) if isinstance(cell, str) else cell
    return {p for p in _files(lab, asset, d) if p.rsplit("/", 1)[-1].startswith(f"{m}.")}


def _live_files(lab, sweep) -> set[str]:
    """The files a sweep's cells read or are: embeddings, metric rows, its data keys' datasets."""
    found = {p for c in sweep.cells for a in ("embedding", "metrics") for p in _cell_files(lab, a, c)}
    return found | {p for d in sweep.data for a in ("raw_dataset", "dataset") for p in _files(lab, a) if d.key in p}


def _runs_of(cell: str) -> int:
    return len(get_instance().get_run_records(dg.RunsFilter(tags={"dagster/partition": cell})))


def _gc(lab, *flags) -> dict:
    out = lab_cli("gc", "--json", *flags, cwd=lab)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_gc_deletes_exactly_what_no_registered_sweep_uses(lab, single_threaded):
    path = lab / "sweeps" / "tiny.yaml"
    assert materialize_sweep(load_sweep(path), workers=1).ok
    (lab / "sweeps" / "other.yaml").write_text(OTHER)
    other = load_sweep(lab / "sweeps" / "other.yaml")
    assert materialize_sweep(other, workers=1).ok
    before = load_sweep(path)
    path.write_text(path.read_text().replace("n_neighbors: 12", "n_neighbors: 20"))  # isomap's cells: new keys
    tiny = load_sweep(path)
    assert materialize_sweep(tiny, workers=1).ok
    (lab / "sweeps" / "other.yaml").unlink()  # its sweep stays registered until gc

    old_cells = sorted(keys.cell_key(d, m) for d, m in set(before.cells) - set(tiny.cells))
    other_cells = [keys.cell_key(d, m) for d, m in other.cells]
    assert len(old_cells) == 2 and all(_runs_of(c) for c in old_cells + other_cells)
    # Leftovers: a killed writer's temporary (old), a superseded report version, a file no
    # materialization points to (pca trains nothing, so no model of it was ever recorded).
    tmp = lab / ".lab" / "assets" / "embedding" / ".x.parquet.0123.tmp"
    tmp.write_bytes(b"x" * 100)
    os.utime(tmp, (time.time() - 7200, time.time() - 7200))
    fresh_tmp = tmp.with_name(".y.parquet.4567.tmp")  # maybe a write in progress: kept
    fresh_tmp.write_bytes(b"y")
    old_report = lab / ".lab" / "reports" / ".tiny.0123456789ab.old"
    old_report.mkdir()
    (old_report / "metrics.csv").write_bytes(b"z" * 50)
    d, m = next((d, m) for d, m in tiny.cells if m.startswith("pca"))
    stray = lab / ".lab" / "assets" / "model" / d / f"{m}.pt"
    stray.parent.mkdir(parents=True, exist_ok=True)
    stray.write_bytes(b"w" * 10)
    kept = _live_files(lab, tiny)
    assert len(kept) == 2 * len(tiny.cells) + 2 * len(tiny.data)

    listed = _gc(lab, "--dry-run")
    by_kind: dict[str, set[str]] = {}
    for item in listed["items"]:
        by_kind.setdefault(item["kind"], set()).add(item["name"])
    assert by_kind["sweep"] == {"other"}
    assert by_kind["cell"] == set(old_cells + other_cells)
    assert by_kind["data"] == {d.key for d in other.data}
    # The ground truth that other's swissroll metric read goes with its data key (a stray file it is not).
    roll = next(d.key for d in other.data if d.dataset == "swissroll")
    latent = {f for f in _files(lab, "latent") if roll in f}
    assert latent, "the ground-truth metric wrote no latent table"
    listed_files = {p for i in listed["items"] if i["kind"] == "data" for p in i["files"]}
    assert all(any(p.endswith(f) for p in listed_files) for f in latent), (latent, listed_files)
    tiny_latents = _files(lab, "latent") - latent  # a live data key's: never listed (nor a stray file)
    assert by_kind["report"] == {"other"}
    assert by_kind["report version"] == {"tiny"}
    assert by_kind["stray file"] == {str(tmp), str(stray)}
    old_methods = {m for _, m in set(before.cells) - set(tiny.cells)}
    other_only = {m.key for m in other.methods} - {m.key for m in tiny.methods}
    assert {n.split()[1] for n in by_kind["key record"]} == {d.key for d in other.data} | other_only | old_methods
    cell_item = next(i for i in listed["items"] if i["name"] == old_cells[0])
    assert cell_item["bytes"] > 0 and len(cell_item["runs"]) == _runs_of(old_cells[0])
    assert listed["bytes"] == sum(i["bytes"] for i in listed["items"]) > 0
    assert tmp.exists() and old_report.exists() and _runs_of(old_cells[0])  # a dry run deletes nothing

    deleted = _gc(lab)
    assert {(i["kind"], i["name"]) for i in deleted["items"]} == {(i["kind"], i["name"]) for i in listed["items"]}
    inst = get_instance()
    for cell in old_cells + other_cells:
        assert _runs_of(cell) == 0 and cell not in inst.get_dynamic_partitions("cell")
        assert not _cell_files(lab, "embedding", cell) and not _cell_files(lab, "metrics", cell)
    assert not tmp.exists() and fresh_tmp.exists() and not old_report.exists() and not stray.exists()
    assert _files(lab, "latent") == tiny_latents
    assert not (lab / ".lab" / "reports" / "other").exists() and inst.get_dynamic_partitions("sweep") == ["tiny"]
    assert keystore.keys("sweep") == ["tiny"]
    assert _live_files(lab, tiny) == kept
    # What the registered sweep reads is intact: nothing of it recomputes, its report reads.
    assert all(c.status == FRESH for c in register_and_plan(tiny).cells)
    assert (lab / ".lab" / "reports" / "tiny" / "metrics.parquet").is_file()

    assert _gc(lab)["items"] == []  # a second gc finds nothing


@pytest.mark.slow
def test_gc_leaves_what_runs_in_flight_use(lab, single_threaded):
    path = lab / "sweeps" / "tiny.yaml"
    before = load_sweep(path)
    assert materialize_sweep(before, workers=1).ok
    path.write_text(path.read_text().replace("n_neighbors: 12", "n_neighbors: 20"))
    register_and_plan(load_sweep(path))
    busy, idle = sorted(keys.cell_key(d, m) for d, m in set(before.cells) - set(load_sweep(path).cells))
    inst = get_instance()
    job = defs.resolve_job_def(job_name(DATASETS))
    flying = inst.create_run_for_job(job_def=job, status=dg.DagsterRunStatus.STARTED, tags={"dagster/partition": busy})
    listed = {i["name"] for i in _gc(lab)["items"] if i["kind"] == "cell"}
    assert listed == {idle}
    assert _cell_files(lab, "embedding", busy) and not _cell_files(lab, "embedding", idle)
    old_method = keys.parse_cell_key(busy)[1]
    assert old_method in keystore.keys("method")  # the run in flight reads its method's record

    inst.report_run_failed(inst.get_run_by_id(flying.run_id))  # its run ended, but a backfill asks for it
    subset = backfills.partition_subset({("embedding", busy)}, defs.resolve_asset_graph())
    inst.add_backfill(
        PartitionBackfill.from_asset_graph_subset(
            backfill_id="gcguard",
            backfill_timestamp=time.time(),
            tags={},
            dynamic_partitions_store=inst,
            asset_graph_subset=subset,
            title=None,
            description=None,
            run_config=None,
        )
    )
    assert not [i for i in _gc(lab)["items"] if i["kind"] == "cell"]
    inst.update_backfill(inst.get_backfill("gcguard").with_status(BulkActionStatus.COMPLETED_SUCCESS))  # now it goes
    assert {i["name"] for i in _gc(lab)["items"] if i["kind"] == "cell"} == {busy}
    assert old_method not in keystore.keys("method")


FIRST = (
    "name: first\ndata:\n  swissroll: {n_samples: 120, noise: 0.05}\nseeds: [0]\nmethods:\n  pca: {}\n"
    "  isomap: {n_neighbors: 12}\nmetrics:\n  trustworthiness: {k: [5]}\n"
)
SECOND = (
    "name: second\ndata:\n  swissroll: {n_samples: 120, noise: 0.05}\nseeds: [0]\nmethods:\n  pca: {}\n"
    "metrics:\n  continuity: {k: [5]}\n"
)


def test_sweep_remove_unregisters_a_sweep_and_its_metrics(lab):
    (lab / "sweeps" / "first.yaml").write_text(FIRST)
    (lab / "sweeps" / "second.yaml").write_text(SECOND)
    first, second = load_sweep(lab / "sweeps" / "first.yaml"), load_sweep(lab / "sweeps" / "second.yaml")
    register_and_plan(first)
    register_and_plan(second)
    [shared] = [keys.cell_key(d, m) for d, m in second.cells]
    assert [m.column for m in cell_suites(keystore.sweeps())[shared]] == ["continuity@k=5", "trustworthiness@k=5"]

    out = lab_cli("sweep", "remove", "first", cwd=lab)
    assert out.returncode == 0, out.stderr
    assert "1 cells left the UI" in out.stdout
    inst = get_instance()
    assert inst.get_dynamic_partitions("cell") == [shared]  # the shared cell stays: second declares it
    assert inst.get_dynamic_partitions("sweep") == ["second"] and keystore.keys("sweep") == ["second"]
    assert [m.column for m in cell_suites(keystore.sweeps())[shared]] == ["continuity@k=5"]

    unknown = lab_cli("sweep", "remove", "first", cwd=lab)
    assert unknown.returncode == 2 and "no sweep named 'first'" in unknown.stderr and "second" in unknown.stderr


def test_a_sweep_file_deleted_while_the_ui_runs_is_unregistered(lab):
    from lab_assets.defs.sensors import sweep_registry
    from lab_assets_tests.test_sensors import evaluate

    (lab / "sweeps" / "first.yaml").write_text(FIRST)
    seen = evaluate(sweep_registry)
    assert sorted(get_instance().get_dynamic_partitions("sweep")) == ["first", "tiny"]
    (lab / "sweeps" / "first.yaml").unlink()
    result = evaluate(sweep_registry, seen.cursor)
    assert "first unregistered" in result.skip_message
    inst = get_instance()
    assert inst.get_dynamic_partitions("sweep") == ["tiny"] and keystore.keys("sweep") == ["tiny"]
    tiny = load_sweep(lab / "sweeps" / "tiny.yaml")
    assert sorted(inst.get_dynamic_partitions("cell")) == sorted(keys.cell_key(d, m) for d, m in tiny.cells)
    assert "first.yaml" not in json.loads(result.cursor)
    assert evaluate(sweep_registry, result.cursor).skip_message == "no new or edited sweep file"


@pytest.mark.slow
def test_gc_on_an_object_store(lab, s3, single_threaded):
    """The same on S3 (moto): old cells' objects and a report's superseded version go, what the
    registered sweep reads stays fresh, and a second gc finds nothing."""
    from lab_assets.runner.sweeps import materialize_report

    path = lab / "sweeps" / "tiny.yaml"
    before = load_sweep(path)
    assert materialize_sweep(before, workers=1).ok
    path.write_text(path.read_text().replace("n_neighbors: 12", "n_neighbors: 20"))
    tiny = load_sweep(path)
    assert materialize_sweep(tiny, workers=1).ok
    assert materialize_report(tiny).ok  # a second report version: the one before stays for readers
    old = [keys.cell_key(d, m) for d, m in set(before.cells) - set(tiny.cells)]

    def stored(prefix: str) -> list[str]:
        pages = s3.get_paginator("list_objects_v2").paginate(Bucket="lab-bucket", Prefix=prefix)
        return [o["Key"] for page in pages for o in page.get("Contents", [])]

    listed = _gc(lab, "--dry-run")["items"]
    assert {i["name"] for i in listed if i["kind"] == "cell"} == set(old)
    assert [i["kind"] for i in listed if i["name"] == "tiny"] == ["report version"]
    _gc(lab)
    for cell in old:
        d, m = keys.parse_cell_key(cell)
        assert not [k for k in stored("lab/assets/") if k.endswith(f"{d}/{m}.parquet")]
    versions = {k.split("/")[3] for k in stored("lab/reports/tiny/")}
    assert versions == {".current", storage.current(storage.url("reports", "tiny")).rsplit("/", 1)[-1]}
    assert all(c.status == FRESH for c in register_and_plan(tiny).cells)
    assert _gc(lab)["items"] == []
