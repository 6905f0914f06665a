"""`sweep`: one partition per registered sweep, the UI's way to launch one sweep.

Materializing `sweep[<name>]` (the Materialize button on its partition) records the sweep's
declared cells under their readable labels; the `sweep_launches` sensor (defs/sensors.py)
answers it with one backfill of exactly the sweep's missing or stale partitions, planned when
the sensor sees it (it has the whole asset graph; a run of this asset alone does not). A person
launches a sweep's pending cells, and only those, without picking partition keys.
"""

import dagster as dg
import pandas as pd

from lab_assets.core import keys
from lab_assets.defs.partitions import SWEEP
from lab_assets.dr import keystore

GROUP = "sweeps"


@dg.asset(partitions_def=SWEEP, group_name=GROUP)
def sweep(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
    """A sweep's cells, labelled by what varies in it. Materializing it launches the sweep's
    missing and stale cells (one backfill, requested by the `sweep_launches` sensor)."""
    s = keystore.sweep(context.partition_key)
    labels = s.labels
    data = {d.key: d for d in s.data}
    cells = pd.DataFrame(
        # "|" would split the Markdown row: escaped in the cell key.
        [
            {
                "cell": keys.cell_key(d, m).replace("|", "\\|"),
                "data": f"{labels[data[d].config_key]} seed={data[d].seed}",
                "method": labels[m],
            }
            for d, m in s.cells
        ]
    )
    return dg.MaterializeResult(
        metadata={
            "source": s.source,
            "cell_count": len(cells),
            "cells": dg.MetadataValue.md(cells.to_markdown(index=False)),
            "launches": "the sweep's missing and stale cells: "
            "the `sweep_launches` sensor's backfill (Overview > Backfills)",
        }
    )
