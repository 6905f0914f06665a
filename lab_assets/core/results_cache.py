"""Portable results: computed artifacts kept by the identity of what produced them.

An asset about to compute names its inputs' identity (its name, code version and the versions of
what it reads: `defs/assets/experiments.py`, `defs/assets/metrics.py`) and looks it up here first.
An entry is a folder `<cache>/<digest of the identity>/`: the artifact files, then `entry.json`
(the identity, each file's size and blake2b hash, and the origin: host, run id, git SHA, time),
written last, so a writer killed half-way leaves no entry. A hit is trusted only when the entry's
identity is the one asked for and every file's size and hash are what the entry recorded; anything
else (missing, damaged, another identity) is a miss, and the computation that follows writes the
entry again. The first computation stays the origin: an intact entry is never replaced.

Where: `settings.results_cache()`, by default `results_cache/` under the storage root; a shared
store for a team (`LAB_RESULTS_CACHE=s3://team/lab-cache`), or off. `push` copies a lab home's
entries to another store (`lab push --to URL`). Storing or reading the cache never fails a cell:
an unreachable store is a miss.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

import fsspec

from lab_assets.core import settings, storage
from lab_assets.core.integrity import Fingerprint, of_bytes
from lab_assets.core.registry import digest

ENTRY = "entry.json"
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Hit:
    files: dict[str, bytes]
    origin: dict[str, Any]  # host, run_id, git_sha, computed_at
    where: str  # the entry's folder


@dataclass(frozen=True)
class ResultsCache:
    fs: fsspec.AbstractFileSystem
    root: str

    def folder(self, identity: dict[str, Any]) -> str:
        return f"{self.root}/{key(identity)}"


def key(identity: dict[str, Any]) -> str:
    return digest(identity, length=32)


def open_cache(url: str | None = None, options: dict | None = None) -> ResultsCache | None:
    """The cache at `url` (default: the configured one; None when off)."""
    if url is None:
        configured = settings.results_cache()
        if configured is None:
            return None
        if configured == settings.DEFAULT:
            return ResultsCache(storage.filesystem(), storage.url("results_cache"))
        url, options = configured, settings.results_cache_options()
    fs, path = fsspec.core.url_to_fs(url, **(options or {}))
    return ResultsCache(fs, path.rstrip("/"))


def lookup(identity: dict[str, Any], cache: ResultsCache | None = None) -> Hit | None:
    """The intact entry of `identity`, or None (none, damaged, or the store cannot be read)."""
    cache = cache or open_cache()
    if cache is None:
        return None
    folder = cache.folder(identity)
    try:
        entry = json.loads(cache.fs.cat_file(f"{folder}/{ENTRY}"))
        if entry.get("identity") != json.loads(json.dumps(identity, default=str)):
            return None
        files = {}
        for name, f in entry["files"].items():
            data = cache.fs.cat_file(f"{folder}/{name}")
            if of_bytes(data) != Fingerprint(f["bytes"], f["blake2b"]):
                log.warning("results cache: %s/%s is damaged; recomputing", folder, name)
                return None
            files[name] = data
        return Hit(files, entry["origin"], folder)
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as e:  # unreadable or damaged: never trusted
        log.warning("results cache: entry %s not used (%s: %s)", folder, type(e).__name__, e)
        return None


def store(
    identity: dict[str, Any], files: dict[str, bytes], origin: dict[str, Any], cache: ResultsCache | None = None
) -> bool:
    """Keep `files` as the entry of `identity` unless an intact one exists (the first computation
    stays the origin). False when the store could not be written (the cell is fine)."""
    cache = cache or open_cache()
    if cache is None or lookup(identity, cache) is not None:
        return False
    folder = cache.folder(identity)
    entry = {
        "identity": identity,
        "origin": origin,
        "files": {n: {"bytes": len(d), "blake2b": of_bytes(d).digest} for n, d in files.items()},
    }
    try:
        _write_entry(cache.fs, folder, files, entry)
    except OSError as e:
        log.warning("results cache: %s not written (%s)", folder, e)
        return False
    return True


def _write_entry(fs, folder: str, files: dict[str, bytes], entry: dict[str, Any]) -> None:
    for name, data in files.items():
        storage.put(fs, f"{folder}/{name}", data)
    storage.put(fs, f"{folder}/{ENTRY}", storage.json_bytes(entry))  # last: the entry exists once complete


def entries(cache: ResultsCache) -> list[str]:
    """The keys of the entries in `cache` (folders holding an `entry.json`)."""
    if not cache.fs.exists(cache.root):
        return []
    cache.fs.invalidate_cache(cache.root)
    found = cache.fs.glob(f"{cache.root}/*/{ENTRY}")
    return sorted(p.rstrip("/").rsplit("/", 2)[-2] for p in found)


def push(source: ResultsCache, target: ResultsCache) -> dict[str, int]:
    """Copy every intact entry of `source` that `target` lacks (or holds damaged): {copied,
    present, damaged} (a damaged source entry is not copied)."""
    counts = {"copied": 0, "present": 0, "damaged": 0}
    for name in entries(source):
        entry = json.loads(source.fs.cat_file(f"{source.root}/{name}/{ENTRY}"))
        identity = entry.get("identity", {})
        if key(identity) != name or (hit := lookup(identity, source)) is None:
            counts["damaged"] += 1
        elif lookup(identity, target) is not None:
            counts["present"] += 1
        else:
            _write_entry(target.fs, target.folder(identity), hit.files, entry)
            counts["copied"] += 1
    return counts
