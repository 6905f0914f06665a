"""Provenance (lab_assets/core/lineage.py) as Dagster materialization metadata."""

from __future__ import annotations

from typing import Any

import dagster as dg

from lab_assets.core.integrity import Fingerprint
from lab_assets.core.lineage import Timing
from lab_assets.defs import integrity


def materialization_metadata(
    prov: dict[str, Any],
    timing: Timing,
    rows: int,
    path: str,
    files: dict[str, Fingerprint] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """Dagster metadata for a materialization: provenance, timing, size, where the file is and its
    fingerprint (`files`: those of a folder's files, when `path` is a folder)."""
    return {
        "config": dg.MetadataValue.json(prov["config"]),
        "seed": prov["seed"] if prov["seed"] is not None else "n/a",
        "git_sha": prov["git_sha"],
        "git_dirty": prov["git_dirty"],
        "code_digest": prov.get("code_digest", ""),  # a row from the results cache may predate it
        "code_version": prov["code_version"],
        "packages": dg.MetadataValue.json(prov["packages"]),
        "device": prov["device"],
        "host": prov["host"],
        "wall_seconds": round(timing.wall_seconds, 4),
        "compute_seconds": round(timing.compute_seconds, 4),
        "dagster/row_count": rows,
        "path": dg.MetadataValue.path(path),
        **(integrity.file_metadata(path) if files is None else integrity.metadata(files)),
        **extra,
    }
