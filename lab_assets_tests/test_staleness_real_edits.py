"""Staleness from real edits, not monkeypatched versions: the package is copied into a temporary
git repository (the project folder), `lab` runs from that copy, and each edit of a real source
file (a method, a dataset, the shared kNN code) or of a sweep's metric list stales exactly the
cells it should: the plan says so, the next run recomputes only those, and the lineage carries
the repository's real SHA and dirty flag."""

import json
import shutil
import subprocess

import pandas as pd
import pytest

from lab_assets_tests.conftest import REPO, lab_cli
from lab_assets_tests.test_minimal_recompute import edit, git

pytestmark = pytest.mark.slow  # ~2-4 min: six `lab sweep` runs in subprocesses


def lab_in(folder, *args) -> subprocess.CompletedProcess:
    out = lab_cli(*args, cwd=folder, timeout=600, env={"PYTHONPATH": str(folder)})  # the copied package
    assert out.returncode == 0, out.stderr
    return out


def states(folder) -> dict[str, str]:
    plan = json.loads(lab_in(folder, "sweep", "plan", "sweeps/tiny.yaml", "--json").stdout)
    return {c["partition"]: c["status"] for c in plan["cells"]}


def mtimes(folder, asset) -> dict[str, int]:
    root = folder / ".lab" / "assets" / asset
    return {f"{p.parent.name}|{p.stem}": p.stat().st_mtime_ns for p in root.glob("*/*.parquet")}


def embedding(folder, partition) -> pd.DataFrame:
    data, method = partition.split("|")
    return pd.read_parquet(folder / ".lab" / "assets" / "embedding" / data / f"{method}.parquet")


def mtimes_flat(folder, asset) -> dict[str, int]:
    return {p.stem: p.stat().st_mtime_ns for p in (folder / ".lab" / "assets" / asset).glob("*.parquet")}


def run_and_check(
    folder,
    expected_stale: set[str],
    embeddings_redone: set[str],
    sha: str,
    dirty: bool,
    recomputed: set[str] | None = None,
    embeddings_rerun: set[str] | None = None,
):
    """Plan: exactly `expected_stale` stale; run: only the metrics of `recomputed` (default: the
    stale cells) rewritten, the embedding step run for `embeddings_rerun` (default: the same
    cells) and the values of `embeddings_redone` changed; afterwards all fresh and the rewritten
    rows carry (sha, dirty)."""
    recomputed = expected_stale if recomputed is None else recomputed
    embeddings_rerun = recomputed if embeddings_rerun is None else embeddings_rerun
    before = states(folder)
    assert {p for p, s in before.items() if s == "stale"} == expected_stale
    assert {p for p, s in before.items() if s == "fresh"} == set(before) - expected_stale
    emb, met = mtimes(folder, "embedding"), mtimes(folder, "metrics")
    values = {p: embedding(folder, p) for p in emb}
    lab_in(folder, "sweep", "run", "sweeps/tiny.yaml", "--workers", "1", "--quiet")
    emb2, met2 = mtimes(folder, "embedding"), mtimes(folder, "metrics")
    # A cell whose embedding is fresh runs its metrics step alone (defs/work.py): its embedding
    # file is not rewritten; where the embedding step ran, its values change only where they should.
    assert {p for p in emb if emb2[p] != emb[p]} == embeddings_rerun
    changed = {p for p in emb if not embedding(folder, p).equals(values[p])}
    assert changed == embeddings_redone
    assert {p for p in met if met2[p] != met[p]} == recomputed
    assert set(states(folder).values()) == {"fresh"}
    table = pd.read_parquet(folder / ".lab" / "assets" / "metric_table.parquet").set_index("partition")
    for p in recomputed:
        assert (table.loc[p, "git_sha"], bool(table.loc[p, "git_dirty"])) == (sha, dirty), p


def test_real_edits_stale_exactly_the_affected_cells(lab):
    shutil.copytree(REPO / "lab_assets", lab / "lab_assets", ignore=shutil.ignore_patterns("__pycache__"))
    (lab / ".gitignore").write_text(".lab/\n__pycache__/\n")
    git(lab, "init", "-q", "-b", "main")
    git(lab, "add", ".")
    git(lab, "commit", "-q", "-m", "the project")
    sha = git(lab, "rev-parse", "HEAD")

    lab_in(lab, "sweep", "run", "sweeps/tiny.yaml", "--workers", "1", "--quiet")
    cells = states(lab)
    assert len(cells) == 4 and set(cells.values()) == {"fresh"}
    table = pd.read_parquet(lab / ".lab" / "assets" / "metric_table.parquet")
    assert (table["git_sha"] == sha).all() and not table["git_dirty"].any()
    pca = {p for p in cells if "|pca-" in p}
    swissroll = {p for p in cells if p.startswith("swissroll-")}
    assert len(pca) == 2 and len(swissroll) == 2

    # A method's source (a statement that changes no value): its cells only.
    edit(lab / "lab_assets" / "dr" / "methods" / "pca.py")
    run_and_check(lab, pca, set(), sha, dirty=True)
    git(lab, "commit", "-qam", "edit pca")
    sha = git(lab, "rev-parse", "HEAD")

    # A dataset's source: manifolds.py holds swissroll and gaussian_blobs, so both data keys'
    # cells plan stale; both datasets are recomputed, and only swissroll's output changed (its
    # points scaled), so only its cells are recomputed: gaussian_blobs' data version is the same.
    # (The values of swissroll's embeddings change: scaled points, scaled PCA/Isomap.)
    manifolds = lab / "lab_assets" / "dr" / "datasets" / "manifolds.py"
    manifolds.write_text(manifolds.read_text().replace("    return Raw(X, t)\n", "    return Raw(2 * X, t)\n", 1))
    datasets = mtimes_flat(lab, "dataset")
    run_and_check(lab, set(cells), swissroll, sha, dirty=True, recomputed=swissroll)
    assert all(mtimes_flat(lab, "dataset")[k] != datasets[k] for k in datasets)  # both data keys rerun
    git(lab, "commit", "-qam", "edit manifolds")
    sha = git(lab, "rev-parse", "HEAD")

    # The shared kNN code: every cell's metrics step alone.
    edit(lab / "lab_assets" / "dr" / "metrics" / "neighbors.py")
    run_and_check(lab, set(cells), set(), sha, dirty=True, embeddings_rerun=set())
    git(lab, "commit", "-qam", "edit neighbors")
    sha = git(lab, "rev-parse", "HEAD")

    # A metric added to the sweep: every cell's metrics step alone; committed first: clean.
    sweep = lab / "sweeps" / "tiny.yaml"
    sweep.write_text(sweep.read_text().replace("  lid: {k: [10]}\n", "  lid: {k: [10]}\n  continuity: {k: [5]}\n"))
    git(lab, "add", "sweeps/tiny.yaml")
    git(lab, "commit", "-qm", "add continuity")
    sha = git(lab, "rev-parse", "HEAD")
    run_and_check(lab, set(cells), set(), sha, dirty=False, embeddings_rerun=set())
    table = pd.read_parquet(lab / ".lab" / "assets" / "metric_table.parquet")
    assert table["continuity@k=5"].notna().all()
