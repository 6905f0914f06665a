"""Cluster execution is configuration: a sweep's `resources:` become a cell's run tags, and the
executor comes from LAB_EXECUTOR, without touching code."""

import json
import os
import subprocess
import sys

import pytest

from lab_assets.core import keys
from lab_assets.core.k8s_resources import GPU_TAG, K8S_CONFIG_TAG
from lab_assets.defs.jobs import CELLS_WITH_DATA, METRIC_TABLE, REPORT
from lab_assets.defs.work import sweep_work
from lab_assets.dr.sweep import SweepError, parse_sweep
from lab_assets.runner.sweeps import register_and_plan

SWEEP = """
name: gpu
data: {swissroll: {n_samples: 100}}
methods:
  umap: {n_neighbors: 10, resources: {gpu: 1, memory: 16Gi}}
  pca: {}
"""


def test_resources_are_not_part_of_the_key():
    with_resources = parse_sweep(SWEEP, "gpu.yaml")
    without = parse_sweep(SWEEP.replace(", resources: {gpu: 1, memory: 16Gi}", ""), "gpu.yaml")
    assert [m.key for m in with_resources.methods] == [m.key for m in without.methods]
    umap = next(m for m in with_resources.methods if m.method == "umap")
    assert umap.resources == {"gpu": 1, "memory": "16Gi"} and "resources" not in umap.params


@pytest.mark.parametrize(
    "bad, message",
    [("{gpu: -1}", "gpu"), ("{memory: lots}", "not a Kubernetes quantity"), ("{gpus: 1}", "gpus")],
)
def test_bad_resources_are_refused_when_the_sweep_is_read(bad, message):
    with pytest.raises(SweepError, match=message) as err:
        parse_sweep(SWEEP.replace("{gpu: 1, memory: 16Gi}", bad), "gpu.yaml")
    assert "gpu.yaml: methods.umap.resources" in str(err.value)


def test_cell_runs_carry_their_methods_resources(lab):
    sweep = parse_sweep(SWEEP, "gpu.yaml")
    work = sweep_work(register_and_plan(sweep))
    umap, pca = (next(m.key for m in sweep.methods if m.method == name) for name in ("umap", "pca"))
    tags = {(r.job, str(r.partition)): r.tags for r in work.runs}
    # New cells: each computes its dataset partition in its own run, with the method's resources.
    assert {job for job, _ in tags} == {CELLS_WITH_DATA, METRIC_TABLE, REPORT}
    config = json.loads(tags[CELLS_WITH_DATA, keys.cell_key(sweep.data[0].key, umap)][K8S_CONFIG_TAG])
    assert config["container_config"]["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert tags[CELLS_WITH_DATA, keys.cell_key(sweep.data[0].key, umap)][GPU_TAG] == "true"
    assert tags[CELLS_WITH_DATA, keys.cell_key(sweep.data[0].key, pca)] == {}


def _executor(value: str) -> subprocess.CompletedProcess:
    code = (
        "from lab_assets.defs.definitions import defs; from lab_assets.defs.jobs import CELLS, job_name; "
        "print(defs.resolve_job_def(job_name(CELLS)).executor_def.name)"
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "LAB_EXECUTOR": value},
        timeout=120,
    )


def test_executor_comes_from_the_environment():
    assert _executor("k8s").stdout.strip() == "k8s"
    assert _executor("in_process").stdout.strip() == "in_process"
    bad = _executor("slurm")
    assert bad.returncode != 0 and "LAB_EXECUTOR='slurm'" in bad.stderr
