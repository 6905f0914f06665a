"""`lab ui` for real: dagster dev on 127.0.0.1 serves the sweep's partitions, and a partition
launched the way the UI launches it (a GraphQL partition backfill) is materialized."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager

import dagster as dg
from lab_assets.execute import run_sweep
from lab_assets.instance import get_instance
from lab_assets.k8s import GPU_TAG
from lab_assets.sweep import load_sweep

PARTITIONS = """query { assetNodeOrError(assetKey: {path: ["embedding"]}) {
  ... on AssetNode { partitionKeysByDimension { name partitionKeys } } } }"""
BACKFILL = """mutation($params: LaunchBackfillParams!) { launchPartitionBackfill(backfillParams: $params) {
  __typename ... on LaunchBackfillSuccess { backfillId } ... on PythonError { message } } }"""
STATUS = """query($id: String!) { partitionBackfillOrError(backfillId: $id) {
  ... on PartitionBackfill { status } } }"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def graphql(port: int, query: str, variables: dict | None = None) -> dict:
    body = json.dumps({"query": query, "variables": variables or {}}).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/graphql", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        out = json.loads(resp.read())
    assert "errors" not in out, out
    return out["data"]


def wait_for(predicate, timeout: float, what: str):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")


@contextmanager
def lab_ui(lab):
    """`lab ui` on a free port, up and answering; every process it started is stopped after."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "lab_assets.cli", "ui", "--port", str(port)],
        cwd=lab, env=os.environ.copy(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    try:
        def up():
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/server_info", timeout=2) as r:
                    return r.status == 200
            except OSError:
                return False

        wait_for(up, 120, "the webserver")
        yield port
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_ui_serves_partitions_and_materializes_one(lab):
    sweep = load_sweep(lab / "sweeps" / "tiny.yaml")
    run_sweep(sweep, workers=1)
    with lab_ui(lab) as port:
        # Bound to loopback only.
        listening = subprocess.run(["ss", "-ltn"], capture_output=True, text=True).stdout
        assert f"127.0.0.1:{port}" in listening and f"0.0.0.0:{port}" not in listening

        dims = graphql(port, PARTITIONS)["assetNodeOrError"]["partitionKeysByDimension"]
        keys = {d["name"]: sorted(d["partitionKeys"]) for d in dims}
        assert keys == {"data": sorted(d.key for d in sweep.data), "method": sorted(m.key for m in sweep.methods)}

        cell = f"{sweep.data[0].key}|{sweep.methods[0].key}"
        params = {"partitionNames": [cell], "assetSelection": [{"path": ["embedding"]}, {"path": ["metrics"]}]}
        launched = graphql(port, BACKFILL, {"params": params})["launchPartitionBackfill"]
        assert launched["__typename"] == "LaunchBackfillSuccess", launched
        status = wait_for(
            lambda: (s := graphql(port, STATUS, {"id": launched["backfillId"]})["partitionBackfillOrError"]["status"])
            in ("COMPLETED", "COMPLETED_SUCCESS", "COMPLETED_FAILED", "FAILED") and s,
            240,
            "the backfill",
        )
        assert status in ("COMPLETED", "COMPLETED_SUCCESS"), status
        records = get_instance().fetch_materializations(dg.AssetKey("metrics"), limit=100).records
        assert sum(r.asset_materialization.partition == cell for r in records) == 2  # sweep run + UI


def test_sweep_submitted_through_the_webserver_carries_resource_tags(lab):
    path = lab / "sweeps" / "tiny.yaml"
    path.write_text(path.read_text().replace("pca: {}", "pca: {resources: {gpu: 1, memory: 2Gi}}"))
    sweep = load_sweep(path)
    with lab_ui(lab) as port:
        result = run_sweep(sweep, submit=f"http://127.0.0.1:{port}")
    assert not result.failed, [o.error for o in result.failed]
    assert result.count("datasets") == 2 and result.count("cells") == 4 and result.count("report") == 1
    inst = get_instance()
    for outcome in result.outcomes:
        run = inst.get_run_by_id(outcome.run_id)
        is_gpu_cell = outcome.job == "cells" and "|pca-" in outcome.partition
        assert (run.tags.get(GPU_TAG) == "true") == is_gpu_cell, outcome
        if outcome.job == "cells":
            assert run.tags["dagster/partition/data"] + "|" + run.tags["dagster/partition/method"] == outcome.partition
    records = inst.fetch_materializations(dg.AssetKey("metrics"), limit=100).records
    assert {r.asset_materialization.partition for r in records} == {f"{d}|{m}" for d, m in sweep.cells}
