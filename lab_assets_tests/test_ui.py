"""`lab ui` for real: the webserver on 127.0.0.1 (and the daemon) serves the sweep's partitions, and a partition
launched the way the UI launches it (a GraphQL partition backfill) is materialized."""

import json
import shutil
import subprocess

import dagster as dg
import pytest

from lab_assets.core import keys
from lab_assets.core.k8s_resources import GPU_TAG
from lab_assets.dr.sweep import load_sweep
from lab_assets.runner.sweeps import materialize_sweep, register_and_plan
from lab_assets.runtime.instance import get_instance
from lab_assets_tests.conftest import REPO, graphql, lab_cli, lab_ui, wait_for

PARTITIONS = """query($path: [String!]!) { assetNodeOrError(assetKey: {path: $path}) {
  ... on AssetNode { partitionKeysByDimension { name partitionKeys } } } }"""
BACKFILL = """mutation($params: LaunchBackfillParams!) { launchPartitionBackfill(backfillParams: $params) {
  __typename ... on LaunchBackfillSuccess { backfillId } ... on PythonError { message } } }"""
STATUS = """query($id: String!) { partitionBackfillOrError(backfillId: $id) {
  ... on PartitionBackfill { status } } }"""


@pytest.mark.slow
def test_ui_serves_partitions_and_materializes_one(lab):
    sweep = load_sweep(lab / "sweeps" / "tiny.yaml")
    materialize_sweep(sweep, workers=1)
    # The bundled sweeps registered beside it: the UI must offer their cells and no cross product.
    declared = {keys.cell_key(d, m) for d, m in sweep.cells}
    for name in ("demo", "dr_benchmark"):
        shutil.copy(REPO / "sweeps" / f"{name}.yaml", lab / "sweeps")
        planned = json.loads(lab_cli("sweep", "plan", f"sweeps/{name}.yaml", "--json", cwd=lab).stdout)
        declared |= {c["partition"] for c in planned["cells"]}
        register_and_plan(load_sweep(lab / "sweeps" / f"{name}.yaml"))
    assert len(declared) == 4 + 36 + 60  # a data x method grid of these keys would be 20 x 8 = 160
    with lab_ui(lab) as port:
        # Bound to loopback only.
        listening = subprocess.run(["ss", "-ltn"], capture_output=True, text=True).stdout
        assert f"127.0.0.1:{port}" in listening and f"0.0.0.0:{port}" not in listening

        # One `cell` dimension: exactly the declared cells, for every asset of a cell.
        for asset in ("raw_dataset", "dataset", "model", "embedding", "metrics"):
            (dim,) = graphql(port, PARTITIONS, {"path": [asset]})["assetNodeOrError"]["partitionKeysByDimension"]
            assert sorted(dim["partitionKeys"]) == sorted(declared), asset

        cell = keys.cell_key(sweep.data[0].key, sweep.methods[0].key)
        params = {"partitionNames": [cell], "assetSelection": [{"path": ["embedding"]}, {"path": ["metrics"]}]}
        launched = graphql(port, BACKFILL, {"params": params})["launchPartitionBackfill"]
        assert launched["__typename"] == "LaunchBackfillSuccess", launched
        status = wait_for(
            lambda: (
                (s := graphql(port, STATUS, {"id": launched["backfillId"]})["partitionBackfillOrError"]["status"])
                in ("COMPLETED", "COMPLETED_SUCCESS", "COMPLETED_FAILED", "FAILED")
                and s
            ),
            240,
            "the backfill",
        )
        assert status in ("COMPLETED", "COMPLETED_SUCCESS"), status
        records = get_instance().fetch_materializations(dg.AssetKey("metrics"), limit=100).records
        assert sum(r.asset_materialization.partition == cell for r in records) == 2  # sweep run + UI


@pytest.mark.slow
def test_sweep_submitted_through_the_webserver_carries_resource_tags(lab):
    path = lab / "sweeps" / "tiny.yaml"
    path.write_text(path.read_text().replace("pca: {}", "pca: {resources: {gpu: 1, memory: 2Gi}}"))
    sweep = load_sweep(path)
    with lab_ui(lab) as port:
        result = materialize_sweep(sweep, submit=f"http://127.0.0.1:{port}")
    assert not result.failed, [o.why for o in result.failed]
    assert result.count("datasets") == 2 and result.count("cells") == 4 and result.count("report") == 1
    inst = get_instance()
    for outcome in result.of("materialized"):
        run = inst.get_run_by_id(outcome.run_id)
        # A new cell's dataset partition is computed in the cell's own run: the GPU cells' too.
        is_gpu_cell = outcome.job in ("cells", "datasets") and "|pca-" in outcome.partition
        assert (run.tags.get(GPU_TAG) == "true") == is_gpu_cell, outcome
        if outcome.job in ("cells", "datasets"):
            assert run.tags["dagster/partition"] == outcome.partition
    records = inst.fetch_materializations(dg.AssetKey("metrics"), limit=100).records
    assert {r.asset_materialization.partition for r in records} == {keys.cell_key(d, m) for d, m in sweep.cells}
