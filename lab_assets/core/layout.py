"""The lab home's layout version: what a release writes, recorded in `layout.json` under the
storage root, so a release that changes keys, layout or code versions knows what it finds.

A lab home written by an earlier release (a lower version, or none recorded on a lab home that
holds sweeps: written before versions were recorded) is upgraded by the first command that
writes: each version's migration, if it has one, moves what it can (keys renamed, history kept),
and each version's `CHANGES` entry says what will recompute and why, printed before anything
runs. Then the current version is recorded.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from lab_assets.core import key_records, storage
from lab_assets.core.input_files import InputError

VERSION = 2
# What each version changed in a lab home written before it, in words a user acts on.
CHANGES = {
    1: "readable keys (`<name>-<changed parameters>-<digest>`): every cell of a lab home written before is new",
    2: "the results cache, plugins and a formatter pass changed the asset modules and entries' code: every "
    "embedding and metrics row is recomputed once, and the datasets whose code changed; `results_cache/` is new",
}
# version -> the function that moves a lab home written before it (none needed yet: version 2 adds
# a folder and changes code versions, which Dagster's staleness already answers per cell).
MIGRATIONS: dict[int, Callable[[], None]] = {}


class NewerLayoutError(InputError):
    """A lab home written by a newer release: this one reads and writes none of it (bad input, exit 2)."""

    what = "lab home"


def path() -> str:
    return storage.url("layout.json")


def recorded() -> int | None:
    """The lab home's layout version: recorded, else 1 when it holds sweeps written before
    versions were recorded, else None (an empty lab home: nothing to upgrade)."""
    try:
        return int(json.loads(storage.read_bytes(path()))["version"])
    except storage.MissingAssetError:
        return 1 if key_records.keys("sweep") else None


def upgrade() -> list[str]:
    """Migrate the lab home to this release's layout and record it; what that changes in this lab
    home, oldest first ([]: nothing)."""
    found = recorded()
    if found is not None and found > VERSION:
        raise NewerLayoutError(
            f"{path()}: layout {found} was written by a newer release than this one (layout {VERSION}); "
            "upgrade lab_assets, or point LAB_HOME at another lab home"
        )
    earlier = range(found + 1, VERSION + 1) if found is not None else range(0)  # None: an empty lab home
    for version in earlier:
        if version in MIGRATIONS:
            MIGRATIONS[version]()
    if found != VERSION:
        storage.write_bytes(path(), storage.json_bytes({"version": VERSION}))
    return [f"layout {v}: {CHANGES[v]}" for v in earlier]
