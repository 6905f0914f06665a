"""The tiny sweep end to end through a real Dagster instance: partitions, materializations,
lineage metadata, the metric table, staleness, reproducibility and failure isolation."""

import os
import platform
import subprocess
import time
from importlib.metadata import version

import dagster as dg
import numpy as np
import pandas as pd
import pytest
from sklearn.manifold import trustworthiness as sk_trustworthiness

from lab_assets.core import keys, lineage, storage
from lab_assets.core.keys import cell_key
from lab_assets.defs.freshness import DAMAGED, FRESH, MISSING, STALE, plan_sweep
from lab_assets.defs.jobs import CELLS
from lab_assets.defs.work import Run
from lab_assets.dr import keystore
from lab_assets.dr.methods import METHODS
from lab_assets.dr.sweep import load_sweep
from lab_assets.runner.local import definitions, execute_run
from lab_assets.runner.run import MATERIALIZED
from lab_assets.runner.sweeps import materialize_sweep
from lab_assets.runtime.instance import get_instance
from lab_assets_tests.conftest import REPO

LINEAGE_KEYS = {
    "config",
    "seed",
    "git_sha",
    "git_dirty",
    "code_version",
    "packages",
    "device",
    "wall_seconds",
    "compute_seconds",
    "dagster/row_count",
    "path",
}


def materializations(asset: str) -> dict:
    """Latest materialization per partition of one asset."""
    records = get_instance().fetch_materializations(dg.AssetKey(asset), limit=1000).records
    latest = {}
    for r in sorted(records, key=lambda r: r.storage_id):
        latest[r.asset_materialization.partition] = r.asset_materialization
    return latest


def plan(sweep):
    return plan_sweep(sweep, get_instance(), definitions().resolve_asset_graph())


def git(folder, *args) -> str:
    env = {**os.environ, "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z"}
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def commit_project(folder) -> str:
    """The project folder as a git repository with one commit of its sweeps: that commit's SHA."""
    git(folder, "init", "-q", "-b", "main")
    (folder / ".gitignore").write_text(".lab/\n")
    git(folder, "add", "sweeps", ".gitignore")
    git(folder, "commit", "-q", "-m", "the tiny sweep")
    return git(folder, "rev-parse", "HEAD")


def package_dirty() -> bool:
    """Whether git sees a `.py` of this checkout's package untracked or modified (a developer's
    work in progress): rows computed by it are dirty whatever the project's own state."""
    return bool(git(REPO / "lab_assets", "status", "--porcelain", "--untracked-files=all", "--", "*.py"))


def test_tiny_sweep_end_to_end(lab, monkeypatch):
    sha = commit_project(lab)
    assert len(sha) == 40
    sweep = load_sweep(lab / "sweeps" / "tiny.yaml")
    assert plan(sweep).counts == {MISSING: 4, STALE: 0, DAMAGED: 0, FRESH: 0}

    started = time.perf_counter()
    result = materialize_sweep(sweep, workers=1)
    elapsed = time.perf_counter() - started
    assert not result.failed and not result.skipped
    # A dataset is partitioned by cell, and counted by data key: 2 datasets for 4 cells, each
    # generated once (its other cell's partition records the same file and data version).
    assert result.count("datasets") == 2 and result.count("cells") == 4
    inst = get_instance()
    for asset in ("raw_dataset", "dataset"):
        records = inst.fetch_materializations(dg.AssetKey(asset), limit=10).records
        assert len(records) == 4
        reused = [r.asset_materialization.metadata["reused"].value.startswith("the file") for r in records]
        assert sorted(reused) == [False, False, True, True], asset
        versions = {}
        for r in records:
            data = keys.parse_cell_key(r.asset_materialization.partition)[0]
            versions.setdefault(data, set()).add(r.asset_materialization.tags["dagster/data_version"])
        assert all(len(v) == 1 for v in versions.values()), versions

    inst = get_instance()
    cells = {keys.cell_key(d, m) for d, m in sweep.cells}
    assert set(inst.get_dynamic_partitions("cell")) == cells  # exactly the declared cells
    assert inst.get_dynamic_partitions("sweep") == ["tiny"]

    for asset in ("embedding", "metrics"):
        mats = materializations(asset)
        assert set(mats) == cells
        for m in mats.values():
            assert LINEAGE_KEYS <= set(m.metadata), asset
            meta = {k: v.value for k, v in m.metadata.items()}
            # The real values: this folder's commit, clean (unless the package's sources are work in
            # progress: `package_dirty`); the installed versions; the CPU
            # (PCA and Isomap are scikit-learn); timings inside the run that made them.
            assert (meta["git_sha"], meta["git_dirty"]) == (sha, package_dirty()), asset
            assert meta["device"] == "cpu" and meta["host"] == f"{platform.machine()}, {os.cpu_count()} cores"
            assert set(lineage.KEY_PACKAGES) | {"scikit-learn"} <= set(meta["packages"])
            assert meta["packages"] == {p: version(p) for p in meta["packages"]}, asset
            assert 0 < meta["wall_seconds"] < elapsed and 0 <= meta["compute_seconds"] < elapsed, asset
    for asset in ("raw_dataset", "dataset"):
        assert set(materializations(asset)) == cells
    data_meta = materializations("dataset")[keys.cell_key(sweep.data[0].key, sweep.methods[0].key)].metadata
    assert data_meta["seed"].value == 0
    assert data_meta["config"].value == {"dataset": "swissroll", "n_samples": 150, "noise": 0.05}
    assert data_meta["train_rows"].value + data_meta["test_rows"].value == 150
    assert set(materializations("report")) == {"tiny"}

    # The metric table: one row per cell, carrying its partition and git SHA; values agree
    # with scikit-learn recomputed from the stored dataset and embedding files.
    table = pd.read_parquet(storage.asset_path("metric_table"))
    assert set(table["partition"]) == cells
    assert (table["git_sha"] == sha).all() and (table["git_dirty"] == package_dirty()).all()
    for _, row in table.iterrows():
        X = pd.read_parquet(storage.asset_path("dataset", row["data"])).filter(regex=r"^x\d+$").to_numpy()
        Z = pd.read_parquet(storage.asset_path("embedding", row["partition"])).filter(regex=r"^z\d+$").to_numpy()
        for k in (5, 10):
            assert row[f"trustworthiness@k={k}"] == pytest.approx(sk_trustworthiness(X, Z, n_neighbors=k), abs=1e-9)
        assert row["lid@k=10,space=embedding"] > 0

    report_dir = lab / ".lab" / "reports" / "tiny"
    for name in ("metrics.parquet", "metrics.csv", "metrics.md", "embeddings.png", "metrics_vs_k.png"):
        assert (report_dir / name).stat().st_size > 0
    assert (report_dir / "embeddings.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    # Nothing to do the second time.
    assert plan(sweep).counts == {MISSING: 0, STALE: 0, DAMAGED: 0, FRESH: 4}
    again = materialize_sweep(sweep, workers=1)
    assert {o.status for o in again.outcomes} == {FRESH}  # reported, not run
    assert (
        again.count("datasets", FRESH) == 2 and again.count("cells", FRESH) == 4
    )  # datasets: per data key and again.count("report", FRESH) == 1

    # An uncommitted edit to a tracked file: a cell computed now records the same SHA, dirty.
    (lab / "sweeps" / "tiny.yaml").write_text((lab / "sweeps" / "tiny.yaml").read_text() + "# edited\n")
    lineage._git_state.cache_clear()  # as a new process would see it
    monkeypatch.setenv("LAB_RESULTS_CACHE", "off")  # computed now, not recorded from the clean computation's entry
    cell = keys.cell_key(sweep.data[0].key, sweep.methods[0].key)
    assert execute_run(Run(CELLS, cell_key(sweep.data[0].key, sweep.methods[0].key)), {}).ok
    meta = materializations("embedding")[cell].metadata
    assert (meta["git_sha"].value, meta["git_dirty"].value) == (sha, True)


def test_edited_method_code_stales_only_its_cells(lab, monkeypatch):
    sweep = load_sweep(lab / "sweeps" / "tiny.yaml")
    materialize_sweep(sweep, workers=1)
    # A new code version for pca, as editing lab_assets/dr/methods/pca.py would give.
    monkeypatch.setitem(METHODS["pca"].__dict__, "code_version", "edited")
    states = {c.partition: c.status for c in plan(sweep).cells}
    assert {p for p, s in states.items() if s == STALE} == {p for p in states if "|pca-" in p}
    assert {p for p, s in states.items() if s == FRESH} == {p for p in states if "|isomap-" in p}

    result = materialize_sweep(sweep, workers=1)
    assert sorted(o.partition for o in result.of(MATERIALIZED, "cells")) == sorted(p for p in states if "|pca-" in p)
    assert result.count("datasets") == 0
    assert plan(sweep).counts[FRESH] == 4


def test_edited_parameters_make_new_keys_not_overwrites(lab):
    sweep = load_sweep(lab / "sweeps" / "tiny.yaml")
    materialize_sweep(sweep, workers=1)
    text = (lab / "sweeps" / "tiny.yaml").read_text().replace("n_neighbors: 12", "n_neighbors: 8")
    (lab / "sweeps" / "tiny.yaml").write_text(text)
    edited = load_sweep(lab / "sweeps" / "tiny.yaml")
    states = {c.partition: c.status for c in plan(edited).cells}
    assert sorted(states.values()) == [FRESH, FRESH, MISSING, MISSING]
    old_isomap = next(m.key for m in sweep.methods if m.method == "isomap")
    assert old_isomap not in {m.key for m in edited.methods}
    # The old result stays where it was.
    assert storage.exists(storage.asset_path("embedding", keys.cell_key(sweep.data[0].key, old_isomap)))


def test_same_cell_twice_gives_identical_numbers(lab):
    sweep = load_sweep(lab / "sweeps" / "tiny.yaml")
    materialize_sweep(sweep, workers=1)
    isomap = next(m.key for m in sweep.methods if m.method == "isomap")
    cell = keys.cell_key(sweep.data[0].key, isomap)
    first_embedding = pd.read_parquet(storage.asset_path("embedding", cell))
    first_metrics = pd.read_parquet(storage.asset_path("metrics", cell))
    assert execute_run(Run(CELLS, cell_key(sweep.data[0].key, isomap)), {}).ok
    pd.testing.assert_frame_equal(pd.read_parquet(storage.asset_path("embedding", cell)), first_embedding)
    pd.testing.assert_frame_equal(pd.read_parquet(storage.asset_path("metrics", cell)), first_metrics)
    # And Dagster sees the same data version, so nothing downstream turns stale.
    mats = get_instance().fetch_materializations(dg.AssetKey("embedding"), limit=100).records
    versions = [
        r.asset_materialization.tags["dagster/data_version"] for r in mats if r.asset_materialization.partition == cell
    ]
    assert len(versions) == 2 and versions[0] == versions[1]


def test_a_bad_dataset_fails_alone(lab):
    rows = np.random.default_rng(0).normal(size=(60, 3))
    rows[7, 1] = np.nan
    pd.DataFrame(rows, columns=["a", "b", "c"]).to_csv(lab / "broken.csv", index=False)
    text = (lab / "sweeps" / "tiny.yaml").read_text().replace("data:\n", "data:\n  file: {path: broken.csv}\n")
    (lab / "sweeps" / "tiny.yaml").write_text(text)
    sweep = load_sweep(lab / "sweeps" / "tiny.yaml")
    result = materialize_sweep(sweep, workers=1)
    broken = next(d.key for d in sweep.data if d.dataset == "file")
    # A dataset is partitioned by cell: its run fails in each of its cells, whose cell runs are skipped.
    broken_cells = sorted(keys.cell_key(broken, m.key) for m in sweep.methods)
    assert sorted(o.partition for o in result.failed) == broken_cells
    assert all("1 of 60 rows have NaN/inf" in o.why for o in result.failed)
    assert all(o.why.startswith("BadDataError: data ") for o in result.failed)  # the class named once
    assert sorted(o.partition for o in result.skipped) == broken_cells
    assert {o.why for o in result.skipped} == {"its dataset failed"}
    assert result.count("cells") == 4  # the other datasets' cells are untouched
    assert not storage.exists(storage.asset_path("raw_dataset", broken))
    assert keystore.data_config(broken).params["path"] == "broken.csv"


def test_each_cell_is_one_offline_wandb_run_and_tracking_failures_are_harmless(lab, monkeypatch):
    import wandb

    sweep = load_sweep(lab / "sweeps" / "tiny.yaml")
    materialize_sweep(sweep, workers=1)
    runs = {}
    for cell, m in materializations("metrics").items():
        meta = m.metadata
        assert meta["wandb_mode"].value == "offline"
        run_dir = lab / ".lab" / "wandb"
        assert str(run_dir) in meta["wandb_run"].value  # nothing left the machine
        runs[cell] = meta["wandb_run_id"].value
    assert len(set(runs.values())) == 4
    offline = list((lab / ".lab" / "wandb" / "wandb").glob("offline-run-*-cell*"))  # the sweep has its own run
    assert sorted(p.name.rsplit("-", 1)[1] for p in offline) == sorted(runs.values())

    def broken(*args, **kwargs):
        raise RuntimeError("wandb is down")

    monkeypatch.setattr(wandb, "init", broken)
    cell = keys.cell_key(sweep.data[0].key, sweep.methods[0].key)
    assert execute_run(Run(CELLS, cell_key(sweep.data[0].key, sweep.methods[0].key)), {}).ok
    assert materializations("metrics")[cell].metadata["wandb_error"].value == "RuntimeError: wandb is down"
