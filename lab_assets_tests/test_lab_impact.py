"""`lab impact --base REF` against what `lab sweep plan` says once the change is there: real
edits of a copied package in a temporary git repository (the harness of
test_minimal_recompute.py). Each edit is made in the working tree, `lab impact --base HEAD`
says what it stales, the plan of the next run must name exactly those cells and assets; then
the sweeps run and the edit is committed, so the next edit starts from a fresh lab."""

import json
import shutil

import pandas as pd
import pytest

from lab_assets.cli.main import main
from lab_assets.dr.impact import impact as impact_of
from lab_assets_tests.conftest import REPO, lab_cli
from lab_assets_tests.test_minimal_recompute import SWEEP_A, SWEEP_B, copied_project, edit, git, pending, step


def lab_in(folder, *args):
    """The copied package's own `lab` (PYTHONPATH: the edited code), in the project folder."""
    return lab_cli(*args, cwd=folder, timeout=600, env={"PYTHONPATH": str(folder)})


def impact(folder) -> dict[str, dict]:
    done = lab_in(folder, "impact", "--base", "HEAD", "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    return {s["name"]: s for s in json.loads(done.stdout)["sweeps"]}


def stale(sweep: dict) -> dict[str, set[str]]:
    """{cell: the cell assets of the plan's vocabulary} of an impact's stale cells."""
    return {c["cell"]: set(c["assets"]) & {"embedding", "metrics"} for c in sweep["stale"]}


def planned(plan: dict) -> dict[str, set[str]]:
    return {cell: set(assets) for cell, assets in pending(plan).items()}


def same_reasons(said: dict, plan: dict) -> bool:
    """Whether the plan names each changed cell's assets for the reasons the impact gives (a cell
    new in the change is `missing` to the plan: no difference of versions to name)."""
    changed = {
        c["cell"]: {a: why for a, why in c["assets"].items() if a in {"embedding", "metrics"}}
        for c in said["stale"]
        if not c["new"]
    }
    return bool(changed) and changed == {c: whys for c, whys in pending(plan).items() if c in changed}


def commit(folder, message):
    git(folder, "add", "-A")
    git(folder, "commit", "-q", "-m", message)


@pytest.mark.slow
def test_impact_names_what_the_next_plan_finds_stale(lab):
    copied_project(lab)
    first = step(lab, "a", "b")
    (b_cell,) = {c["partition"] for c in first["b"]["cells"]}
    nothing = impact(lab)
    assert {n: s["stale_cells"] for n, s in nothing.items()} == {"a": 0, "b": 0}

    # 1. A method's code and a sweep's metrics: isomap's cell recomputes its embedding (priced by
    #    its recorded wall seconds), b's cell its metrics alone.
    edit(lab / "lab_assets" / "dr" / "methods" / "isomap.py")
    (lab / "sweeps" / "b.yaml").write_text(SWEEP_B + "  lid: {k: [10]}\n")
    said = impact(lab)
    (iso,) = [c for c in said["a"]["stale"]]
    assert "|isomap-" in iso["cell"] and iso["seconds"] > 0
    assert said["a"]["reasons"] == {"method isomap: code changed": 1}
    assert said["b"]["reasons"] == {"metric lid: new column lid@k=10,space=embedding": 1}
    plans = step(lab, "a", "b")
    assert stale(said["a"]) == planned(plans["a"]) and stale(said["b"]) == planned(plans["b"]) == {b_cell: {"metrics"}}
    assert same_reasons(said["a"], plans["a"]) and same_reasons(said["b"], plans["b"])
    commit(lab, "isomap edited, lid in b")

    # 2. The shared neighbourhood code and a new seed: every old cell's metrics, every new cell whole.
    edit(lab / "lab_assets" / "dr" / "metrics" / "neighbors.py")
    (lab / "sweeps" / "a.yaml").write_text(SWEEP_A.replace("seeds: [0]", "seeds: [0, 1]"))
    said = impact(lab)
    assert said["a"]["reasons"] == {
        "shared metric code changed (neighbors.py): every metric": 2,
        "sweep file: new cell": 2,
    }
    assert said["a"]["unpriced_cells"] == 2 and said["a"]["report"] == "cells pending"
    plans = step(lab, "a", "b")
    assert stale(said["a"]) == planned(plans["a"]) and len(planned(plans["a"])) == 4
    assert stale(said["b"]) == planned(plans["b"]) == {b_cell: {"metrics"}}
    assert same_reasons(said["a"], plans["a"]) and same_reasons(said["b"], plans["b"])
    commit(lab, "neighbors edited, a second seed")

    # 3. An asset module's declared version (defs/step_versions.py): every cell of every sweep; the
    #    Markdown says why.
    declared = lab / "lab_assets" / "defs" / "step_versions.py"
    experiments = '"lab_assets.defs.assets.experiments": ("'
    declared.write_text(declared.read_text().replace(experiments, experiments + "new-"))
    said = impact(lab)
    why = "asset module experiments.py changed: every cell"
    assert said["a"]["reasons"] == {why: 4} and said["b"]["reasons"] == {why: 1}
    markdown = lab_in(lab, "impact", "--base", "HEAD", "--markdown", "sweeps/b.yaml")
    assert markdown.returncode == 0 and f"| {why} | 1 |" in markdown.stdout and "sweep a" not in markdown.stdout
    plans = step(lab, "a", "b")
    assert stale(said["a"]) == planned(plans["a"]) and stale(said["b"]) == planned(plans["b"])
    assert all(assets == {"embedding", "metrics"} for assets in planned(plans["a"]).values())
    assert same_reasons(said["a"], plans["a"]) and same_reasons(said["b"], plans["b"])

    # Nothing between HEAD and the tree once committed; a revision that is not one is bad input.
    commit(lab, "experiments edited")
    assert {n: s["stale_cells"] for n, s in impact(lab).items()} == {"a": 0, "b": 0}
    bad = lab_in(lab, "impact", "--base", "no-such-ref")
    assert bad.returncode == 2 and "--base no-such-ref: not a revision" in bad.stderr


PLUGIN = '''"""The lab's first plugin: a metric."""
import numpy as np

from lab_assets.dr.metrics import METRICS


def spread(nb, *, power: int = 1) -> float:
    """Mean distance of the embedding's points from their centroid, to a power."""
    return float(np.mean(np.linalg.norm(nb.Z - nb.Z.mean(0), axis=1) ** power))


spread = METRICS("spread", valid_range="[0, inf)", better=None)(spread)
'''
ONE = "name: one\ndata:\n  swissroll: {n_samples: 60}\nseeds: [0]\nmethods:\n  pca: {}\nmetrics:\n  trustworthiness: {k: [5]}\n"


def test_a_change_that_adds_the_first_plugin_names_new_changed_and_missing_cells_as_the_next_plan(
    lab, monkeypatch, capsys
):
    """Through the CLI (the copied package, in the project's repository): a pull request that adds
    `plugins/` (LAB_PLUGINS=plugins), a column of its metric and a seed. `lab impact` reads the
    base (which has no such plugin) and says which cells are changed, new in this change, and
    missing in this lab home, exactly the cells and assets the next plan finds; the rows then
    computed from the untracked plugin say git_dirty."""
    shutil.copytree(REPO / "lab_assets", lab / "lab_assets", ignore=shutil.ignore_patterns("__pycache__"))
    (lab / "sweeps" / "one.yaml").write_text(ONE)
    (lab / ".gitignore").write_text(".lab/\n__pycache__/\n")
    git(lab, "init", "-q", "-b", "main")
    git(lab, "add", ".")
    git(lab, "commit", "-q", "-m", "the project")
    first = lab_in(lab, "sweep", "run", "sweeps/one.yaml", "--workers", "1", "--json")
    assert first.returncode == 0, first.stderr
    (row,) = pd.read_parquet(lab / ".lab" / "assets" / "metric_table.parquet").itertuples()
    assert not row.git_dirty  # everything it read is committed

    (lab / "plugins").mkdir()
    (lab / "plugins" / "__init__.py").write_text("from plugins import spread  # noqa: F401\n")
    (lab / "plugins" / "spread.py").write_text(PLUGIN)
    (lab / "sweeps" / "one.yaml").write_text(ONE.replace("[0]", "[0, 1]") + "  spread: {}\n")
    monkeypatch.setenv("LAB_PLUGINS", "plugins")
    monkeypatch.chdir(lab)  # each probe puts its tree first on the import path: no PYTHONPATH here
    assert main(["impact", "--base", "HEAD"]) == 0  # the base has no `plugins`: not an error
    text = capsys.readouterr().out
    assert "sweep one (sweeps/one.yaml): 1 of 2 cells changed, 1 new in this change, 1 missing" in text, text
    assert "sweep tiny (sweeps/tiny.yaml): 0 of 4 cells changed, 0 new in this change, 4 missing" in text, text
    assert "1 cell  metric spread: new column spread@power=1" in text and "1 cell  sweep file: new cell" in text
    assert "stale" not in text
    # Its cell lines: `    <cell>  <assets it recomputes>[  <recorded cost>]`, as the next plan finds them.
    cell_lines = [x.strip().split("  ") for x in text.splitlines() if x.startswith("    ") and "|" in x]
    said = {cell: set(assets.split(", ")) & {"embedding", "metrics"} for cell, assets, *_ in cell_lines}
    plan = json.loads(lab_in(lab, "sweep", "plan", "sweeps/one.yaml", "--json").stdout)
    assert said == planned(plan) and len(said) == 2
    assert sorted(c["status"] for c in plan["cells"]) == ["missing", "stale"]

    git(lab, "add", "sweeps")
    git(lab, "commit", "-q", "-m", "a seed and a plugin's column (the plugin itself not yet committed)")
    second = lab_in(lab, "sweep", "run", "sweeps/one.yaml", "--workers", "1", "--json")
    assert second.returncode == 0, second.stderr
    table = pd.read_parquet(lab / ".lab" / "assets" / "metric_table.parquet")
    assert len(table) == 2 and table["spread@power=1"].notna().all()
    assert table["git_dirty"].all() and set(table["git_sha"]) == {git(lab, "rev-parse", "HEAD")}


def snapshot(changes: dict | None = None) -> dict:
    """Two cells' versions as `defs/code_versions.snapshot` writes them; `changes`: {"group.key":
    value}, `sweep.key` for the sweep file's own fields."""
    cell = {
        "data": "d~s0",
        "dataset": "swissroll",
        "data_version": "dv",
        "dataset_code": "dc",
        "method_name": "pca",
        "method_version": "mv",
        "method_code": "mc",
        "trainable": False,
        "columns": ["lid@k=10"],
    }
    sweep = {
        "name": "s",
        "sweep_version": "sv",
        "cells": {"c1": {**cell, "method": "pca-1"}, "c2": {**cell, "method": "umap-1"}},
    }
    snap = {
        "assets": {"datasets.py": "1", "experiments.py": "2", "metrics.py": "3", "reports.py": "4"},
        "shared": {"neighbors.py": "n"},
        "columns": {"lid@k=10": {"metric": "lid", "version": "v", "code": "c"}},
        "sweeps": {"s.yaml": sweep},
    }
    for path, value in (changes or {}).items():
        group, key = path.split(".", 1)
        (sweep if group == "sweep" else snap[group])[key] = value
    return snap


@pytest.mark.parametrize(
    "changes, reasons, report",
    [
        ({}, {}, ""),
        ({"sweep.sweep_version": "other"}, {}, "the sweep's cells, labels or metric columns changed"),
        ({"assets.reports.py": "5"}, {}, "asset module reports.py changed"),
        (
            {"columns.lid@k=10": {"metric": "lid", "version": "w", "code": "d"}},
            {"metric lid: code changed": 2},
            "cells pending",
        ),
        (
            {"columns.lid@k=10": {"metric": "lid", "version": "w", "code": "c"}, "shared.neighbors.py": "m"},
            {"shared metric code changed (neighbors.py): every metric": 2},
            "cells pending",
        ),
        ({"assets.datasets.py": "9"}, {"asset module datasets.py changed: every cell": 2}, "cells pending"),
    ],
)
def test_the_rules_name_each_kind_of_change(changes, reasons, report):
    (found,) = impact_of(snapshot(), snapshot(changes), ["s.yaml"])
    assert dict(found.reasons) == reasons and found.report == report
    assert all(
        set(c.assets) == ({"dataset", "embedding", "metrics"} if "datasets" in str(reasons) else {"metrics"})
        for c in found.stale
    )


def test_a_metric_taken_out_stales_nothing_until_its_code_changes():
    base, head = snapshot(), snapshot()
    for cell in head["sweeps"]["s.yaml"]["cells"].values():
        cell["columns"] = []
    head["metrics"] = {"lid": "v"}  # lid's column version, as the working tree computes it
    (found,) = impact_of(base, head, ["s.yaml"])
    assert found.stale == []
    head["metrics"] = {"lid": "w"}
    (found,) = impact_of(base, head, ["s.yaml"])
    assert dict(found.reasons) == {"metric lid: code changed, column removed: lid@k=10": 2}


def test_a_method_named_by_import_path_has_the_versions_of_its_class(lab, monkeypatch, capsys):
    """`estimator:` methods are in no registry: their versions come from the sweep's method entry.
    Not recomputed here by the code under test: a real edit of the class's module, and `lab impact`
    (each tree's versions read by a fresh process) finds its cell's method code changed and the
    other method's cell untouched."""
    monkeypatch.chdir(lab)
    (lab / "my_reducers.py").write_text(REDUCER)
    (lab / "sweeps" / "tiny.yaml").unlink()
    (lab / "sweeps" / "est.yaml").write_text(
        "name: est\ndata:\n  swissroll: {n_samples: 60}\nmethods:\n"
        '  mine:\n    estimator: "my_reducers:FirstTwo"\n  pca: {}\n'
        "metrics:\n  trustworthiness: {k: [5]}\n"
    )
    (lab / ".gitignore").write_text(".lab/\n__pycache__/\n")
    git(lab, "init", "-q", "-b", "main")
    git(lab, "add", ".")
    git(lab, "commit", "-q", "-m", "the project")
    (lab / "my_reducers.py").write_text(REDUCER + "\nEDITED = True\n")  # a comment would change no meaning
    assert main(["impact", "--base", "HEAD", "--json"]) == 0
    (said,) = json.loads(capsys.readouterr().out)["sweeps"]
    assert said["reasons"] == {"method mine: code changed": 1} and said["cells"] == 2
    (cell,) = said["stale"]
    assert cell["method"].startswith("mine-") and set(cell["assets"]) == {"embedding", "metrics"}


REDUCER = '''"""A plain class in the project folder, named by import path."""


class FirstTwo:
    def __init__(self, random_state=None):
        self.random_state = random_state

    def fit_transform(self, X):
        return X[:, :2]
'''
