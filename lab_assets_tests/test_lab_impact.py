"""`lab impact --base REF` against what `lab sweep plan` says once the change is there: real
edits of a copied package in a temporary git repository (the harness of
test_minimal_recompute.py). Each edit is made in the working tree, `lab impact --base HEAD`
says what it stales, the plan of the next run must name exactly those cells and assets; then
the sweeps run and the edit is committed, so the next edit starts from a fresh lab."""

import json

import pytest

from lab_assets.dr.impact import impact as impact_of
from lab_assets_tests.conftest import lab_cli
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

    # Nothing between HEAD and the tree once committed; a revision that is not one is bad input.
    commit(lab, "experiments edited")
    assert {n: s["stale_cells"] for n, s in impact(lab).items()} == {"a": 0, "b": 0}
    bad = lab_in(lab, "impact", "--base", "no-such-ref")
    assert bad.returncode == 2 and "--base no-such-ref: not a revision" in bad.stderr


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


def test_a_method_named_by_import_path_has_the_versions_of_its_class(lab):
    """`estimator:` methods are in no registry: their versions come from the sweep's method entry."""
    from lab_assets.core import estimator_paths
    from lab_assets.defs.code_versions import snapshot as versions

    path = lab / "sweeps" / "est.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(
        "name: est\ndata:\n  swissroll: {n_samples: 200}\nmethods:\n"
        '  skpca:\n    estimator: "sklearn.decomposition:PCA"\n    n_components: 2\n'
        "metrics:\n  trustworthiness: {k: [5]}\n"
    )
    (cell,) = versions([str(path)])["sweeps"][str(path)]["cells"].values()
    entry = estimator_paths.entry("sklearn.decomposition:PCA")
    assert (cell["method_name"], cell["method_code"], cell["trainable"]) == ("skpca", entry.code_version, False)
