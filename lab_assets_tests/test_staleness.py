"""The staleness rules (`dr/staleness.py`), rule by rule, without a lab home: what each kind of
difference recomputes and how it is named, what a side that cannot know a version is told, and
docs/staleness.md's table. That the plan and `lab impact` name the same reasons on real edits:
test_versions_by_meaning.py and test_minimal_recompute.py."""

import dataclasses
from pathlib import Path

from lab_assets.dr import staleness
from lab_assets.dr.staleness import CellVersions, Column, EntryVersions

SHARED = {"neighbors.py": "n", "ranks.py": "r"}
CELL = CellVersions(
    EntryVersions("swissroll", "d1", "dc"),
    EntryVersions("pca", "m1", "mc"),
    steps={"datasets.py": "1", "experiments.py": "2", "metrics.py": "3"},
    columns={"lid@k=10": Column("lid", "v1", "lc", SHARED), "tw@k=5": Column("tw", "w1", "tc", SHARED)},
    metric_versions={"lid": "v1", "tw": "w1"},
)
EVERY = {"dataset", "embedding", "metrics"}


def changed(data: dict | None = None, method: dict | None = None, **fields) -> CellVersions:
    """CELL with these fields, `data` and `method` those of its dataset and method."""
    return dataclasses.replace(
        CELL,
        data=dataclasses.replace(CELL.data, **data or {}),
        method=dataclasses.replace(CELL.method, **method or {}),
        **fields,
    )


def test_nothing_differs_nothing_is_stale_and_a_new_cell_computes_everything():
    assert staleness.reasons(CELL, CELL) == {}
    assert staleness.reasons(None, changed(trainable=True)) == dict.fromkeys(
        ("dataset", "model", "embedding", "metrics"), "sweep file: new cell"
    )


def test_the_first_rule_that_applies_decides():
    everything = changed(
        {"version": "d2", "code": "dc2"},
        {"version": "m2", "code": "mc2"},
        steps={**CELL.steps, "datasets.py": "9", "metrics.py": "9"},
    )
    assert staleness.reasons(CELL, everything) == dict.fromkeys(EVERY, "asset module datasets.py changed: every cell")
    assert staleness.reasons(CELL, dataclasses.replace(everything, steps=CELL.steps)) == dict.fromkeys(
        EVERY, "dataset swissroll: code changed"
    )
    method = changed(method={"version": "m2", "code": "mc2"}, steps={**CELL.steps, "metrics.py": "9"})
    assert staleness.reasons(CELL, method) == dict.fromkeys(("embedding", "metrics"), "method pca: code changed")
    # A step version the plan only knows to differ (Dagster's resolver says so): None.
    assert staleness.reasons(changed(steps={**CELL.steps, "metrics.py": None}), CELL) == {
        "metrics": "asset module metrics.py changed: every cell"
    }


def test_a_version_that_differs_with_the_same_code_and_one_whose_code_is_not_known():
    assert staleness.reasons(CELL, changed({"version": "d2"})) == dict.fromkeys(
        EVERY, "dataset swissroll: libraries or input file changed"
    )
    assert staleness.reasons(changed({"code": None}), changed({"version": "d2"})) == dict.fromkeys(
        EVERY, "dataset swissroll: code, libraries or input file changed"
    )
    assert staleness.reasons(CELL, changed(method={"version": "m2"})) == dict.fromkeys(
        ("embedding", "metrics"), "method pca: libraries changed"
    )
    unknown = changed(method={"code": None})
    assert staleness.reasons(unknown, changed(method={"version": "m2"}, trainable=True)) == dict.fromkeys(
        ("model", "embedding", "metrics"), "method pca: code or libraries changed"
    )
    # A library upgrade changes the code digest the plan compares too: named as the libraries.
    upgraded = changed(method={"version": "m2", "code": "mc2", "packages": {"umap-learn": "0.6"}})
    assert staleness.reasons(changed(method={"packages": {"umap-learn": "0.5"}}), upgraded) == dict.fromkeys(
        ("embedding", "metrics"), "method pca: libraries changed"
    )
    assert staleness.reasons(changed(method={"packages": {"umap-learn": "0.6"}}), upgraded) == dict.fromkeys(
        ("embedding", "metrics"), "method pca: code changed"
    )


def test_metric_columns_are_named_each_by_what_changed_it():
    lid, tw = CELL.columns["lid@k=10"], CELL.columns["tw@k=5"]
    new = {
        "lid@k=10": dataclasses.replace(lid, version="v2", code="lc2"),
        "rnx": Column("rnx", "x1", "rc", SHARED),
        "tw@k=5": tw,
    }
    assert staleness.reasons(CELL, changed(columns=new)) == {
        "metrics": "metric lid: code changed; metric rnx: new column rnx"
    }
    shared = {**SHARED, "ranks.py": "r2"}
    moved = {c: dataclasses.replace(col, version=col.version + "'", shared=shared) for c, col in CELL.columns.items()}
    assert staleness.reasons(CELL, changed(columns=moved)) == {
        "metrics": "shared metric code changed (ranks.py): every metric"
    }
    # A lab home whose record names no code: the coarser reason.
    unrecorded = {c: dataclasses.replace(col, code=None, shared=None) for c, col in CELL.columns.items()}
    assert staleness.reasons(changed(columns=unrecorded), changed(columns=moved)) == {
        "metrics": "metric lid: its code or the shared metric code changed; "
        "metric tw: its code or the shared metric code changed"
    }


def test_a_column_no_sweep_asks_for_stales_only_once_its_code_changed():
    kept = changed(columns={"tw@k=5": CELL.columns["tw@k=5"]})
    assert staleness.reasons(CELL, kept) == {}
    assert staleness.reasons(CELL, dataclasses.replace(kept, metric_versions={"tw": "w1", "lid": "v2"})) == {
        "metrics": "metric lid: code changed, column removed: lid@k=10"
    }
    # A metric no longer registered: its column cannot be current.
    assert staleness.reasons(CELL, dataclasses.replace(kept, metric_versions={"tw": "w1", "lid": None})) == {
        "metrics": "metric lid: code changed, column removed: lid@k=10"
    }


def test_a_report_is_drawn_again_for_its_cells_then_what_it_shows_then_its_step():
    assert staleness.report_reason(False, ("s", "s"), ("r", "r")) == ""
    assert staleness.report_reason(True, ("s", "t"), (None, "r")) == "cells pending"
    assert (
        staleness.report_reason(False, (None, "t"), (None, "r"))
        == "the sweep's cells, labels or metric columns changed"
    )
    assert staleness.report_reason(False, ("s", "s"), (None, "r")) == "asset module reports.py changed"


def test_the_docs_table_is_the_rules():
    doc = (Path(__file__).parents[1] / "docs" / "staleness.md").read_text()
    assert staleness.with_table(doc) == doc, "run: python -m lab_assets.dr.staleness"
    assert all(f"`{said}`" in doc for rule in staleness.RULES for said in rule.says)
