"""The results cache (core/results_cache.py) as an asset uses it: where a value was first computed
(origin), what the materialization says about it, and the cached artifact put in place.

The run, its materialization and Dagster's provenance (code version, input data versions) are
those of the run that records the hit, as for any materialization; the cached file keeps in its
footer the provenance of the computation that made it, and the metadata `results_cache` names it
(host, run id, git SHA, time) and the entry it came from. `computed: false` on a hit."""

from __future__ import annotations

import datetime as dt
from typing import Any

import dagster as dg
import pandas as pd

from lab_assets.core import results_cache, storage
from lab_assets.core.results_cache import Hit


def origin(context: dg.AssetExecutionContext, prov: dict[str, Any]) -> dict[str, Any]:
    return {
        "host": prov["host"],
        "run_id": context.run.run_id,
        "git_sha": prov["git_sha"],
        "computed_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }


def metadata(hit: Hit | None) -> dict[str, Any]:
    """{"results_cache": ...}: on a hit, where and when the value was first computed."""
    if hit is None:
        return {"results_cache": dg.MetadataValue.json({"computed": True})}
    return {"results_cache": dg.MetadataValue.json({"computed": False, "entry": hit.where, "origin": hit.origin})}


def restore(hit: Hit, name: str, path: str) -> tuple[str, pd.DataFrame, dict[str, Any]]:
    """Write the hit's file `name` (its hash checked by `lookup`) to the asset's path; its table
    and the provenance of the computation that made it, from the bytes in hand."""
    data = hit.files[name]
    return storage.write_bytes(path, data), *storage.parquet_with_provenance(data, path)


def write_and_keep(
    path: str, data: bytes, identity: dict[str, Any] | None, name: str, where_from: dict[str, Any]
) -> str:
    """Write a computed artifact, and keep it in the results cache under `identity` (None: not cached)."""
    storage.write_bytes(path, data)
    if identity is not None:
        results_cache.store(identity, {name: data}, where_from)
    return path
