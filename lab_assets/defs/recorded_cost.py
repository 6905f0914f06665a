"""What recomputing cells costs, from what computing them last took: the `wall_seconds` each
asset's latest materialization recorded (`defs/metadata.py`), and which cells never ran, for
`lab impact`."""

from __future__ import annotations

from collections.abc import Collection

import dagster as dg

from lab_assets.defs.integrity import CELL_ASSETS, DATA_ASSETS
from lab_assets.dr.impact import DATASET, METRICS
from lab_assets.runtime.latest_events import latest_ids, records

# The assets a cell's run materializes, as `dr/impact.py` names them: its dataset is two steps.
PARTS = {DATASET: DATA_ASSETS, **{asset: (asset,) for asset in CELL_ASSETS}}


def recorded_seconds(
    instance: dg.DagsterInstance, cells: list[str], parts: Collection[str] = tuple(PARTS)
) -> dict[str, dict[str, float]]:
    """{cell: {asset of `parts` (of PARTS): wall seconds of its latest materialization}} for the
    cells that have one; bounded queries (`latest_events`), not one per cell."""
    out: dict[str, dict[str, float]] = {}
    for name in parts:
        for asset in PARTS[name]:
            ids = latest_ids(instance, asset, partitions=cells)
            for record in records(instance, asset, ids.values()).values():
                m = record.asset_materialization
                seconds = m.metadata.get("wall_seconds")
                if m.partition is not None and seconds is not None:
                    cell = out.setdefault(m.partition, {})
                    cell[name] = cell.get(name, 0.0) + float(seconds.value)
    return out


def never_run(instance: dg.DagsterInstance, cells: list[str]) -> set[str]:
    """The cells without a metrics row materialized in this instance (one index query)."""
    return set(cells) - latest_ids(instance, METRICS, partitions=cells).keys()
