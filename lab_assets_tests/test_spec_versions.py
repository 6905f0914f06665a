"""The spec versions staleness is decided by (`defs/assets/specs.py`), function by function: what
enters each version, and when an observed metric suite still covers a cell. Fast, without runs, so
mutation testing (docs/mutation-testing.md) can run it per mutant."""

import uuid

import pytest

from lab_assets.core import key_records
from lab_assets.defs.assets import specs
from lab_assets.dr.datasets import DATASETS
from lab_assets.dr.methods import METHODS
from lab_assets.dr.metrics import METRICS
from lab_assets.dr.sweep import DataConfig, MethodConfig, MetricConfig, Sweep

TW5, TW10, LID = (
    MetricConfig("trustworthiness", {"k": 5}),
    MetricConfig("trustworthiness", {"k": 10}),
    MetricConfig("lid", {"k": 10}),
)


def data(seed=0, noise=0.0):
    return DataConfig("swissroll", DATASETS["swissroll"].validate({"n_samples": 100, "noise": noise}), seed)


def method(n_components=2):
    return MethodConfig("pca", METHODS["pca"].validate({"n_components": n_components}))


def sweep(metrics=(TW5,), methods=None, name="s"):
    return Sweep(name, "s.yaml", [data(0), data(1)], methods or [method()], list(metrics))


def record(lab, name, columns):
    """An observed suite's key record, as `record_observations` writes it, under a version never
    used before in this process (`observed_suite` keeps what it found per process)."""
    version = f"{name}-{uuid.uuid4().hex}"
    key_records.write(specs.SUITE_RECORDS, version, columns)
    return version


def test_data_and_method_versions_are_code_plus_parameters_plus_seed():
    d = data(seed=3)
    assert specs.data_version(d) == f"{DATASETS['swissroll'].version(d.params)}~s3"
    assert specs.data_version(data(seed=4)) != specs.data_version(d)
    assert specs.data_version(data(noise=0.1)).split("~")[0] != specs.data_version(data()).split("~")[0]
    m = method()
    assert specs.method_version(m) == METHODS["pca"].version(m.params)
    assert specs.method_version(method(3)) != specs.method_version(m)


def test_a_column_version_is_its_metric_code_and_the_shared_code():
    tw, cont = specs.column_version("trustworthiness"), specs.column_version("continuity")
    assert len(tw) == 12 and tw != cont
    assert specs.column_versions([TW5, TW10, LID]) == {
        "trustworthiness@k=5": tw,
        "trustworthiness@k=10": tw,
        "lid@k=10": specs.column_version("lid"),
    }
    assert specs.suite_version({"a": "1"}) != specs.suite_version({"a": "2"}) != specs.suite_version({"b": "2"})
    assert len(specs.suite_version({"a": "1"})) == 16
    assert specs.suite_record([TW5]) == {
        "trustworthiness@k=5": {
            "metric": "trustworthiness",
            "params": {"k": 5},
            "version": tw,
            "code": METRICS["trustworthiness"].code_version,
            "shared": specs.shared_metric_code(),
        }
    }


def test_an_observed_suite_covering_the_current_one_stays(lab):
    wide = record(lab, "wide-suite", specs.suite_record([TW5, LID]))
    assert specs.observed_suite(wide) == specs.suite_record([TW5, LID])
    # LID was taken out of the sweep: the cell keeps its observed version and still owes LID's column.
    assert specs.metric_version([TW5], wide) == wide
    assert specs.owed_suite([TW5], wide) == [LID, TW5]


def test_a_suite_stops_covering_when_a_column_is_new_or_its_code_changed(lab):
    current = specs.suite_version(specs.column_versions([TW5]))
    assert specs.metric_version([TW5], None) == current
    assert specs.metric_version([TW5], "never-recorded") == current
    assert specs.observed_suite(None) is None and specs.observed_suite("never-recorded") is None
    # A column the record lacks (a new metric).
    narrow = record(lab, "narrow-suite", specs.suite_record([LID]))
    assert specs.metric_version([TW5, LID], narrow) == specs.suite_version(specs.column_versions([TW5, LID]))
    assert specs.owed_suite([TW5, LID], narrow) == [TW5, LID]
    # The current column computed by other code.
    old_code = record(
        lab,
        "old-code-suite",
        {"trustworthiness@k=5": {"metric": "trustworthiness", "params": {"k": 5}, "version": "old"}},
    )
    assert specs.metric_version([TW5], old_code) == current
    # A removed column whose metric's code changed since (or that is no longer registered).
    for gone in (
        {"metric": "lid", "params": {"k": 10}, "version": "old"},
        {"metric": "removed_metric", "params": {}, "version": "x"},
    ):
        stale_extra = record(lab, f"stale-extra-{gone['metric']}", {**specs.suite_record([TW5]), "extra": gone})
        assert specs.metric_version([TW5], stale_extra) == current
        assert specs.owed_suite([TW5], stale_extra) == [TW5]


def test_a_sweep_version_changes_with_its_cells_labels_and_columns():
    base = specs.sweep_version(sweep())
    assert len(base) == 16 and specs.sweep_version(sweep()) == base
    assert specs.sweep_version(sweep(metrics=(TW10,))) != base
    assert specs.sweep_version(sweep(methods=[method(), method(3)])) != base
    renamed = Sweep("s", "s.yaml", [data(0), data(2)], [method()], [TW5])
    assert specs.sweep_version(renamed) != base


@pytest.mark.parametrize("order", [1, -1])
def test_a_cells_suite_is_the_union_of_its_sweeps_columns(order):
    a, b = sweep([TW5], name="a"), sweep([LID, TW5], name="b")
    other = Sweep("c", "c.yaml", [data(7)], [method()], [TW10])
    suites = specs.cell_suites([a, b, other][::order])
    cell = specs.keys.cell_key(data(0).key, method().key)
    assert suites[cell] == [LID, TW5]
    assert suites[specs.keys.cell_key(data(7).key, method().key)] == [TW10]
    assert len(suites) == 3


def test_current_versions_of_every_spec_partition_of_the_sweeps(lab):
    a, b = sweep([TW5], name="a"), Sweep("b", "b.yaml", [data(0)], [method(), method(3)], [LID])
    cell = specs.keys.cell_key(data(0).key, method().key)
    versions = specs.current_versions([a, b], {})
    assert versions[("sweep_spec", "a")] == specs.sweep_version(a) and versions[
        ("sweep_spec", "b")
    ] == specs.sweep_version(b)
    for d in (data(0), data(1)):
        for m in [method()] if d.seed else [method(), method(3)]:
            c = specs.keys.cell_key(d.key, m.key)
            assert versions[("data_spec", c)] == specs.data_version(d) and versions[
                ("method_spec", c)
            ] == specs.method_version(m)
    assert versions[("metric_spec", cell)] == specs.suite_version(
        specs.column_versions([LID, TW5])
    )  # both sweeps' columns
    assert len(versions) == 2 + 3 * 3  # two sweeps, three cells with three specs each
    assert specs.current_versions([a], {cell: "observed"})[("metric_spec", cell)] == specs.suite_version(
        specs.column_versions([TW5])
    )
    wide = record(lab, "wide-suite", specs.suite_record([TW5, LID]))  # observed, and still covering the cell
    assert specs.current_versions([a], {cell: wide})[("metric_spec", cell)] == wide
