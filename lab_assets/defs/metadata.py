"""Provenance (lab_assets/core/lineage.py) as Dagster materialization metadata."""

from __future__ import annotations

from typing import Any

import dagster as dg

from lab_assets.core.lineage import Timing


def materialization_metadata(prov: dict[str, Any], timing: Timing, rows: int, path: str, **extra: Any) -> dict[str, Any]:
    """Dagster metadata for a materialization: provenance, timing, size and where the file is."""
    return {
        "config": dg.MetadataValue.json(prov["config"]),
        "seed": prov["seed"] if prov["seed"] is not None else "n/a",
        "git_sha": prov["git_sha"],
        "git_dirty": prov["git_dirty"],
        "code_version": prov["code_version"],
        "packages": dg.MetadataValue.json(prov["packages"]),
        "device": prov["device"],
        "host": prov["host"],
        "wall_seconds": round(timing.wall_seconds, 4),
        "compute_seconds": round(timing.compute_seconds, 4),
        "dagster/row_count": rows,
        "path": dg.MetadataValue.path(path),
        **extra,
    }
