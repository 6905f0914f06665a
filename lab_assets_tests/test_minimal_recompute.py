"""Minimal recomputation, proved with real edits: the package is copied into a temporary git
repository, each step edits a real source file or sweep file and runs a fresh process (code
versions are read at import), and each edit recomputes exactly the assets and metric columns it
should. Every other value stays bit-identical, and no value computed by old code is carried.

Two sweeps that share no cell: `a` (swissroll x {pca, isomap}) and `b` (gaussian_blobs x pca).
"""

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from lab_assets.core import keys
from lab_assets.core.warm_workers import WarmWorkers
from lab_assets.defs.assets import specs
from lab_assets.defs.inflight import OWNER_TAG
from lab_assets.defs.recorded_cost import recorded_seconds
from lab_assets.dr.staleness import METRICS
from lab_assets.dr.sweep import load_sweep
from lab_assets.runner import sweeps
from lab_assets.runner.sweeps import materialize_sweep, register_and_plan
from lab_assets.runtime.instance import get_instance
from lab_assets.runtime.orphans import owner
from lab_assets_tests.conftest import REPO, graphql, lab_cli, lab_ui, wait_for

BACKFILL = """mutation($params: LaunchBackfillParams!) { launchPartitionBackfill(backfillParams: $params) {
  __typename ... on LaunchBackfillSuccess { backfillId } ... on PythonError { message } } }"""

SWEEP_A = """
name: a
data:
  swissroll: {n_samples: 150, noise: 0.05}
seeds: [0]
methods:
  pca: {}
  isomap: {n_neighbors: 12}
metrics:
  trustworthiness: {k: [5, 10]}
"""
SWEEP_B = """
name: b
data:
  gaussian_blobs: {n_samples: 150, n_features: 5, centers: 3}
seeds: [0]
methods:
  pca: {}
metrics:
  trustworthiness: {k: [5]}
"""
# One process per step: plan every sweep named, then run them in that order (what `lab sweep plan`
# and `lab sweep run` call), and print the plans as JSON.
STEP = """
import json, sys
from lab_assets.dr.sweep import load_sweep
from lab_assets.runner.sweeps import plan, materialize_sweep
out = {}
for path in sys.argv[1:]:
    sweep = load_sweep(path)
    out[sweep.name] = plan(sweep).to_json()
for path in sys.argv[1:]:
    result = materialize_sweep(load_sweep(path), workers=1)
    assert result.ok, [o.to_json() for o in result.failed]
print(json.dumps(out))
"""


def git(folder, *args) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
        cwd=folder,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def edit(path):
    """A statement appended to a source file: its code version changes (a comment would not:
    versions are by meaning, core/canonical.py), its behaviour does not."""
    path.write_text(path.read_text() + "\nEDITED = True\n")


def step(folder, *sweeps) -> dict[str, dict]:
    """Plan, then run, `sweeps` (names) in a fresh process of the copied package: {sweep: plan}."""
    env = {**os.environ, "PYTHONPATH": str(folder)}
    out = subprocess.run(
        [sys.executable, "-c", STEP, *(f"sweeps/{s}.yaml" for s in sweeps)],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def pending(plan: dict) -> dict[str, dict[str, str]]:
    """{cell: {asset: why}} of a plan's cells that are not fresh."""
    return {c["partition"]: c["assets"] for c in plan["cells"] if c["status"] != "fresh"}


def files(folder, asset) -> dict[str, int]:
    """{cell: mtime} of an asset's files (datasets: by data key)."""
    root = folder / ".lab" / "assets" / asset
    return {
        f"{p.parent.name}|{p.stem}" if p.parent != root else p.stem: p.stat().st_mtime_ns
        for p in root.rglob("*.parquet")
    }


def rows(folder) -> dict[str, dict]:
    """{cell: its metric row}, as stored."""
    return {
        p.parent.name + "|" + p.stem: pd.read_parquet(p).iloc[0].to_dict()
        for p in (folder / ".lab" / "assets" / "metrics").rglob("*.parquet")
    }


def columns_meta() -> dict[str, dict]:
    """{cell: {column: {status, code_version}}} of each cell's latest `metrics` materialization."""
    get_instance.cache_clear()
    latest: dict[str, dict] = {}
    for r in get_instance().fetch_materializations(dg.AssetKey("metrics"), limit=1000).records:  # newest first
        m = r.asset_materialization
        latest.setdefault(m.partition, m.metadata["columns"].value)
    return latest


def snapshot(folder) -> dict:
    return {a: files(folder, a) for a in ("raw_dataset", "dataset", "embedding", "metrics")} | {"rows": rows(folder)}


def changed(before: dict, after: dict, asset: str) -> set[str]:
    """Files of `asset` written, added or deleted between two snapshots."""
    return {k for k in before[asset].keys() | after[asset].keys() if before[asset].get(k) != after[asset].get(k)}


def assert_carried_identical(before: dict, after: dict, carried: dict[str, set[str]]):
    """The carried columns of each cell are bit-identical to its previous row."""
    for cell, cols in carried.items():
        for c in cols:
            assert after["rows"][cell][c] == before["rows"][cell][c], (cell, c)


def statuses(meta: dict, cell: str) -> dict[str, str]:
    return {c: m["status"] for c, m in meta[cell].items()}


def copied_project(lab) -> None:
    """The package and sweeps `a`, `b` in `lab`, committed to a new git repository."""
    shutil.copytree(REPO / "lab_assets", lab / "lab_assets", ignore=shutil.ignore_patterns("__pycache__"))
    (lab / "sweeps" / "tiny.yaml").unlink()
    (lab / "sweeps" / "a.yaml").write_text(SWEEP_A)
    (lab / "sweeps" / "b.yaml").write_text(SWEEP_B)
    (lab / ".gitignore").write_text(".lab/\n__pycache__/\n")
    git(lab, "init", "-q", "-b", "main")
    git(lab, "add", ".")
    git(lab, "commit", "-q", "-m", "the project")


def test_each_edit_recomputes_exactly_what_it_changed(lab):
    copied_project(lab)
    first = step(lab, "a", "b")
    a_cells = {c["partition"] for c in first["a"]["cells"]}
    (b_cell,) = {c["partition"] for c in first["b"]["cells"]}
    pca_a = next(c for c in a_cells if "|pca-" in c)
    s0 = snapshot(lab)
    assert len(s0["raw_dataset"]) == 2 and len(s0["embedding"]) == 3

    # 1. A metric added to b: b's metrics only, the new column computed, the others carried;
    #    a's cells stay fresh and untouched.
    sweep_b = lab / "sweeps" / "b.yaml"
    sweep_b.write_text(
        SWEEP_B.replace("  trustworthiness: {k: [5]}\n", "  trustworthiness: {k: [5]}\n  lid: {k: [10]}\n")
    )
    plans = step(lab, "a", "b")
    assert pending(plans["a"]) == {}
    lid = "lid@k=10,space=embedding"
    assert pending(plans["b"]) == {b_cell: {"metrics": f"metric lid: new column {lid}"}}
    s1 = snapshot(lab)
    assert changed(s0, s1, "metrics") == {b_cell}
    assert not changed(s0, s1, "embedding") and not changed(s0, s1, "dataset") and not changed(s0, s1, "raw_dataset")
    assert statuses(columns_meta(), b_cell) == {"trustworthiness@k=5": "carried", lid: "computed"}
    assert_carried_identical(s0, s1, {b_cell: {"trustworthiness@k=5"}})
    assert pd.notna(s1["rows"][b_cell][lid])

    # 2. One metric's code edited (a comment: same values): only its columns, in every cell that has one.
    lid_py = lab / "lab_assets" / "dr" / "metrics" / "lid.py"
    edit(lid_py)
    plans = step(lab, "a", "b")
    assert pending(plans["a"]) == {}
    assert pending(plans["b"]) == {b_cell: {"metrics": "metric lid: code changed"}}
    s2 = snapshot(lab)
    assert changed(s1, s2, "metrics") == {b_cell} and not changed(s1, s2, "embedding")
    meta = columns_meta()
    assert statuses(meta, b_cell) == {"trustworthiness@k=5": "carried", lid: "computed"}
    assert meta[b_cell][lid]["code_version"] != meta[b_cell]["trustworthiness@k=5"]["code_version"]
    assert_carried_identical(s1, s2, {b_cell: {"trustworthiness@k=5"}})

    # 3. The metric removed again: nothing is stale or computed (the row keeps the column, current,
    #    where no report shows it), and b's report is drawn again without it.
    sweep_b.write_text(SWEEP_B)
    plans = step(lab, "b")
    assert pending(plans["b"]) == {} and plans["b"]["report"]["status"] == "stale"
    s3 = snapshot(lab)
    assert not changed(s2, s3, "metrics") and not changed(s2, s3, "embedding")
    assert lid not in pd.read_csv(lab / ".lab" / "reports" / "b" / "metrics.csv").columns

    # 3b. Its code edited while no sweep asks for it: the column kept in b's row would be of old
    #     code, so b's metrics row is written again without it (the other column carried).
    lid_py.write_text(lid_py.read_text() + "\nEDITED_AGAIN = True\n")
    plans = step(lab, "a", "b")
    assert pending(plans["a"]) == {}
    assert pending(plans["b"]) == {b_cell: {"metrics": f"metric lid: code changed, column removed: {lid}"}}
    s3 = snapshot(lab)
    assert statuses(columns_meta(), b_cell) == {"trustworthiness@k=5": "carried"}
    assert lid not in s3["rows"][b_cell]
    assert_carried_identical(s2, s3, {b_cell: {"trustworthiness@k=5"}})

    # 4. A method's code edited (a comment: the same embedding): its cells in both sweeps rerun
    #    the embedding; the embeddings' values are the same, so every metric column is carried.
    pca_py = lab / "lab_assets" / "dr" / "methods" / "pca.py"
    edit(pca_py)
    plans = step(lab, "a", "b")
    assert set(pending(plans["a"])) == {pca_a} and set(pending(plans["b"])) == {b_cell}
    assert pending(plans["a"])[pca_a] == dict.fromkeys(("embedding", "metrics"), "method pca: code changed")
    s4 = snapshot(lab)
    assert changed(s3, s4, "embedding") == {pca_a, b_cell}
    meta = columns_meta()
    assert set(statuses(meta, pca_a).values()) == {"carried"} and set(statuses(meta, b_cell).values()) == {"carried"}
    assert_carried_identical(
        s3, s4, {pca_a: {"trustworthiness@k=5", "trustworthiness@k=10"}, b_cell: {"trustworthiness@k=5"}}
    )

    # 5. The shared neighbourhood code edited: every column of every cell is computed again (the
    #    same values), and no embedding or dataset is.
    neighbors = lab / "lab_assets" / "dr" / "metrics" / "neighbors.py"
    edit(neighbors)
    plans = step(lab, "a", "b")
    assert {**pending(plans["a"]), **pending(plans["b"])} == {
        c: {"metrics": "shared metric code changed (neighbors.py): every metric"} for c in {*a_cells, b_cell}
    }
    s5 = snapshot(lab)
    assert changed(s4, s5, "metrics") == {*a_cells, b_cell}
    assert not changed(s4, s5, "embedding") and not changed(s4, s5, "dataset")
    meta = columns_meta()
    assert all(set(statuses(meta, c).values()) == {"computed"} for c in {*a_cells, b_cell})
    for cell in a_cells:
        assert s5["rows"][cell]["trustworthiness@k=10"] == s4["rows"][cell]["trustworthiness@k=10"]

    # 6. A method's parameter edited: a new key, one new cell; a's other cells and b untouched.
    sweep_a = lab / "sweeps" / "a.yaml"
    sweep_a.write_text(SWEEP_A.replace("n_neighbors: 12", "n_neighbors: 10"))
    plans = step(lab, "a", "b")
    assert [c["status"] for c in plans["a"]["cells"] if "isomap" in c["partition"]] == ["missing"]
    assert pending(plans["b"]) == {}
    s6 = snapshot(lab)
    assert set(s6["embedding"]) - set(s5["embedding"]) == {
        c["partition"] for c in plans["a"]["cells"] if "isomap" in c["partition"]
    }
    assert not changed(s5, s6, "metrics") - (set(s6["metrics"]) - set(s5["metrics"]))
    assert not changed(s5, s6, "raw_dataset")  # the data key's file is reused by the new cell


def _materializations(asset: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for r in get_instance().fetch_materializations(dg.AssetKey(asset), limit=1000).records:
        counts[r.partition_key] = counts.get(r.partition_key, 0) + 1
    return counts


@pytest.mark.slow
def test_a_metric_added_runs_the_metrics_steps_alone_through_a_webserver_and_the_uis_sweep_launch(lab):
    """`--submit` and the UI's Materialize on `sweep[tiny]` (answered by the `sweep_launches`
    sensor's backfill, run by the daemon): each embedding keeps its one materialization."""
    sweep = load_sweep(lab / "sweeps" / "tiny.yaml")
    materialize_sweep(sweep, workers=1)
    path = lab / "sweeps" / "tiny.yaml"
    cells = {keys.cell_key(d, m) for d, m in sweep.cells}
    with lab_ui(lab) as port:
        path.write_text(path.read_text().replace("  lid: {k: [10]}\n", "  lid: {k: [10]}\n  continuity: {k: [5]}\n"))
        out = lab_cli("sweep", "run", "sweeps/tiny.yaml", "--json", "--submit", f"http://127.0.0.1:{port}", cwd=lab)
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout)["materialized"]["cells"] == 4
        assert _materializations("metrics") == {c: 2 for c in cells}

        path.write_text(
            path.read_text().replace(
                "  continuity: {k: [5]}\n", "  continuity: {k: [5]}\n  knn_preservation: {k: [5]}\n"
            )
        )
        register_and_plan(load_sweep(path))
        params = {"partitionNames": ["tiny"], "assetSelection": [{"path": ["sweep"]}]}
        launched = graphql(port, BACKFILL, {"params": params})["launchPartitionBackfill"]
        assert launched["__typename"] == "LaunchBackfillSuccess", launched
        wait_for(lambda: _materializations("metrics") == {c: 3 for c in cells}, 300, "the sweep's backfill")
    assert _materializations("embedding") == {c: 1 for c in cells}
    assert not _materializations("model")
    table = pd.read_parquet(
        lab / ".lab" / "assets" / "metrics" / Path(*sorted(cells)[0].split("|")).with_suffix(".parquet")
    )
    assert {"continuity@k=5", "knn_preservation@k=5"} <= set(table.columns)


def test_a_lost_suite_record_costs_no_cell(lab, monkeypatch):
    """The key records of observed metric suites deleted (a lab home copied without `keys/`):
    the plan still answers, every cell stays fresh, and a cell whose metrics file is lost
    recomputes its metrics step alone, with its sweeps' suite: in this process, as a metrics-only
    re-run that recorded little (`sweeps.small_enough_here`), the workers started for it end unused."""
    sweep = load_sweep(lab / "sweeps" / "tiny.yaml")
    assert not sweeps.small_enough_here(register_and_plan(sweep))  # embeddings to compute: the workers'
    materialize_sweep(sweep, workers=1)
    shutil.rmtree(lab / ".lab" / "keys" / "metric_suite")
    specs._SUITES.clear()  # this process read them before they were deleted
    assert register_and_plan(sweep).counts["fresh"] == 4
    (lost,) = [p for p in (lab / ".lab" / "assets" / "metrics").rglob("*.parquet") if "|" not in p.name][:1]
    lost.unlink()
    planned = register_and_plan(sweep)
    # The bound's edges: the step's recorded seconds count (they vary with the machine's load).
    [pending] = [c.partition for c in planned.pending_cells()]
    bound = recorded_seconds(get_instance(), [pending])[pending][METRICS] + sweeps.RUN_SECONDS
    monkeypatch.setattr(sweeps, "HERE_SECONDS", bound - 0.001)
    assert not sweeps.small_enough_here(planned)
    monkeypatch.setattr(sweeps, "HERE_SECONDS", bound + 0.001)
    pool = WarmWorkers(2)  # no warm-up: what matters is that it is never used
    processes = pool.processes()
    result = materialize_sweep(sweep, pool=pool)
    assert result.ok and result.count("cells") == 1
    runs = [get_instance().get_run_by_id(o.run_id) for o in result.outcomes if o.run_id]
    assert len(runs) == 3 and {r.tags[OWNER_TAG] for r in runs} == {owner()}
    assert [p.exitcode for p in processes] == [-signal.SIGKILL] * 2
    [damaged] = [c for c in result.before.cells if c.status != "fresh"]
    assert damaged.status == "damaged" and set(damaged.assets) == {"metrics"} and f"{lost}: missing" in damaged.reason
    assert {"trustworthiness@k=5", "trustworthiness@k=10", "lid@k=10,space=embedding"} <= set(
        pd.read_parquet(lost).columns
    )


def test_the_uis_observe_records_the_versions_register_records(lab):
    """ "Observe sources" in the UI runs the specs' observation functions: they give every
    partition the version `register` recorded, so observing changes nothing."""
    from dagster._core.definitions.observe import observe  # what the UI's observation run executes

    sweep = load_sweep(lab / "sweeps" / "tiny.yaml")
    materialize_sweep(sweep, workers=1)
    path = lab / "sweeps" / "tiny.yaml"
    path.write_text(path.read_text().replace("  lid: {k: [10]}\n", ""))  # a metric removed: versions kept
    register_and_plan(load_sweep(path))
    by_partitions = [[a for a in specs.SPECS if a.partitions_def == d] for d in {a.partitions_def for a in specs.SPECS}]
    for assets in by_partitions:  # one observation job per partitions definition
        assert observe(assets, instance=get_instance()).success
    assert specs.record_observations(get_instance()) == 0
    assert register_and_plan(load_sweep(path)).counts["fresh"] == 4
