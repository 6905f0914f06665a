"""The UI's path: a real `lab ui` (dagster dev: webserver + daemon) on a free port, and the
sweep launched the way the UI's "Materialize" dialog launches it: one `launchPartitionBackfill`
over the sweep's partitions of every asset it needs. The daemon orders the runs (each cell's
dataset before the cell, the table and report last) and the queue caps them at `max_concurrent_runs`."""

from __future__ import annotations

import json
import os
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

from lab_assets.core import keys
from lab_assets_tests import conftest

LAUNCH = """mutation($params: LaunchBackfillParams!) { launchPartitionBackfill(backfillParams: $params) {
  __typename ... on LaunchBackfillSuccess { backfillId } ... on Error { message } } }"""
STATUS = """query($id: String!) { partitionBackfillOrError(backfillId: $id) {
  ... on PartitionBackfill { status } ... on Error { message } } }"""
# What the UI's partitions view of a cell-partitioned asset asks for.
PARTITION_VIEW = """query($path: [String!]!) { assetNodeOrError(assetKey: {path: $path}) { ... on AssetNode {
  partitionKeysByDimension { name partitionKeys }
  assetPartitionStatuses { ... on DefaultPartitionStatuses { materializedPartitions failedPartitions } } } } }"""
RUNNING = {"REQUESTED", "CANCELING", "FAILING"}
SUCCESS = {"COMPLETED", "COMPLETED_SUCCESS"}


def graphql(port: int, query: str, variables: dict | None = None) -> dict:
    body = json.dumps({"query": query, "variables": variables or {}}).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/graphql", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as resp:
        out = json.loads(resp.read())
    if out.get("errors"):
        raise RuntimeError(out["errors"][0].get("message"))
    return out["data"]


@contextmanager
def lab_ui(project: Path, env: dict):
    """The tests' `lab ui` (up and answering, whole process group stopped after), started with
    this project's environment: it passes on `os.environ`."""
    saved = os.environ.copy()
    os.environ.clear()
    os.environ.update(env)
    try:
        with conftest.lab_ui(project) as port:
            yield port
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _ranges(keys: list[str]) -> dict:
    return {"ranges": [{"start": k, "end": k} for k in keys]}


def backfill(port: int, sweep, timeout: float = 3600) -> float:
    """Seconds from launching one backfill of the whole sweep to its terminal status."""
    cells = [keys.cell_key(d, m) for d, m in sweep.cells]
    by_asset = [
        {"assetKey": {"path": ["raw_dataset"]}, "partitions": _ranges(cells)},
        {"assetKey": {"path": ["dataset"]}, "partitions": _ranges(cells)},
        {"assetKey": {"path": ["embedding"]}, "partitions": _ranges(cells)},
        {"assetKey": {"path": ["metrics"]}, "partitions": _ranges(cells)},
        {"assetKey": {"path": ["metric_table"]}},
        {"assetKey": {"path": ["report"]}, "partitions": _ranges([sweep.name])},
    ]
    start = time.perf_counter()
    launched = graphql(port, LAUNCH, {"params": {"partitionsByAssets": by_asset}})["launchPartitionBackfill"]
    if launched["__typename"] != "LaunchBackfillSuccess":
        raise RuntimeError(f"launchPartitionBackfill: {launched}")
    while True:
        status = graphql(port, STATUS, {"id": launched["backfillId"]})["partitionBackfillOrError"]["status"]
        if status not in RUNNING:
            break
        if time.perf_counter() - start > timeout:
            raise TimeoutError(f"backfill still {status} after {timeout:.0f} s")
        time.sleep(1.0)
    seconds = time.perf_counter() - start
    if status not in SUCCESS:
        raise RuntimeError(f"backfill ended {status}")
    return seconds


def partition_view_seconds(port: int, asset: str = "embedding") -> tuple[float, int]:
    """Time of the partitions view's query, and how many partitions it reports materialized."""
    start = time.perf_counter()
    node = graphql(port, PARTITION_VIEW, {"path": [asset]})["assetNodeOrError"]
    seconds = time.perf_counter() - start
    return seconds, len(node["assetPartitionStatuses"]["materializedPartitions"])
