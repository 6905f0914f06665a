"""Blocking asset checks: they pass on good data, fail on bad data, and a failure stops the run."""

import dataclasses

import numpy as np
import pandas as pd

from lab_assets.core.keys import cell_key
from lab_assets.defs import asset_checks
from lab_assets.defs.definitions import defs
from lab_assets.defs.jobs import CELLS, DATASETS, job_name
from lab_assets.dr.metrics import METRICS
from lab_assets.dr.sweep import MetricConfig, load_sweep
from lab_assets.runner.sweeps import register_and_plan
from lab_assets.runtime.instance import get_instance


def good_dataset(n=10):
    df = pd.DataFrame(
        {
            "row": np.arange(n, dtype=np.int64),
            "split": ["train"] * (n - 2) + ["test"] * 2,
            "label": np.zeros(n, dtype=np.int64),
            "x0": np.linspace(0, 1, n),
            "x1": np.ones(n),
        }
    )
    return df


def passed(results):
    return {r.check_name: r.passed for r in results}


def test_dataset_checks_catch_each_problem():
    assert all(passed(asset_checks.check_dataset(good_dataset(), 10)).values())
    nan = good_dataset()
    nan.loc[3, "x1"] = np.nan
    assert passed(asset_checks.check_dataset(nan, 10))["finite_features"] is False
    one_split = good_dataset().assign(split="train")
    assert passed(asset_checks.check_dataset(one_split, 10))["splits_non_empty"] is False
    assert passed(asset_checks.check_dataset(good_dataset(), 11))["row_count"] is False
    swapped = good_dataset()[["row", "label", "split", "x0", "x1"]]
    assert passed(asset_checks.check_dataset(swapped, 10))["schema"] is False


def test_embedding_and_metric_checks():
    assert passed(asset_checks.check_embedding(np.zeros((5, 2)), 5, 2))["finite_and_shaped"]
    assert not passed(asset_checks.check_embedding(np.full((5, 2), np.inf), 5, 2))["finite_and_shaped"]
    assert not passed(asset_checks.check_embedding(np.zeros((4, 2)), 5, 2))["finite_and_shaped"]
    suite = [MetricConfig("trustworthiness", {"k": 5}), MetricConfig("lid", {"k": 5, "space": "embedding"})]
    ok = {"trustworthiness@k=5": 0.9, "lid@k=5,space=embedding": 2.0}
    assert passed(asset_checks.check_metrics(suite, ok, {}))["values_in_range"]
    # A value recorded as not applicable (null, with a reason) is not out of range.
    assert passed(
        asset_checks.check_metrics(suite, {**ok, "trustworthiness@k=5": float("nan")}, {"trustworthiness@k=5": "why"})
    )["values_in_range"]
    assert not passed(asset_checks.check_metrics(suite, {**ok, "trustworthiness@k=5": 1.2}, {}))["values_in_range"]
    assert not passed(asset_checks.check_metrics(suite, {**ok, "lid@k=5,space=embedding": 0.0}, {}))["values_in_range"]


def test_checks_run_in_the_asset_runs_and_a_failure_stops_the_run(lab, monkeypatch):
    sweep = load_sweep(lab / "sweeps" / "tiny.yaml")
    register_and_plan(sweep)
    inst = get_instance()
    data = sweep.data[0].key
    key = cell_key(data, sweep.methods[0].key)  # a dataset is partitioned by cell
    result = defs.resolve_job_def(job_name(DATASETS)).execute_in_process(instance=inst, partition_key=key)
    evaluations = result.get_asset_check_evaluations()
    assert sorted(e.check_name for e in evaluations) == sorted(asset_checks.DATASET_CHECKS)
    assert all(e.passed for e in evaluations)

    # A metric whose value leaves its range fails the blocking check and so the run.
    monkeypatch.setitem(METRICS._entries, "lid", dataclasses.replace(METRICS["lid"], valid_range="(100, inf)"))
    result = defs.resolve_job_def(job_name(CELLS)).execute_in_process(
        instance=inst, partition_key=key, raise_on_error=False
    )
    assert not result.success
    failed = [e for e in result.get_asset_check_evaluations() if not e.passed]
    assert [e.check_name for e in failed] == ["values_in_range"]
    assert "lid@k=10,space=embedding" in failed[0].metadata["outside"].value
