"""What a cell's W&B run records (`core/tracking.py` logs it, here or in the command's side
process: `core/side_process.py`), from what the metrics step has in hand: the flat config, the
embedding's scatter plot (the UI's thumbnail), and the dataset and the embedding as Artifacts by
reference to their storage URLs (the lineage W&B draws).

Not in an asset module: what W&B is sent is no part of any cell's data, so changing it stales nothing.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from lab_assets.core import side_process, storage, tracking
from lab_assets.dr import tidy
from lab_assets.dr.sweep import DataConfig, MethodConfig, Sweep


def config(cell: str, data: DataConfig, method: MethodConfig, sweeps: list[str], sha: str) -> dict[str, Any]:
    """The run's config, flat: `data`, `data.<param>`, `seed`, `method`, `method.<param>`, `sweep`
    (the first of the cell's sweeps; all of them in `sweeps` and the run's tags), the keys and the commit."""
    return {
        **tidy.flat_params(data, method),
        "sweep": sweeps[0] if sweeps else "",
        "sweeps": sweeps,
        "cell": cell,
        "data_key": data.key,
        "method_key": method.key,
        "git_sha": sha,
    }


def track(
    cell: str,
    data: DataConfig,
    method: MethodConfig,
    cell_sweeps: list[Sweep],
    values: dict[str, float],
    embedding: pd.DataFrame,
    sha: str,
) -> dict[str, Any]:
    """Log the cell's W&B run; metadata naming it, or why there is none."""
    if tracking.mode() == "disabled":
        return {"wandb_mode": "disabled"}
    from lab_assets.dr.thumbnail import scatter_png  # Pillow: where a cell is tracked

    sweeps = sorted(s.name for s in cell_sweeps)
    try:
        image = scatter_png(tidy.coordinates(embedding).to_numpy(), embedding["label"], optimize=False)
    except Exception:  # noqa: BLE001 - no picture is no reason to lose the run
        image = None
    return side_process.track_cell(
        cell,
        sweeps,
        config(cell, data, method, sweeps, sha),
        values,
        image=image,
        uses=(tracking.Reference("dataset", data.key, storage.asset_path("dataset", data.key)),),
        logs=(tracking.Reference("embedding", cell, storage.asset_path("embedding", cell)),),
    )
