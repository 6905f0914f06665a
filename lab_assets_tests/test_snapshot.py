"""A snapshot of the Dagster definitions' shape: asset keys, dependencies, partitions, checks,
jobs and sensors. An accidental change to the graph fails here with a readable diff; an
intended one is accepted with `LAB_UPDATE_SNAPSHOTS=1 python3 run.py test -k snapshot`."""

import difflib
import json
import os
from pathlib import Path

import dagster as dg
import pytest

from lab_assets.defs.definitions import defs

SNAPSHOT = Path(__file__).parent / "snapshots" / "definitions.json"


def _partitions(pd) -> str | None:
    if pd is None:
        return None
    if isinstance(pd, dg.MultiPartitionsDefinition):
        return " x ".join(f"{d.name}:{_partitions(d.partitions_def)}" for d in pd.partitions_defs)
    if isinstance(pd, dg.DynamicPartitionsDefinition):
        return f"dynamic({pd.name})"
    return type(pd).__name__


def shape() -> dict:
    graph = defs.resolve_asset_graph()
    assets = {}
    for key in sorted(graph.get_all_asset_keys(), key=lambda k: k.to_user_string()):
        node = graph.get(key)
        assets[key.to_user_string()] = {
            "group": node.group_name,
            "partitions": _partitions(node.partitions_def),
            "deps": sorted(p.to_user_string() for p in node.parent_keys),
            "observable_source": node.is_observable,
            "has_code_version": node.code_version is not None,
            "checks": sorted(c.name for c in graph.get_check_keys_for_assets({key})),
        }
    checks = sorted(
        f"{spec.asset_key.to_user_string()}:{spec.name}{' (blocking)' if spec.blocking else ''}"
        for a in defs.assets
        if isinstance(a, dg.AssetsDefinition)
        for spec in a.check_specs
    )
    jobs = {j.name: sorted(k.to_user_string() for k in j.selection.resolve(graph)) for j in defs.jobs}
    sensors = {
        s.name: {"minimum_interval_seconds": s.minimum_interval_seconds, "default_status": s.default_status.value}
        for s in defs.sensors
    }
    return {
        "assets": assets,
        "checks": checks,
        "jobs": jobs,
        "sensors": sensors,
        "schedules": sorted(s.name for s in defs.schedules or []),
    }


def test_definitions_match_the_snapshot():
    current = json.dumps(shape(), indent=2, sort_keys=True) + "\n"
    if os.environ.get("LAB_UPDATE_SNAPSHOTS") == "1":
        # Written, not compared with itself: an updating run proves nothing, so it never passes.
        SNAPSHOT.parent.mkdir(exist_ok=True)
        SNAPSHOT.write_text(current)
        pytest.skip(f"snapshot written to {SNAPSHOT}: review its diff and commit it")
    expected = SNAPSHOT.read_text()
    diff = "".join(
        difflib.unified_diff(expected.splitlines(True), current.splitlines(True), "snapshot", "definitions now")
    )
    assert not diff, f"the asset graph changed (accept with LAB_UPDATE_SNAPSHOTS=1):\n{diff}"
