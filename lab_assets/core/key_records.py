"""What each partition key means: one small JSON record per key under `keys/<kind>/<key>.json`
of the storage root.

Dagster stores dynamic partition keys, not what they stand for. Whoever registers a key (a sweep:
`dr/keystore.py`; a study, its corpus and trials: `training/study.py`) writes its record here
first, and assets look their configuration up by key, so a partition materialized from the UI
computes exactly what was declared.
"""

from __future__ import annotations

import json
from pathlib import PurePosixPath
from typing import Any

from lab_assets.core import storage


class UnknownKeyError(KeyError):
    """A key with no record: it was never registered (or the storage root changed)."""

    def __str__(self) -> str:
        return str(self.args[0])


def path(kind: str, key: str) -> str:
    return storage.url("keys", kind, f"{key}.json")


def write(kind: str, key: str, record: dict[str, Any]) -> None:
    """An unchanged record is left as it is: each write is durable (fsync, ~2 ms), and every
    `lab sweep run` registers its sweep's keys again."""
    where, data = path(kind, key), storage.json_bytes(record)
    try:
        if storage.read_bytes(where) == data:
            return
    except storage.MissingAssetError:
        pass
    storage.write_bytes(where, data)


def read(kind: str, key: str, register_with: str) -> dict[str, Any]:
    """`register_with`: the command that writes such records, for the error message."""
    return json.loads(read_bytes(kind, key, register_with))


def read_bytes(kind: str, key: str, register_with: str) -> bytes:
    """The record as stored (what a per-content cache keys on)."""
    try:
        return storage.read_bytes(path(kind, key))
    except storage.MissingAssetError:
        raise UnknownKeyError(
            f"{kind} key {key!r} has no record at {path(kind, key)}: register it with {register_with}"
        ) from None


def keys(kind: str) -> list[str]:
    return sorted(PurePosixPath(p).stem for p in storage.glob(path(kind, "*")))
